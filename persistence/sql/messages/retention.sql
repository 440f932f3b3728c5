-- Deleting in bulk (purge, retention, messages of deleted queues), the id watermarks retention relies on, and
-- the expiry of deduplication keys. Go: messages_retention.go.
--
-- Batched deletes address rows by primary key, not by ctid: a lease or an acknowledgement that rewrites a row
-- between the pick and the delete moves its ctid, and a ctid-addressed delete would silently skip it. Bulk
-- deletes run in steps in one transaction (deleteBatch): pick a batch (with the ordered groups it touches), take
-- those groups' locks (messages.lock_groups), delete the picked rows that still qualify
-- (messages.delete_picked), unblock the groups (messages.unblock_groups).

-- name: messages.purge_pick
-- runs on the partition of @queue_no
-- Purge, one batch of the messages published before the purge started (id <= @up_to) in its scope: @dlq NULL =
-- queue and DLQ, @group_nos NULL = every consumer group, @channel_ids NULL = every channel. Only dlq can change
-- between the pick and the delete (a lease dead-letters, a redrive moves back), so delete_picked checks only it.
SELECT group_no, id, message_group FROM messages
WHERE queue_no = @queue_no AND (@dlq::bool IS NULL OR dlq = @dlq)
	AND (@group_nos::int[] IS NULL OR group_no = ANY (@group_nos))
	AND (@channel_ids::text[] IS NULL OR channel_id = ANY (@channel_ids))
	AND id <= @up_to LIMIT @limit;

-- name: messages.expire_pick
-- runs on the partition of @queue_no
-- Retention: one batch of a queue's messages with ids at or below the cutoff (a primary-key range per group).
SELECT group_no, id, message_group FROM messages WHERE queue_no = @queue_no
	AND group_no = ANY (ARRAY (SELECT 0 UNION SELECT group_no FROM consumer_groups WHERE queue_id = @queue_id))
	AND id <= @cutoff LIMIT @limit;

-- name: messages.delete_picked
-- runs on the partition of @queue_no
-- The delete step of deleteBatch: the picked rows, by primary key, still in the DLQ or not as the purge asks
-- (@dlq NULL = either).
DELETE FROM messages m USING unnest(@group_nos::int[], @ids::bigint[]) AS p(group_no, id)
WHERE m.queue_no = @queue_no AND m.id = ANY (@ids) AND m.id = p.id AND m.group_no IS NOT DISTINCT FROM p.group_no
	AND (@dlq::bool IS NULL OR m.dlq IS NOT DISTINCT FROM @dlq);

-- name: messages.delete_orphans
-- Messages of queues deleted in the last day: nodes cache a queue's state for a moment, so a put that raced the
-- delete can land after the delete's purge.
DELETE FROM messages m USING (
	SELECT o.queue_no, o.group_no, o.id FROM queues q
	CROSS JOIN LATERAL (SELECT queue_no, group_no, id FROM messages WHERE queue_no = q.no LIMIT @limit) o
	WHERE q.lifecycle_state = 'DELETED' AND q.time_updated > now() - interval '1 day' LIMIT @limit) d
WHERE m.queue_no = d.queue_no AND m.id = d.id AND m.group_no IS NOT DISTINCT FROM d.group_no;

-- name: messages.expire_bodies
-- One batch of bodies (put.sql) that no consumer group's row holds any more, found cheaply: in each queue that
-- has bodies (a skip scan of the primary key), those older than the queue's oldest stored message. A put inserts
-- a body and its rows in one transaction, so this statement's snapshot sees both or neither. What an
-- acknowledgement left behind (messages.delete_bodies) goes once the messages older than it are gone.
WITH RECURSIVE queues_with_bodies AS (
	(SELECT queue_no FROM message_bodies ORDER BY queue_no LIMIT 1)
	UNION ALL
	SELECT (SELECT b.queue_no FROM message_bodies b WHERE b.queue_no > q.queue_no ORDER BY b.queue_no LIMIT 1)
	FROM queues_with_bodies q WHERE q.queue_no IS NOT NULL
), orphans AS (
	SELECT o.queue_no, o.id FROM queues_with_bodies q
	CROSS JOIN LATERAL (
		SELECT b.queue_no, b.id FROM message_bodies b
		WHERE b.queue_no = q.queue_no
			AND b.id < coalesce((SELECT min(m.id) FROM messages m WHERE m.queue_no = q.queue_no), 9223372036854775807)
		ORDER BY b.id LIMIT @limit) o
	WHERE q.queue_no IS NOT NULL
	LIMIT @limit
)
DELETE FROM message_bodies b USING orphans o WHERE b.queue_no = o.queue_no AND b.id = o.id;

-- name: messages.last_id
-- The highest message id allocated so far.
SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM messages_id_seq;

-- name: messages.watermark_record
-- The id sequence's position now (message_id_watermarks).
INSERT INTO message_id_watermarks (time_recorded, max_id)
SELECT now(), CASE WHEN is_called THEN last_value ELSE 0 END FROM messages_id_seq
ON CONFLICT DO NOTHING;

-- name: messages.watermark_cutoff
-- The highest id that was allocated at least @retention_seconds ago (0 when unknown).
SELECT coalesce((SELECT max_id FROM message_id_watermarks WHERE time_recorded <= now() - make_interval(secs => @retention_seconds)
	ORDER BY time_recorded DESC LIMIT 1), 0);

-- name: messages.watermark_prune
-- Positions older than any retention (7 days at most) are of no use.
DELETE FROM message_id_watermarks WHERE time_recorded < now() - interval '8 days';

-- name: dedup.expire
-- One batch of expired deduplication keys (message_dedup_keys_expiry).
DELETE FROM message_dedup_keys WHERE ctid = ANY (ARRAY (
	SELECT ctid FROM message_dedup_keys WHERE expire_at < now() LIMIT @limit));
