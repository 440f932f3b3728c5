{{/*
Leasing: a text/template of the lease statement's eight variants (messages_lease.go renders each once, when the
package initialises, into one section named after it). Which messages it picks:
  .Channels  (messages.lease…)             several channels, interleaved round-robin in @channels' order;
  .One       (messages.lease_one…)         a single channel, @channels[1];
  .Owners    (messages.lease_one_owners…)  the same, an owner per slot;
  .Consumer  (messages.lease_as_consumer…) a single-active-consumer queue, in publish order;
  .Cursor    (messages.lease_cursor…)      a single channel, for no owner: its fresh messages by the cursor;
and .DeadLetter (…_dead_letter) moves the messages that reached @max_deliveries to the DLQ.

Fresh messages (visible_at '-infinity', put.sql) at or below their channel's cursor (message_cursors.last_id) are
held by a range (message_ranges): every variant but .Cursor skips them (notHeld), and leases fresh ones above it
the per-message way. Every lease of a group runs under messages.lease_lock (ranges.sql), taken in a statement of
its own before this one, so it sees the cursor that the previous lease left, and no cursor can take a fresh
message that a per-message lease is taking.
*/ -}}
{{- define "notHeld"}}
			AND (m.visible_at > '-infinity' OR m.id > coalesce((SELECT k.last_id FROM message_cursors k
				WHERE k.queue_no = @queue_no AND k.group_no = @group_no AND k.channel_id = m.channel_id), 0))
{{- end}}
-- name: {{.Name}}
-- runs on the partition of @queue_no
-- Lease: the oldest visible rows, locked with SKIP LOCKED and updated in the same statement.
{{- if .Channels}}
-- The oldest visible rows of each requested channel, interleaved round-robin across channels.
WITH candidates AS (
	SELECT m.ctid, m.group_no, m.id, row_number() OVER (PARTITION BY c.ord ORDER BY m.visible_at, m.id) AS rank, c.ord
	FROM unnest(@channels::text[]) WITH ORDINALITY AS c(channel_id, ord)
	CROSS JOIN LATERAL (
		SELECT ctid, group_no, id, visible_at FROM messages m
		WHERE queue_no = @queue_no AND group_no = @group_no AND dlq = @dlq AND channel_id = c.channel_id
			AND visible_at <= now() AND expire_at > now()
			{{- template "notHeld"}}
		ORDER BY visible_at, id
		LIMIT @limit
		FOR UPDATE SKIP LOCKED) m
), next AS (
	SELECT ctid, group_no, id FROM candidates ORDER BY rank, ord LIMIT @limit
)
{{- else if .Consumer}}
-- After consumers.decide in the same transaction: only the active consumer (decided by that statement, so its
-- row was written now) leases, and it leases in publish order across the channels (@channels NULL = every
-- channel).
WITH next AS (
	SELECT ctid, group_no, id FROM messages m
	WHERE queue_no = @queue_no AND group_no = @group_no AND dlq = @dlq AND (@channels::text[] IS NULL OR channel_id = ANY (@channels))
		AND visible_at <= now() AND expire_at > now()
		{{- template "notHeld"}}
		AND EXISTS (SELECT 1 FROM consumers c WHERE c.queue_id = @queue_id AND c.group_no = @group_no AND c.consumer_id = @consumer
			AND c.active_since IS NOT NULL AND c.last_seen = now())
	ORDER BY id
	LIMIT @limit
	FOR UPDATE OF m SKIP LOCKED
)
{{- else if .Cursor}}
-- The cursor lease, from a single channel (messages.lease_position, messages.lease_lock and messages.revive_ranges
-- before it in its transaction). In the order it leases: the messages visible in per-message state (due: a lease
-- that ended, a range that ended and was revived, a delayed or ordered message); the fresh messages after the
-- cursor up to the horizon (picked: not updated, but recorded as one range, ranged, and the cursor moved past
-- them, advanced); the fresh ones above the horizon, the per-message way (beyond), so that none waits for it.
--
-- The horizon: ids are drawn from a sequence before commit, so the cursor must not pass an id whose put has not
-- ended (that message would stay fresh below the cursor, in no range, never leased). A put takes its transaction
-- id before it draws ids (put.sql); this lease read the sequence's position before its transaction took an id
-- (messages.lease_position), and leaves the pair on the cursor row as a sample. A later lease whose snapshot's
-- xmin is above a sample's transaction id knows that every put that drew an id up to the sample's position has
-- ended. The horizon (safe_id) is the highest such position and only moves forward; the row keeps up to 8 samples
-- not yet matured, so that the horizon trails the puts by about one commit. When 8 are waiting, a lease adds none:
-- the oldest are the nearest to maturing (dropping them instead kept the horizon still for as long as 8 leases
-- were queued on the lock with transaction ids, which acknowledging leases are).
WITH samples AS (
	SELECT s.id, s.xid, s.k, s.xid < pg_snapshot_xmin(pg_current_snapshot()) AS matured
	FROM message_cursors c, unnest(c.sample_ids, c.sample_xids) WITH ORDINALITY AS s(id, xid, k)
	WHERE c.queue_no = @queue_no AND c.group_no = @group_no AND c.channel_id = (@channels::text[])[1]
), cur AS (
	SELECT coalesce(c.last_id, 0) AS last_id,
		greatest(coalesce(c.safe_id, 0), (SELECT max(s.id) FROM samples s WHERE s.matured)) AS safe_id,
		ARRAY (SELECT s.id FROM samples s WHERE NOT s.matured ORDER BY s.k) AS pending_ids,
		ARRAY (SELECT s.xid FROM samples s WHERE NOT s.matured ORDER BY s.k) AS pending_xids
	FROM (SELECT) one LEFT JOIN message_cursors c
		ON c.queue_no = @queue_no AND c.group_no = @group_no AND c.channel_id = (@channels::text[])[1]
), due AS (
	SELECT ctid, group_no, id FROM messages m
	WHERE queue_no = @queue_no AND group_no = @group_no AND dlq = @dlq AND channel_id = (@channels::text[])[1]
		AND visible_at > '-infinity' AND visible_at <= now() AND expire_at > now()
	ORDER BY visible_at, id
	LIMIT @limit
	FOR UPDATE SKIP LOCKED
), picked AS (
	SELECT m.group_no, m.id, m.channel_id, now() + make_interval(secs => @visibility_seconds) AS visible_at,
		m.expire_at, 1 AS delivery_count, m.content, m.attributes, m.metadata, m.time_created, false AS dead_lettered,
		m.last_negative_code, m.last_negative_reason, m.message_group
	FROM messages m
	WHERE m.queue_no = @queue_no AND m.group_no = @group_no AND m.dlq = @dlq AND m.channel_id = (@channels::text[])[1]
		AND m.visible_at = '-infinity' AND m.id > (SELECT last_id FROM cur) AND m.id <= (SELECT safe_id FROM cur)
		AND m.expire_at > now()
	ORDER BY m.id
	LIMIT (SELECT @limit - count(*) FROM due)
), beyond AS (
	SELECT ctid, group_no, id FROM messages m
	WHERE m.queue_no = @queue_no AND m.group_no = @group_no AND m.dlq = @dlq AND m.channel_id = (@channels::text[])[1]
		AND m.visible_at = '-infinity' AND m.id > (SELECT greatest(last_id, safe_id) FROM cur) AND m.expire_at > now()
	ORDER BY m.id
	LIMIT (SELECT @limit - (SELECT count(*) FROM due) - count(*) FROM picked)
	FOR UPDATE SKIP LOCKED
), advanced AS (
	INSERT INTO message_cursors AS c (queue_no, group_no, channel_id, last_id, safe_id, sample_ids, sample_xids)
	SELECT @queue_no, @group_no, (@channels::text[])[1], coalesce((SELECT max(id) FROM picked), cur.last_id), cur.safe_id,
		CASE WHEN cardinality(cur.pending_ids) < 8 THEN cur.pending_ids || current_setting('ferry.sequence_position')::bigint
			ELSE cur.pending_ids END,
		CASE WHEN cardinality(cur.pending_xids) < 8 THEN cur.pending_xids || pg_current_xact_id() ELSE cur.pending_xids END
	FROM cur
	ON CONFLICT (queue_no, group_no, channel_id) DO UPDATE SET last_id = excluded.last_id, safe_id = excluded.safe_id,
		sample_ids = excluded.sample_ids, sample_xids = excluded.sample_xids
), ranged AS (
	INSERT INTO message_ranges (queue_no, lease_id, group_no, channel_id, from_id, to_id, visible_at)
	SELECT @queue_no, @lease_id, @group_no, (@channels::text[])[1], min(id), max(id), now() + make_interval(secs => @visibility_seconds)
	FROM picked HAVING count(*) > 0
), next AS (
	SELECT ctid, group_no, id FROM due UNION ALL SELECT ctid, group_no, id FROM beyond
)
{{- else}}
-- From a single channel (the common case: a queue with one channel, or an exact channelFilter): one index
-- range, no interleaving.
{{- if .Owners}}
-- For the coalesced leases of several owners (watches): @owners holds an owner per slot (the first request's
-- limit times its owner, then the next request's, …), and the k-th picked row by id goes to slot k — the row
-- that leaseBatch deals to that request.
WITH picked AS (
{{- else}}
WITH next AS (
{{- end}}
	SELECT ctid, group_no, id FROM messages m
	WHERE queue_no = @queue_no AND group_no = @group_no AND dlq = @dlq AND channel_id = (@channels::text[])[1]
		AND visible_at <= now() AND expire_at > now()
		{{- template "notHeld"}}
	ORDER BY visible_at, id
	LIMIT @limit
	FOR UPDATE SKIP LOCKED
{{- if .Owners}}
), next AS (
	SELECT ctid, group_no, id, row_number() OVER (ORDER BY id) AS slot FROM picked
)
{{- else}}
)
{{- end}}
{{- end}}
, leased AS (
-- Deliver (or dead-letter: a row whose delivery count reached the limit moves to the DLQ instead of being
-- delivered) the picked rows, fetched by their ctid (a TID scan: m.ctid = ANY is its condition; joined on next
-- alone, a generic plan hashes the whole queue). The pick locked each row, so its ctid stays its own until the
-- transaction ends; a row that the pick locked in a version newer than the statement's snapshot (updated by a
-- transaction that committed meanwhile) is not visible to the update, and stays as it is: not leased, not
-- returned. Fetched by primary key instead, the update of a 32-message lease and its acknowledgement ran 7 %
-- more instructions per message (callgrind, a single-user backend, 2,560 messages): the primary key's probe.
UPDATE messages m SET
	dlq = m.dlq OR (@max_deliveries > 0 AND m.delivery_count >= @max_deliveries),
	visible_at = CASE WHEN NOT m.dlq AND @max_deliveries > 0 AND m.delivery_count >= @max_deliveries THEN now()
		ELSE now() + make_interval(secs => @visibility_seconds) END,
	delivery_count = CASE WHEN NOT m.dlq AND @max_deliveries > 0 AND m.delivery_count >= @max_deliveries THEN m.delivery_count
		ELSE m.delivery_count + 1 END,
	lease_id = @lease_id,
{{- if .Owners}}
	lease_owner = (@owners::text[])[next.slot]
{{- else if .Consumer}}
	lease_owner = @consumer
{{- else}}
	lease_owner = @owner
{{- end}}
FROM next
WHERE m.ctid = ANY (ARRAY (SELECT ctid FROM next)) AND m.ctid = next.ctid AND m.queue_no = @queue_no
RETURNING m.group_no, m.id, m.channel_id, m.visible_at, m.expire_at, m.delivery_count, m.content,
	m.attributes, m.metadata, m.time_created, m.dlq <> @dlq AS dead_lettered, m.last_negative_code,
	m.last_negative_reason, m.message_group
{{- if .DeadLetter}}
-- When a dead-lettered row was the head of an ordered message group, the group's next message becomes visible
-- in the same statement (only in the variants for a queue with a DLQ limit, so that a queue without one runs the
-- plain update). next_up and unblocked are the same as in ack.sql's messages.delete_ordered, which explains
-- them.
), heads_left AS (
	SELECT group_no, message_group FROM leased WHERE dead_lettered
), next_up AS MATERIALIZED (
	SELECT h.group_no, (SELECT n.id FROM messages n
			WHERE n.queue_no = @queue_no AND n.group_no = h.group_no AND n.message_group = h.message_group AND NOT n.dlq
				AND n.visible_at = 'infinity'
			ORDER BY n.id LIMIT 1) AS id
	FROM (SELECT DISTINCT group_no, message_group FROM heads_left WHERE message_group IS NOT NULL) h
), unblocked AS (
	UPDATE messages m SET visible_at = now()
	FROM next_up nx
	WHERE m.queue_no = @queue_no AND m.id = ANY (ARRAY (SELECT id FROM next_up)) AND m.id = nx.id
		AND m.group_no IS NOT DISTINCT FROM nx.group_no AND m.visible_at = 'infinity'
	RETURNING m.group_no, m.id
{{- end}}
)
-- A message of several consumer groups keeps its content, attributes and metadata in message_bodies (put.sql):
-- read them there for the rows that have none (one primary-key probe per such row; none for the others).
SELECT l.group_no, l.id, l.channel_id, l.visible_at, l.expire_at, l.delivery_count,
	coalesce(l.content, b.content), coalesce(l.attributes, b.attributes), coalesce(l.metadata, b.metadata),
	l.time_created, l.dead_lettered, l.last_negative_code, l.last_negative_reason, l.message_group, l.content IS NULL
{{- if .Cursor}}
FROM (SELECT * FROM leased UNION ALL SELECT * FROM picked) l LEFT JOIN LATERAL (
{{- else}}
FROM leased l LEFT JOIN LATERAL (
{{- end}}
	SELECT b.content, b.attributes, b.metadata FROM message_bodies b
	WHERE l.content IS NULL AND b.queue_no = @queue_no AND b.id = l.id) b ON true;
