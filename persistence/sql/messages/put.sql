-- Publishing: the inserts of a put batch, and its deduplication keys. Go: messages_put.go.
--
-- A message without delay or message group is stored fresh (visible_at '-infinity'): visible, and never leased,
-- which the cursor lease takes by id (lease.sql). Each insert gives its transaction an id before it draws the
-- first id from the sequence (pg_current_xact_id() in the scan's filter, which runs before the projection that
-- calls nextval): the cursor's horizon relies on it.

-- name: messages.insert
-- runs on the partition of @queue_no
-- Insert a batch: ids come from the sequence in input order (volatile functions are evaluated after the
-- ordinality order), so sorting the returned ids restores the batch order. Each message is copied into the
-- consumer groups that @copy_ords/@copy_group_nos pair with its ordinality (fanout). A message of several groups
-- (@shared) is stored once: its content, attributes and metadata in message_bodies, and each group's row without
-- them (migration 0012).
WITH input AS (
	SELECT nextval('messages_id_seq') AS id, u.*
	FROM unnest(@channel_ids::text[], @delays::int[], @sizes::int[], @contents::text[], @attributes::json[], @metadata::json[], @shared::bool[])
		WITH ORDINALITY AS u(channel_id, delay, size_bytes, content, attributes, metadata, shared, ord)
	WHERE pg_current_xact_id() IS NOT NULL
	ORDER BY u.ord
), bodies AS (
	INSERT INTO message_bodies (queue_no, id, content, attributes, metadata)
	SELECT @queue_no, id, content, attributes, metadata FROM input WHERE shared
), ins AS (
	INSERT INTO messages (queue_no, group_no, id, channel_id, visible_at, expire_at, size_bytes, content, attributes, metadata)
	SELECT @queue_no, g.group_no, input.id, input.channel_id,
		CASE WHEN input.delay = 0 THEN '-infinity' ELSE now() + make_interval(secs => input.delay) END,
		now() + make_interval(secs => @retention_seconds), input.size_bytes,
		CASE WHEN NOT input.shared THEN input.content END, CASE WHEN NOT input.shared THEN input.attributes END,
		CASE WHEN NOT input.shared THEN input.metadata END
	FROM input JOIN unnest(@copy_ords::int[], @copy_group_nos::int[]) AS g(ord, group_no) ON g.ord = input.ord)
SELECT id, ord, now() + make_interval(secs => @retention_seconds) FROM input;

