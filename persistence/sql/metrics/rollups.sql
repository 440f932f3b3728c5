-- Tenant metrics: the per-minute rollups of queue_metrics (migration 0010). Go: metrics.go.

-- name: metrics.add_counts
-- One node's counts of one minute, for every queue and group it saw traffic on, in one statement: added to what
-- other nodes already wrote for that minute.
INSERT INTO queue_metrics AS m (queue_id, group_no, minute, tenancy_id, published, published_bytes, delivered,
	acknowledged, released, dead_lettered, redriven, discarded, expired)
SELECT * FROM unnest(@queue_ids::text[], @group_nos::int[], @minutes::timestamptz[], @tenancy_ids::text[],
	@published::bigint[], @published_bytes::bigint[], @delivered::bigint[], @acknowledged::bigint[],
	@released::bigint[], @dead_lettered::bigint[], @redriven::bigint[], @discarded::bigint[], @expired::bigint[])
ON CONFLICT (queue_id, group_no, minute) DO UPDATE SET
	published = m.published + excluded.published,
	published_bytes = m.published_bytes + excluded.published_bytes,
	delivered = m.delivered + excluded.delivered,
	acknowledged = m.acknowledged + excluded.acknowledged,
	released = m.released + excluded.released,
	dead_lettered = m.dead_lettered + excluded.dead_lettered,
	redriven = m.redriven + excluded.redriven,
	discarded = m.discarded + excluded.discarded,
	expired = m.expired + excluded.expired;

-- name: metrics.set_gauges
-- The sampled gauges of one minute, for every sampled queue and group: a later sample of the same minute
-- replaces an earlier one.
INSERT INTO queue_metrics AS m (queue_id, group_no, minute, tenancy_id, visible, in_flight, delayed, dlq_messages,
	oldest_age_seconds, consumers, partition_lag)
SELECT * FROM unnest(@queue_ids::text[], @group_nos::int[], @minutes::timestamptz[], @tenancy_ids::text[],
	@visible::bigint[], @in_flight::bigint[], @delayed::bigint[], @dlq_messages::bigint[],
	@oldest_age_seconds::float8[], @consumers::int[], @partition_lags::bigint[])
ON CONFLICT (queue_id, group_no, minute) DO UPDATE SET
	visible = excluded.visible, in_flight = excluded.in_flight, delayed = excluded.delayed,
	dlq_messages = excluded.dlq_messages, oldest_age_seconds = excluded.oldest_age_seconds,
	consumers = excluded.consumers, partition_lag = excluded.partition_lag;

-- name: metrics.sample_candidates
-- The queues to sample for a minute: those with traffic in it or the minute before, or with messages at the
-- previous sample. A queue with neither is not sampled, and gets no row: idle queues cost nothing.
SELECT DISTINCT queue_id, tenancy_id FROM queue_metrics
WHERE minute BETWEEN @minute::timestamptz - interval '1 minute' AND @minute AND group_no = -1
	AND (published + delivered + acknowledged + released + dead_lettered + redriven + discarded + expired > 0
		OR visible > 0 OR in_flight > 0 OR delayed > 0 OR dlq_messages > 0 OR partition_lag > 0);

-- name: metrics.partition_lags
-- The lag of each live PARTITION group of a queue: the sum over its partitions of latest offset − committed
-- offset (the statement of GetStats' partition view, summed). No rows for a queue without PARTITION groups.
SELECT g.group_no, sum(greatest(0, coalesce(p.next_offset, 0) - 1 - coalesce(a.committed, -1)))::bigint
FROM queues q
JOIN consumer_groups g ON g.queue_id = q.id AND g.load_balancing = 'PARTITION' AND g.lifecycle_state <> 'DELETED'
CROSS JOIN generate_series(0, q.partition_count - 1) AS s(p)
LEFT JOIN partition_assignments a ON a.queue_no = q.no AND a.group_no = g.group_no AND a.partition = s.p
LEFT JOIN queue_partitions p ON p.queue_no = q.no AND p.partition = s.p
WHERE q.id = @queue_id AND q.partition_count IS NOT NULL
GROUP BY g.group_no;

-- name: metrics.latest_partition_lags
-- The latest sampled lag of every PARTITION group sampled since @since, with the group's id: the per-group
-- gauge each node exports.
SELECT DISTINCT ON (m.queue_id, m.group_no) m.queue_id, m.tenancy_id, m.group_no, g.id, m.partition_lag
FROM queue_metrics m JOIN consumer_groups g ON g.queue_id = m.queue_id AND g.group_no = m.group_no
WHERE m.minute >= @since AND m.group_no >= 0 AND m.partition_lag IS NOT NULL
ORDER BY m.queue_id, m.group_no, m.minute DESC;

-- name: metrics.consumers
-- The live registered consumers of each group of a queue (single active consumers' GetMessages, watches), as
-- GET /consumers counts them.
SELECT group_no, count(*)::int FROM consumers
WHERE queue_id = @queue_id AND left_at IS NULL AND NOT leaving AND last_seen > now() - @live::interval
GROUP BY group_no;

-- name: metrics.latest_gauges
-- The latest sample of every queue sampled since @since (the whole queue's row): the gauges each node exports.
SELECT DISTINCT ON (queue_id) queue_id, tenancy_id, visible, in_flight, delayed, dlq_messages, oldest_age_seconds,
	consumers
FROM queue_metrics WHERE minute >= @since AND group_no = -1 AND visible IS NOT NULL
ORDER BY queue_id, minute DESC;

-- name: metrics.series
-- A queue's (or a group's) rollups between @start and @end, in buckets of @resolution aligned to whole multiples
-- of it: sums of the counters, and the maximum, mean and number of the sampled gauges.
SELECT date_bin(@resolution::interval, minute, TIMESTAMPTZ '2000-01-01 00:00:00+00') AS bucket,
	sum(published)::bigint, sum(published_bytes)::bigint, sum(delivered)::bigint, sum(acknowledged)::bigint,
	sum(released)::bigint, sum(dead_lettered)::bigint, sum(redriven)::bigint, sum(discarded)::bigint,
	sum(expired)::bigint, count(visible),
	coalesce(max(visible), 0)::float8, coalesce(avg(visible), 0)::float8,
	coalesce(max(in_flight), 0)::float8, coalesce(avg(in_flight), 0)::float8,
	coalesce(max(delayed), 0)::float8, coalesce(avg(delayed), 0)::float8,
	coalesce(max(dlq_messages), 0)::float8, coalesce(avg(dlq_messages), 0)::float8,
	coalesce(max(oldest_age_seconds), 0)::float8, coalesce(avg(oldest_age_seconds), 0)::float8,
	coalesce(max(consumers), 0)::float8, coalesce(avg(consumers), 0)::float8,
	coalesce(max(partition_lag), 0)::float8, coalesce(avg(partition_lag), 0)::float8
FROM queue_metrics WHERE queue_id = @queue_id AND group_no = @group_no AND minute >= @start AND minute < @end
GROUP BY bucket ORDER BY bucket;

-- name: metrics.expire
-- Retention: one batch of rollups older than @cutoff. Nothing rewrites rows that old, so picking and deleting by
-- primary key in one statement is safe.
DELETE FROM queue_metrics WHERE (queue_id, group_no, minute) IN (
	SELECT queue_id, group_no, minute FROM queue_metrics WHERE minute < @cutoff LIMIT @limit);
