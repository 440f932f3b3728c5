-- Acknowledging, and the other statements on receipts. Go: messages_ack.go.
--
-- Statements that address rows by (queue_no, id, group_no) — the primary key — compare group_no and dlq with
-- IS NOT DISTINCT FROM: it is not an index operator, so the planner cannot mistake the lease index
-- (queue_no, group_no, dlq, …) for a way to find single rows by id, which scans the whole queue per row (it did:
-- 1–3 ms per acknowledged message under load).

-- A receipt holds its message while the message's row carries the receipt's lease id (a per-message lease), or
-- while the message is fresh (visible_at '-infinity') and a range of that lease id holds it (the cursor lease,
-- lease.sql): the range is there until a lease after its deadline ends it (messages.revive_ranges), which moves
-- its lease id onto the messages it still held. A fresh row's own lease_id is 0, which no receipt carries.

{{/*
A text/template (one variant) for the pieces the statements on receipts share: held, the ranges of the receipts'
leases, read once per statement (messages.delete explains why); heldByReceipt, whether the receipt r still holds
the message m; deleteHeld, the deletion of the messages that the receipts still hold.
*/ -}}
{{- define "held"}}held AS MATERIALIZED (
	SELECT g.ctid, g.lease_id, g.group_no, g.channel_id, g.from_id, g.to_id, g.visible_at FROM message_ranges g
	WHERE g.queue_no = @queue_no AND g.lease_id = ANY (ARRAY (SELECT DISTINCT l FROM unnest(@lease_ids::bigint[]) AS l))
){{end}}
{{- define "heldByReceipt"}}
	AND (m.lease_id = r.lease_id OR m.visible_at = '-infinity' AND EXISTS (SELECT 1 FROM held g
		WHERE g.lease_id = r.lease_id AND g.group_no = m.group_no AND m.id BETWEEN g.from_id AND g.to_id))
{{- end}}
{{- define "deleteHeld"}}
	DELETE FROM messages m USING unnest(@group_nos::int[], @ids::bigint[], @lease_ids::bigint[], @dlqs::bool[]) AS r(group_no, id, lease_id, dlq)
	WHERE m.queue_no = @queue_no AND m.id = r.id AND m.group_no IS NOT DISTINCT FROM r.group_no AND m.dlq IS NOT DISTINCT FROM r.dlq
		{{- template "heldByReceipt"}}
{{- end}}
-- name: messages.delete
-- runs on the partition of @queue_no
-- Acknowledge: delete the rows whose lease the receipts still hold. Rows come back as (group_no, id, false,
-- lease_id) per deleted message: the lease tells the receipt that deleted it from a stale receipt of the same
-- message in the same batch. The ranges of the receipts' leases are read once (held), not per receipt: probed per
-- receipt, message_ranges was read sequentially each time (a small table to the planner, full of dead rows between
-- vacuums), and the acknowledgement of 32 receipts took a sixth more of its backend's CPU (568–614 against 487–526
-- µs; docs/benchmarks.md). A range whose last fresh message this deletes is deleted with it, unless another
-- transaction holds the range's row (SKIP LOCKED: a wait here would queue acknowledgements behind each other's
-- commits). Two acknowledgements of one range in concurrent transactions may also each see the other's messages:
-- either way the maintainer deletes the empty range later (messages.delete_empty_ranges). Whether a range still
-- holds a message is a scalar subquery, a primary-key range per range row: as NOT EXISTS, the planner made it an
-- anti join that hashed every fresh message of the queue (250 ms per acknowledgement on a queue of 75,000).
WITH {{template "held"}}, deleted AS (
	{{- template "deleteHeld"}}
	RETURNING m.group_no, m.id, r.lease_id, m.visible_at = '-infinity' AS ranged
), emptied AS (
	DELETE FROM message_ranges d
	WHERE d.ctid = ANY (ARRAY (
		SELECT g.ctid FROM message_ranges g
		WHERE g.ctid = ANY (ARRAY (SELECT h.ctid FROM held h WHERE h.lease_id = ANY (ARRAY (SELECT DISTINCT lease_id FROM deleted WHERE ranged))))
			AND (SELECT m.id FROM messages m
				WHERE m.queue_no = @queue_no AND m.id BETWEEN g.from_id AND g.to_id AND m.group_no = g.group_no AND NOT m.dlq
					AND m.channel_id = g.channel_id AND m.visible_at = '-infinity'
					AND m.id <> ALL (ARRAY (SELECT id FROM deleted WHERE ranged AND group_no = g.group_no))
				LIMIT 1) IS NULL
		FOR UPDATE SKIP LOCKED))
)
SELECT group_no, id, false, lease_id FROM deleted;

