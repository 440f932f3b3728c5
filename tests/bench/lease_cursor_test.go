package bench

import "sync/atomic"

// The cursor design of BenchmarkLeaseDesigns: today's columns and
// indexes, but a lease that writes nothing per message. A message no lease has taken yet is stored with visible_at
// '-infinity' (so the lease index holds the fresh messages of a channel in id order), and a per-channel cursor
// row records the last id leased. A lease advances the cursor past the messages it takes and records them as one
// range row (its id bounds, lease id and visibility deadline): two row operations per lease, whatever its size,
// where today's table updates every leased row — a new version with its content and two new index entries each.
// An acknowledgement deletes its messages, as today, checking that the receipt's range is still held, and deletes
// the range once no message of it is left.
//
// It is a measurement, not a design ferry runs: what a real one must also do is what the per-message update does
// today for free — redelivering the messages of a range whose deadline passed (a sweeper turning them back into
// per-message state: visible_at now, a delivery count, the dead-letter limit), changing one message's visibility
// (UpdateMessage), and not skipping a message whose put commits after a later id's (ids are drawn before commit,
// so a cursor may pass an id whose row is not visible yet: the sweeper, or a transaction-id watermark, must find
// those). Ordered groups, delayed messages and several channels at once would keep today's per-message path.
// Its figure is therefore an upper bound, like the segments design's, but for a change that keeps one row per
// message.
const cursorSchema = `
DROP TABLE IF EXISTS bench_cur_messages, bench_cur_cursors, bench_cur_leases;
CREATE TABLE bench_cur_messages (LIKE messages INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)
	WITH (fillfactor = 80, ` + designAutovacuum + `);
ALTER TABLE bench_cur_messages ADD PRIMARY KEY (queue_no, id, group_no);
CREATE INDEX ON bench_cur_messages (queue_no, group_no, dlq, channel_id, visible_at, id);
CREATE INDEX ON bench_cur_messages (queue_no, group_no, message_group, id) WHERE message_group IS NOT NULL AND NOT dlq;
CREATE INDEX ON bench_cur_messages (queue_no, group_no, lease_owner) WHERE lease_owner IS NOT NULL;
CREATE TABLE bench_cur_cursors (
	queue_no bigint NOT NULL, group_no integer NOT NULL, channel_id text NOT NULL, last_id bigint NOT NULL,
	PRIMARY KEY (queue_no, group_no, channel_id)
) WITH (fillfactor = 50, ` + designAutovacuum + `);
CREATE TABLE bench_cur_leases (
	queue_no bigint NOT NULL, lease_id bigint NOT NULL, group_no integer NOT NULL, channel_id text NOT NULL,
	from_id bigint NOT NULL, to_id bigint NOT NULL, visible_at timestamptz NOT NULL, lease_owner text,
	PRIMARY KEY (queue_no, lease_id)
) WITH (` + designAutovacuum + `);
CREATE INDEX ON bench_cur_leases (queue_no, visible_at);`

// cursorFill stores $2 fresh messages of queue $1 (content as the other designs' fill, in %s) and its cursor.
const cursorFill = `
INSERT INTO bench_cur_messages (queue_no, group_no, id, channel_id, visible_at, expire_at, size_bytes, content)
SELECT $1, 0, g, '', '-infinity', now() + interval '7 days', 1024, %s FROM generate_series(1, $2::int) g;
INSERT INTO bench_cur_cursors (queue_no, group_no, channel_id, last_id) VALUES ($1, 0, '', 0)`

// cursorLease is messages.lease_one's parameters and columns for the cursor design: the cursor row, locked,
// bounds an id-ordered range scan of the channel's fresh messages; the cursor moves past them and their range
// is recorded. The cursor's lock serializes a channel's leases (ferry runs one lease batch of a queue at a time
// per node already).
const cursorLease = `
WITH cur AS (
	SELECT last_id FROM bench_cur_cursors
	WHERE queue_no = $1 AND group_no = $2 AND channel_id = ($4::text[])[1]
	FOR UPDATE
), picked AS (
	SELECT m.group_no, m.id, m.channel_id, m.expire_at, m.delivery_count, m.content, m.attributes, m.metadata,
		m.time_created
	FROM bench_cur_messages m
	WHERE m.queue_no = $1 AND m.group_no = $2 AND m.dlq = $3 AND m.channel_id = ($4::text[])[1]
		AND m.visible_at = '-infinity' AND m.id > (SELECT last_id FROM cur) AND m.expire_at > now() AND $6 >= 0
	ORDER BY m.id
	LIMIT $5
), advanced AS (
	UPDATE bench_cur_cursors c SET last_id = (SELECT max(id) FROM picked)
	WHERE c.queue_no = $1 AND c.group_no = $2 AND c.channel_id = ($4::text[])[1] AND EXISTS (SELECT FROM picked)
), ranged AS (
	INSERT INTO bench_cur_leases (queue_no, lease_id, group_no, channel_id, from_id, to_id, visible_at, lease_owner)
	SELECT $1, $8, $2, ($4::text[])[1], min(id), max(id), now() + make_interval(secs => $7), $9::text
	FROM picked HAVING count(*) > 0
)
SELECT group_no, id, channel_id, now() + make_interval(secs => $7), expire_at, delivery_count + 1, content,
	attributes, metadata, time_created
FROM picked`

// cursorAck is messages.delete's parameters and columns for the cursor design: each receipt's message is deleted
// while its range is held (recorded and not past its deadline), and a range is deleted with its last message.
// (Two acknowledgements of one range in concurrent transactions would each see the other's messages and leave
// the range behind: the sweeper a real design needs would delete it.)
const cursorAck = `
WITH del AS (
	DELETE FROM bench_cur_messages m
	USING unnest($1::int[], $2::bigint[], $3::bigint[], $4::bool[]) AS r(group_no, id, lease_id, dlq), bench_cur_leases l
	WHERE m.queue_no = $5 AND m.id = r.id AND m.group_no = r.group_no AND m.dlq = r.dlq AND m.visible_at = '-infinity'
		AND l.queue_no = $5 AND l.lease_id = r.lease_id AND l.group_no = m.group_no AND m.id BETWEEN l.from_id AND l.to_id
		AND l.visible_at > now()
	RETURNING m.group_no, m.id, l.lease_id
), emptied AS (
	DELETE FROM bench_cur_leases l
	WHERE l.queue_no = $5 AND l.lease_id IN (SELECT lease_id FROM del)
		AND NOT EXISTS (SELECT FROM bench_cur_messages m
			WHERE m.queue_no = $5 AND m.group_no = l.group_no AND NOT m.dlq AND m.channel_id = l.channel_id
				AND m.visible_at = '-infinity' AND m.id BETWEEN l.from_id AND l.to_id
				AND m.id <> ALL (ARRAY (SELECT id FROM del)))
)
SELECT group_no, id, false, lease_id FROM del`

// cursorLeaseIDs numbers the cursor design's leases: its ranges are keyed by lease id, where the other designs
// reuse a worker's.
var cursorLeaseIDs atomic.Int64
