-- The cursor lease's companions (lease.sql, .Cursor): its lock, the sequence's position it samples, and turning
-- ranges past their deadline back into per-message state. Go: messages_lease.go, messages_retention.go.

-- name: messages.lease_position
-- First in a cursor lease's transaction, before anything gives the transaction an id: the id sequence's
-- position, for the horizon's sample (lease.sql explains it). Zero until the sequence has given an id.
SELECT set_config('ferry.sequence_position', (CASE WHEN is_called THEN last_value ELSE 0 END)::text, true) FROM messages_id_seq;

-- name: messages.lease_lock
-- Every lease of a consumer group's messages (not of its DLQ) takes the group's lock, in a statement before the
-- lease: the leases of a group run one at a time, and each lease's snapshot sees what the one before committed —
-- the cursor it moved, the fresh messages it leased the per-message way. (Seed 2: the ordered groups' locks use
-- 0, the consumer groups' 1.)
SELECT pg_advisory_xact_lock(hashtextextended(@queue_no::bigint::text || '/' || @group_no::int::text, 2));

-- name: messages.revive_ranges
-- Before a lease, under messages.lease_lock: the group's ranges past their deadline end, and the fresh messages
-- they still hold become visible in per-message state — delivered once, under the range's lease id (so that its
-- receipts still acknowledge them until another lease takes them, as a per-message lease's do).
WITH expired AS (
	DELETE FROM message_ranges r
	WHERE r.queue_no = @queue_no AND r.group_no = @group_no AND r.visible_at <= now()
	RETURNING r.lease_id, r.channel_id, r.from_id, r.to_id
)
UPDATE messages m SET visible_at = now(), delivery_count = 1, lease_id = e.lease_id
FROM expired e
WHERE m.queue_no = @queue_no AND m.group_no = @group_no AND NOT m.dlq AND m.channel_id = e.channel_id
	AND m.visible_at = '-infinity' AND m.id BETWEEN e.from_id AND e.to_id;

-- name: messages.revive_expired_ranges
-- The maintainer's sweep, for the groups no lease visits: up to @limit ranges past their deadline, as
-- messages.revive_ranges does (no lock needed: no lease reads a fresh message at or below its cursor), and the
-- ranges of deleted queues. Returns the ranges it ended.
WITH expired AS (
	DELETE FROM message_ranges r
	WHERE r.ctid = ANY (ARRAY (SELECT ctid FROM message_ranges WHERE visible_at <= now() LIMIT @limit))
	RETURNING r.queue_no, r.group_no, r.lease_id, r.channel_id, r.from_id, r.to_id
), revived AS (
	UPDATE messages m SET visible_at = now(), delivery_count = 1, lease_id = e.lease_id
	FROM expired e
	WHERE m.queue_no = e.queue_no AND m.group_no = e.group_no AND NOT m.dlq AND m.channel_id = e.channel_id
		AND m.visible_at = '-infinity' AND m.id BETWEEN e.from_id AND e.to_id
)
SELECT count(*) FROM expired;