-- name: messages.delete_ordered
-- runs on the partition of @queue_no
-- Acknowledge receipts of which some are of ordered messages (after messages.lock_receipt_groups in the same
-- transaction): a deleted head of an ordered message group makes the group's next message visible in the same
-- statement, which returns (group_no, id, true, 0) for it. The receipts' ranges are read once, as in
-- messages.delete.
WITH {{template "held"}}, deleted AS (
	{{- template "deleteHeld"}}
	RETURNING m.group_no, m.id, m.message_group, m.dlq, r.lease_id
), heads_left AS (
	SELECT group_no, message_group FROM deleted WHERE NOT dlq
-- The next message of each ordered group in heads_left (group_no, message_group; NULL groups are ignored) that
-- lost its head: the oldest waiting one becomes visible. Waiting rows sort last in the lease index and
-- first-to-last by id in messages_group, so this is one index probe per group (next_up, kept apart so that the
-- update looks its rows up by primary key: m.id = ANY is the index condition). The scalar subquery picks by the
-- statement's snapshot and the update re-checks visible_at: when the picked row was unblocked or deleted
-- meanwhile, nothing else is unblocked in its place. The same next_up and unblocked end the dead-lettering
-- leases (lease.sql) and messages.unblock_groups (ordering.sql); a test keeps the three the same.
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
SELECT group_no, id, false, lease_id FROM deleted UNION ALL SELECT group_no, id, true, 0::bigint FROM unblocked;

-- name: messages.delete_bodies
-- runs on the partition of @queue_no
-- The bodies (put.sql) of the given messages that no consumer group's row holds any more: after an
-- acknowledgement, in its transaction (this statement sees the rows it deleted gone). Two groups acknowledging
-- the same message at once may each still see the other's row, and keep the body: the maintainer deletes what
-- is older than the queue's oldest message (messages.expire_bodies). The ids whose rows are all gone are found
-- first, by primary-key probes of messages: most acknowledgements of a message of many groups leave its body (the
-- other groups' rows remain), and then read nothing of message_bodies (a group's drain among 100 groups ran
-- 0.71–0.73 of one group's rate with the body probed first, 0.77 so; 0.80–0.83 with no deletion at all).
DELETE FROM message_bodies b
WHERE b.queue_no = @queue_no AND b.id = ANY (ARRAY (
	SELECT i FROM unnest(@ids::bigint[]) AS i
	WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.queue_no = @queue_no AND m.id = i)));

-- name: messages.update_visibility
-- runs on the partition of @queue_no
-- Move the leases that the receipts still hold to now() + @seconds (per receipt). A fresh message that a range
-- holds leaves the range for per-message state: delivered once, under the receipt's lease. The receipts' ranges
-- are read once, as in messages.delete.
WITH {{template "held"}}
UPDATE messages m SET visible_at = now() + make_interval(secs => r.secs), lease_id = r.lease_id,
	delivery_count = CASE WHEN m.visible_at = '-infinity' THEN 1 ELSE m.delivery_count END
FROM unnest(@group_nos::int[], @ids::bigint[], @lease_ids::bigint[], @dlqs::bool[], @seconds::int[]) AS r(group_no, id, lease_id, dlq, secs)
WHERE m.queue_no = @queue_no AND m.id = r.id AND m.group_no IS NOT DISTINCT FROM r.group_no AND m.dlq IS NOT DISTINCT FROM r.dlq
	{{- template "heldByReceipt"}}
RETURNING m.group_no, m.id, m.lease_id, m.visible_at;

-- name: messages.negative
-- runs on the partition of @queue_no
-- A negative acknowledgement (a watch's): the receipts' messages become visible at once with their leases revoked,
-- and keep @code and @reason (shown when they are delivered again, and in the DLQ). The delivery count went up when
-- they were leased; a message over its group's dead-letter count moves to the DLQ at its next lease. A lease that
-- ended (its deadline passed) is not revoked, whether per message or by a range. A fresh message that a range of
-- the receipt's lease holds leaves it, delivered once. The receipts' ranges are read once, as in messages.delete.
WITH {{template "held"}}
UPDATE messages m SET visible_at = now(), lease_owner = NULL, lease_id = 0,
	delivery_count = CASE WHEN m.visible_at = '-infinity' THEN 1 ELSE m.delivery_count END,
	last_negative_code = @code, last_negative_reason = @reason
FROM unnest(@group_nos::int[], @ids::bigint[], @lease_ids::bigint[], @dlqs::bool[]) AS r(group_no, id, lease_id, dlq)
WHERE m.queue_no = @queue_no AND m.id = r.id AND m.group_no IS NOT DISTINCT FROM r.group_no AND m.dlq IS NOT DISTINCT FROM r.dlq
	AND (m.lease_id = r.lease_id AND m.visible_at > now() OR m.visible_at = '-infinity' AND EXISTS (SELECT 1 FROM held g
		WHERE g.lease_id = r.lease_id AND g.group_no = m.group_no AND m.id BETWEEN g.from_id AND g.to_id AND g.visible_at > now()))
RETURNING m.group_no, m.id;

-- name: messages.existing
-- runs on the partition of @queue_no
-- Which of these messages still exist (to tell a stale receipt from a message already acknowledged).
SELECT m.group_no, m.id FROM messages m
JOIN unnest(@group_nos::int[], @ids::bigint[]) AS r(group_no, id) ON m.id = r.id AND m.group_no IS NOT DISTINCT FROM r.group_no
WHERE m.queue_no = @queue_no;