-- name: messages.insert_one_copy
-- runs on the partition of @queue_no
-- The same for a batch whose every message goes to exactly one consumer group (@group_nos, per message): no CTE
-- and no join (a 20-message insert ran 1.5–2× the rate of messages.insert's, pgbench). unnest yields the rows in
-- batch order and nextval is evaluated row by row, so the returned ids sorted are in batch order.
INSERT INTO messages (queue_no, group_no, id, channel_id, visible_at, expire_at, size_bytes, content, attributes, metadata)
SELECT @queue_no, u.group_no, nextval('messages_id_seq'), u.channel_id,
	CASE WHEN u.delay = 0 THEN '-infinity' ELSE now() + make_interval(secs => u.delay) END,
	now() + make_interval(secs => @retention_seconds), u.size_bytes, u.content, u.attributes, u.metadata
FROM unnest(@channel_ids::text[], @delays::int[], @sizes::int[], @contents::text[], @attributes::json[], @metadata::json[], @group_nos::int[])
	AS u(channel_id, delay, size_bytes, content, attributes, metadata, group_no)
WHERE pg_current_xact_id() IS NOT NULL
RETURNING id, expire_at;

-- name: messages.insert_ordered
-- runs on the partition of @queue_no
-- Insert a batch that holds ordered messages (after messages.lock_groups in the same transaction), storing a
-- message of several groups once as messages.insert does. Per consumer
-- group, the first message of a message group that has no message yet is its head and is inserted as usual;
-- every other one waits (visible_at = 'infinity'). The group's last message is locked FOR KEY SHARE until
-- commit, so no lease can dead-letter it — and unblock nothing, not seeing this insert — meanwhile: the lease
-- skips it (SKIP LOCKED), or this statement waits for the lease and then finds it in the DLQ.
WITH input AS (
	SELECT nextval('messages_id_seq') AS id, u.*
	FROM unnest(@channel_ids::text[], @delays::int[], @sizes::int[], @contents::text[], @attributes::json[], @metadata::json[], @message_groups::text[], @shared::bool[])
		WITH ORDINALITY AS u(channel_id, delay, size_bytes, content, attributes, metadata, message_group, shared, ord)
	WHERE pg_current_xact_id() IS NOT NULL
	ORDER BY u.ord
), bodies AS (
	INSERT INTO message_bodies (queue_no, id, content, attributes, metadata)
	SELECT @queue_no, id, content, attributes, metadata FROM input WHERE shared
), copies AS (
	SELECT input.*, g.group_no,
		row_number() OVER (PARTITION BY g.group_no, input.message_group ORDER BY input.id) AS position
	FROM input JOIN unnest(@copy_ords::int[], @copy_group_nos::int[]) AS g(ord, group_no) ON g.ord = input.ord
), queued AS (
	SELECT k.group_no, k.message_group FROM (
		SELECT DISTINCT group_no, message_group FROM copies WHERE message_group IS NOT NULL) k
	CROSS JOIN LATERAL (
		SELECT 1 FROM messages m
		WHERE m.queue_no = @queue_no AND m.group_no = k.group_no AND m.message_group = k.message_group AND NOT m.dlq
		ORDER BY m.id DESC LIMIT 1
		FOR KEY SHARE) last
), ins AS (
	INSERT INTO messages (queue_no, group_no, id, channel_id, visible_at, expire_at, size_bytes, content,
		attributes, metadata, message_group)
	SELECT @queue_no, c.group_no, c.id, c.channel_id,
		CASE WHEN c.message_group IS NOT NULL AND (c.position > 1 OR q.group_no IS NOT NULL) THEN 'infinity'::timestamptz
			WHEN c.message_group IS NULL AND c.delay = 0 THEN '-infinity'
			ELSE now() + make_interval(secs => c.delay) END,
		now() + make_interval(secs => @retention_seconds), c.size_bytes, CASE WHEN NOT c.shared THEN c.content END,
		CASE WHEN NOT c.shared THEN c.attributes END, CASE WHEN NOT c.shared THEN c.metadata END, c.message_group
	FROM copies c LEFT JOIN queued q ON q.group_no = c.group_no AND q.message_group = c.message_group)
SELECT id, ord, now() + make_interval(secs => @retention_seconds) FROM input;

-- name: dedup.claim
-- Claim the deduplication ids that no unexpired key holds (a key past its window is taken over); returns the
-- claimed ones. The claimed keys point at no message (0) until dedup.set, in the same transaction.
INSERT INTO message_dedup_keys (queue_id, dedup_id, message_id, expire_at)
SELECT @queue_id, d, 0, now() + make_interval(secs => @window_seconds) FROM unnest(@dedup_ids::text[]) AS d
ON CONFLICT (queue_id, dedup_id) DO UPDATE SET message_id = 0, expire_at = excluded.expire_at
	WHERE message_dedup_keys.expire_at <= now()
RETURNING dedup_id;

-- name: dedup.lookup
-- The original message of each deduplication id, and its expiry: its own while it is stored, else derived from
-- the key, which was written in the same transaction (same now()) with the window instead of the retention.
SELECT k.dedup_id, k.message_id, coalesce(
		(SELECT m.expire_at FROM messages m WHERE m.queue_no = @queue_no AND m.group_no = ANY (@group_nos::int[]) AND m.id = k.message_id LIMIT 1),
		k.expire_at - make_interval(secs => @window_seconds) + make_interval(secs => @retention_seconds))
FROM message_dedup_keys k WHERE k.queue_id = @queue_id AND k.dedup_id = ANY (@dedup_ids::text[]);

-- name: dedup.set
-- Point the keys that dedup.claim took at the messages just stored.
UPDATE message_dedup_keys k SET message_id = r.id FROM unnest(@dedup_ids::text[], @message_ids::bigint[]) AS r(dedup_id, id)
WHERE k.queue_id = @queue_id AND k.dedup_id = r.dedup_id;
