-- Counting: a queue's stats, its channels, its size per channel, and the messages no consumer group took.
-- Go: messages_stats.go.

-- name: messages.stats
-- runs on the partition of @queue_no
-- A group's messages (@channel_id '' = every channel), the queue's and its DLQ's. Messages of an ordered group
-- that wait for an earlier one (visible_at 'infinity') count as visible: they are in the queue, neither leased
-- nor delayed.
-- A fresh message at or below its channel's cursor is in flight: a range holds it (lease.sql).
SELECT dlq, count(*) FILTER (WHERE visible_at <= now() AND NOT ranged OR visible_at = 'infinity'),
	count(*) FILTER (WHERE visible_at > now() AND visible_at < 'infinity' AND delivery_count > 0 OR ranged),
	count(*) FILTER (WHERE visible_at > now() AND visible_at < 'infinity' AND delivery_count = 0),
	coalesce(sum(size_bytes), 0)
FROM (SELECT m.dlq, m.visible_at, m.delivery_count, m.size_bytes,
		m.visible_at = '-infinity' AND m.id <= coalesce(k.last_id, 0) AS ranged
	FROM messages m LEFT JOIN message_cursors k ON k.queue_no = @queue_no AND k.group_no = m.group_no AND k.channel_id = m.channel_id
	WHERE m.queue_no = @queue_no AND m.group_no = @group_no AND (@channel_id = '' OR m.channel_id = @channel_id) AND m.expire_at > now()) s
GROUP BY dlq;

-- name: messages.stats_by_group
-- runs on the partition of @queue_no
-- Every group's counts in one scan of the queue's messages (@group_nos NULL = every group), with the definitions
-- of messages.stats: GetStats' per-group view, and the metrics sampler's (which also reads the age of the oldest
-- visible message, and does not restrict the channel).
SELECT group_no, dlq, count(*) FILTER (WHERE visible_at <= now() AND NOT ranged OR visible_at = 'infinity'),
	count(*) FILTER (WHERE visible_at > now() AND visible_at < 'infinity' AND delivery_count > 0 OR ranged),
	count(*) FILTER (WHERE visible_at > now() AND visible_at < 'infinity' AND delivery_count = 0),
	coalesce(sum(size_bytes), 0),
	coalesce(extract(epoch FROM now() - min(time_created) FILTER (WHERE visible_at <= now() AND NOT ranged OR visible_at = 'infinity')), 0)::float8
FROM (SELECT m.group_no, m.dlq, m.visible_at, m.delivery_count, m.size_bytes, m.time_created,
		m.visible_at = '-infinity' AND m.id <= coalesce(k.last_id, 0) AS ranged
	FROM messages m LEFT JOIN message_cursors k ON k.queue_no = @queue_no AND k.group_no = m.group_no AND k.channel_id = m.channel_id
	WHERE m.queue_no = @queue_no AND (@group_nos::int[] IS NULL OR m.group_no = ANY (@group_nos))
		AND (@channel_id = '' OR m.channel_id = @channel_id) AND m.expire_at > now()) s
GROUP BY group_no, dlq;

-- name: messages.channels
-- runs on the partition of @queue_no
-- Distinct channels by a skip scan over the lease index: one index probe per channel.
WITH RECURSIVE ch AS (
	(SELECT channel_id FROM messages WHERE queue_no = @queue_no AND group_no = @group_no AND dlq = @dlq AND channel_id >= @from_channel
		AND (channel_id <> @from_channel OR @inclusive) ORDER BY channel_id LIMIT 1)
	UNION ALL
	SELECT (SELECT m.channel_id FROM messages m WHERE m.queue_no = @queue_no AND m.group_no = @group_no AND m.dlq = @dlq
		AND m.channel_id > ch.channel_id ORDER BY m.channel_id LIMIT 1)
	FROM ch WHERE ch.channel_id IS NOT NULL)
SELECT channel_id FROM ch WHERE channel_id IS NOT NULL LIMIT @limit;

-- name: messages.size_by_channel
-- runs on the partition of @queue_no
-- The stored bytes of a queue (every group and the DLQ) per channel, and the highest id counted.
SELECT channel_id, coalesce(sum(size_bytes), 0), max(id) FROM messages WHERE queue_no = @queue_no GROUP BY channel_id;

-- name: messages.add_discarded
-- Count messages that no consumer group took.
INSERT INTO queue_discards (queue_id, discarded) VALUES (@queue_id, @discarded)
ON CONFLICT (queue_id) DO UPDATE SET discarded = queue_discards.discarded + excluded.discarded;

-- name: messages.discarded
SELECT coalesce((SELECT discarded FROM queue_discards WHERE queue_id = @queue_id), 0);
