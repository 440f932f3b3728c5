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
-- runs on the partition of @queue_no
-- Before a lease, under messages.lease_lock: the group's ranges past their deadline end, and the fresh messages
-- they still hold become visible in per-message state — delivered once, under the range's lease id (so that its
-- receipts still acknowledge them until another lease takes them, as a per-message lease's do). The messages are
-- found by a primary-key range per range (held: LATERAL keeps it per range; a join let the planner hash the
-- queue's messages) and updated by primary key (m.id = ANY).
WITH expired AS (
	DELETE FROM message_ranges r
	WHERE r.queue_no = @queue_no AND r.visible_at <= now() AND r.group_no = @group_no
	RETURNING r.lease_id, r.channel_id, r.from_id, r.to_id
), held AS (
	SELECT k.id, e.lease_id FROM expired e CROSS JOIN LATERAL (
		SELECT m.id FROM messages m
		WHERE m.queue_no = @queue_no AND m.id BETWEEN e.from_id AND e.to_id AND m.group_no = @group_no AND NOT m.dlq
			AND m.channel_id = e.channel_id AND m.visible_at = '-infinity') k
)
UPDATE messages m SET visible_at = now(), delivery_count = 1, lease_id = h.lease_id
FROM held h
WHERE m.queue_no = @queue_no AND m.id = ANY (ARRAY (SELECT id FROM held)) AND m.id = h.id AND m.group_no = @group_no
	AND m.visible_at = '-infinity';

-- name: messages.expired_range_groups
-- The maintainer's sweep, for the groups no lease visits: up to @limit (queue, group) pairs that hold ranges past
-- their deadline. Each is revived as a lease would (messages.lease_lock, then messages.revive_ranges, in one
-- transaction): a statement over several queues at once let the planner join the ranges to every partition of
-- messages and ran for seconds, holding up the leases that waited for the same ranges.
SELECT DISTINCT queue_no, group_no FROM message_ranges WHERE visible_at <= now() LIMIT @limit;

-- name: messages.delete_empty_ranges
-- The maintainer's: up to @limit ranges that hold no fresh message any more (their messages were acknowledged, or
-- changed to per-message state), which acknowledgements left behind (ack.sql). A range never gains a fresh
-- message (its ids were all put before it was taken), so what this snapshot sees empty stays empty. (A scalar
-- subquery per range, as in messages.delete.)
DELETE FROM message_ranges d
WHERE d.ctid = ANY (ARRAY (
	SELECT g.ctid FROM message_ranges g
	WHERE (SELECT m.id FROM messages m
		WHERE m.queue_no = g.queue_no AND m.id BETWEEN g.from_id AND g.to_id AND m.group_no = g.group_no AND NOT m.dlq
			AND m.channel_id = g.channel_id AND m.visible_at = '-infinity'
		LIMIT 1) IS NULL
	LIMIT @limit
	FOR UPDATE SKIP LOCKED));
