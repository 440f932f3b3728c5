package bench

import (
	"context"
	"fmt"
	"strconv"
)

// The segments design of BenchmarkLeaseDesigns: a put's batch of messages (segmentSize, as a PutMessages call of
// 20) is one row, whose contents are one array kept out of line (STORAGE EXTERNAL: a lease that does not change them
// does not copy them), and whose delivery state is the segment's: one visible_at, lease_id and delivery count, and
// a bitmask of the messages acknowledged. A lease takes whole segments (up to the limit's worth) and returns their
// messages not yet acknowledged; an acknowledgement sets its messages' bits and deletes the segment when the last
// bit is set. One row operation serves a segment's messages where today's table takes one per message.
//
// It is a measurement, not a design ferry runs: what it leaves out is what a real one would have to solve —
// leasing part of a segment (a limit smaller than a segment, or consumers that each want a few), a delivery count
// and visibility per message (redelivering or dead-lettering one message of a segment), ordered groups and
// channels within a segment, and fanout. Its figure is therefore an upper bound of what segments would gain.
const segmentSize = 20

// segmentSizeSQL is segmentSize in the statements' text.
var segmentSizeSQL = strconv.Itoa(segmentSize)

const segmentSchema = `
DROP TABLE IF EXISTS bench_seg_messages;
CREATE TABLE bench_seg_messages (
	queue_no bigint NOT NULL, group_no integer NOT NULL DEFAULT 0, seg_id bigint NOT NULL,
	channel_id text NOT NULL DEFAULT '', visible_at timestamptz NOT NULL, expire_at timestamptz NOT NULL,
	delivery_count integer NOT NULL DEFAULT 0, lease_id bigint NOT NULL DEFAULT 0, dlq boolean NOT NULL DEFAULT false,
	n integer NOT NULL, acked bigint NOT NULL DEFAULT 0, contents text[] NOT NULL,
	time_created timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (queue_no, seg_id, group_no)
) WITH (fillfactor = 80, ` + designAutovacuum + `);
ALTER TABLE bench_seg_messages ALTER COLUMN contents SET STORAGE EXTERNAL;
CREATE INDEX bench_seg_messages_lease ON bench_seg_messages (queue_no, group_no, dlq, channel_id, visible_at, seg_id);`

// segmentFill stores $2 messages of queue $1 as segments of segmentSize, each content 1,024 random hex digits.
var segmentFill = `
INSERT INTO bench_seg_messages (queue_no, group_no, seg_id, channel_id, visible_at, expire_at, n, contents)
SELECT $1, 0, s * ` + segmentSizeSQL + `, '', now(), now() + interval '7 days', ` + segmentSizeSQL + `,
	(SELECT array_agg((SELECT string_agg(md5(random()::text || k || s || x), '') FROM generate_series(1, 32) x))
	 FROM generate_series(1, ` + segmentSizeSQL + `) k)
FROM generate_series(1, $2::int / ` + segmentSizeSQL + `) s`

// segmentLease leases up to $5 messages' worth of whole segments (at least one) and returns their messages not
// yet acknowledged, with messages.lease_one's parameters.
var segmentLease = `
WITH next AS (
	SELECT ctid FROM bench_seg_messages
	WHERE queue_no = $1 AND group_no = $2 AND dlq = $3 AND channel_id = ($4::text[])[1]
		AND visible_at <= now() AND expire_at > now()
	ORDER BY visible_at, seg_id
	LIMIT greatest(1, $5 / ` + segmentSizeSQL + `)
	FOR UPDATE SKIP LOCKED
), leased AS (
	UPDATE bench_seg_messages m SET
		visible_at = now() + make_interval(secs => $7),
		delivery_count = m.delivery_count + 1,
		lease_id = $8
	WHERE m.ctid = ANY (ARRAY (SELECT ctid FROM next)) AND m.queue_no = $1 AND $6 >= 0 AND $9::text IS NULL
	RETURNING m.group_no, m.seg_id, m.acked, m.contents
)
SELECT l.group_no, l.seg_id, l.seg_id + k - 1, l.contents[k]
FROM leased l, generate_subscripts(l.contents, 1) k
WHERE l.acked & (1::bigint << (k - 1)) = 0`

// segmentAck acknowledges messages ($2 their segments, $3 their ids) under lease $4: it sets their bits, and
// deletes the segments whose last bits they set. It returns the number of segments it changed.
const segmentAck = `
WITH r AS (
	SELECT seg, bit_or(1::bigint << (id - seg)::int) AS mask
	FROM unnest($2::bigint[], $3::bigint[]) AS a(seg, id) GROUP BY seg
), done AS (
	DELETE FROM bench_seg_messages m USING r
	WHERE m.queue_no = $1 AND m.group_no = 0 AND m.seg_id = r.seg AND m.lease_id = $4
		AND m.acked | r.mask = (1::bigint << m.n) - 1
	RETURNING m.seg_id
), partly AS (
	UPDATE bench_seg_messages m SET acked = m.acked | r.mask FROM r
	WHERE m.queue_no = $1 AND m.group_no = 0 AND m.seg_id = r.seg AND m.lease_id = $4
		AND m.acked | r.mask <> (1::bigint << m.n) - 1
	RETURNING m.seg_id
)
SELECT (SELECT count(*) FROM done) + (SELECT count(*) FROM partly)`

// leaseAndAckSegments is leaseAndAck for the segments design.
func (d *leaseDesign) leaseAndAckSegments(ctx context.Context, n *node, leaseID int64) (int, error) {
	rows, err := n.pool.Query(ctx, segmentLease, designQueueNo, int32(0), false, []string{""}, int32(48), int32(0), int32(30), leaseID, nil)
	if err != nil {
		return 0, err
	}
	var segs, ids []int64
	distinct := map[int64]bool{}
	for rows.Next() {
		var group int32
		var seg, id int64
		var content string
		if err := rows.Scan(&group, &seg, &id, &content); err != nil {
			rows.Close()
			return 0, err
		}
		if len(content) != 1024 {
			rows.Close()
			return 0, fmt.Errorf("leased a message of %d bytes", len(content))
		}
		segs, ids = append(segs, seg), append(ids, id)
		distinct[seg] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return 0, err
	}
	var changed int
	if err := n.pool.QueryRow(ctx, segmentAck, designQueueNo, segs, ids, leaseID).Scan(&changed); err != nil {
		return 0, err
	}
	if changed != len(distinct) {
		return 0, fmt.Errorf("acknowledged %d of %d segments", changed, len(distinct))
	}
	return len(ids), nil
}
