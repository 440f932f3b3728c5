-- Ordered message groups: the groups' locks, unblocking a group's next message after bulk deletes, and the
-- redrive of DLQ messages back into their groups' order. Go: messages_ordering.go.

-- name: messages.lock_groups
-- Before a statement that changes the head of ordered message groups: the groups' advisory locks, in one global
-- order (no deadlocks between batches). Puts, acknowledgements, redrives and repairs of the same group are
-- serialised by them, and each decides with a snapshot taken after the lock (a later statement of the same
-- transaction or batch), so a put always sees the head that an acknowledgement just removed, and an
-- acknowledgement always sees the message that a put just queued behind the head. @group_nos/@message_groups
-- are the (consumer group, message group) pairs.
SELECT pg_advisory_xact_lock(k) FROM (
	SELECT DISTINCT hashtextextended(@queue_id || '/' || u.group_no || '/' || u.message_group, 0) AS k
	FROM unnest(@group_nos::int[], @message_groups::text[]) AS u(group_no, message_group) ORDER BY 1) keys;

-- name: messages.lock_receipt_groups
-- runs on the partition of @queue_no
-- The same locks, for the ordered messages that receipts address: one primary-key probe per receipt (a scalar
-- subquery, so that the planner cannot turn it into a scan of the queue's ordered messages).
SELECT pg_advisory_xact_lock(k) FROM (
	SELECT DISTINCT k FROM (
		SELECT (SELECT hashtextextended(@queue_id || '/' || m.group_no || '/' || m.message_group, 0) FROM messages m
			WHERE m.queue_no = @queue_no AND m.id = r.id AND m.group_no IS NOT DISTINCT FROM r.group_no
				AND m.message_group IS NOT NULL AND NOT m.dlq) AS k
		FROM unnest(@group_nos::int[], @ids::bigint[]) AS r(group_no, id)) receipt_keys
	WHERE k IS NOT NULL ORDER BY 1) keys;

-- name: messages.unblock_groups
-- runs on the partition of @queue_no
-- After rows were deleted in bulk (purge, retention) — in the same transaction, under messages.lock_groups —
-- make the next message of each given group visible when the group has no head left. next_up and unblocked are
-- the same as in ack.sql's messages.delete_ordered, which explains them.
WITH heads_left AS (
	SELECT k.group_no, k.message_group FROM unnest(@group_nos::int[], @message_groups::text[]) AS k(group_no, message_group)
	WHERE NOT EXISTS (SELECT 1 FROM messages a WHERE a.queue_no = @queue_no AND a.group_no = k.group_no
		AND a.message_group = k.message_group AND NOT a.dlq AND a.visible_at <> 'infinity')
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
)
SELECT count(*) FROM unblocked;

-- name: messages.redrive_pick
-- runs on the partition of @queue_no
-- Redrive, step 1: pick (and lock) the oldest DLQ messages.
SELECT id, message_group FROM messages WHERE queue_no = @queue_no AND group_no = @group_no AND dlq
ORDER BY id LIMIT @limit FOR UPDATE SKIP LOCKED;

-- name: messages.redrive
-- runs on the partition of @queue_no
-- Redrive, step 2 (after messages.lock_groups for their ordered groups): back to the queue, visible at once —
-- except a message of an ordered group that still has messages in the queue (or an earlier redriven one): it
-- waits, and being older than the waiting ones it is next after the group's current head. The group's last
-- message is locked FOR KEY SHARE as in messages.insert_ordered.
WITH picked AS (
	SELECT p.id, p.message_group, row_number() OVER (PARTITION BY p.message_group ORDER BY p.id) AS position
	FROM unnest(@ids::bigint[], @message_groups::text[]) AS p(id, message_group)
), queued AS (
	SELECT k.message_group FROM (SELECT DISTINCT message_group FROM picked WHERE message_group IS NOT NULL) k
	CROSS JOIN LATERAL (
		SELECT 1 FROM messages m
		WHERE m.queue_no = @queue_no AND m.group_no = @group_no AND m.message_group = k.message_group AND NOT m.dlq
		ORDER BY m.id DESC LIMIT 1
		FOR KEY SHARE) last
)
UPDATE messages m SET dlq = false, delivery_count = 0, lease_id = 0,
	visible_at = CASE WHEN p.message_group IS NOT NULL AND (p.position > 1 OR q.message_group IS NOT NULL)
		THEN 'infinity'::timestamptz ELSE now() END
FROM picked p LEFT JOIN queued q ON q.message_group = p.message_group
WHERE m.queue_no = @queue_no AND m.id = ANY (@ids) AND m.id = p.id AND m.group_no IS NOT DISTINCT FROM @group_no AND m.dlq;
