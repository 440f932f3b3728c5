-- Every statement of the data plane as PostgreSQL receives it (the positional text compiled from
-- sql/messages/*.sql when the package initialises), with the named parameter behind each $k. Generated:
-- go test ./persistence -run TestStatementsGolden -update

-- asyncCommit (a Go constant, messages.go)
SELECT set_config('synchronous_commit', 'off', true);

-- genericPlans (a Go constant, messages.go)
SELECT set_config('plan_cache_mode', 'force_generic_plan', true);

-- genericPlansAsync (a Go constant, messages.go)
SELECT set_config('synchronous_commit', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true);

-- leaseCommit (a Go constant, messages.go)
SELECT set_config('synchronous_commit', CASE WHEN now() + make_interval(secs => $1::int) >
		clock_timestamp() + 3 * current_setting('wal_writer_delay')::interval + interval '1 second' THEN 'off'
		ELSE current_setting('synchronous_commit') END, true);

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @lease_ids, $3 @group_nos, $4 @ids, $5 @dlqs
-- messages.delete
WITH held AS MATERIALIZED (
	SELECT g.ctid, g.lease_id, g.group_no, g.channel_id, g.from_id, g.to_id, g.visible_at FROM message_ranges g
	WHERE g.queue_no = $1 AND g.lease_id = ANY (ARRAY (SELECT DISTINCT l FROM unnest($2::bigint[]) AS l))
), deleted AS (
	DELETE FROM messages m USING unnest($3::int[], $4::bigint[], $2::bigint[], $5::bool[]) AS r(group_no, id, lease_id, dlq)
	WHERE m.queue_no = $1 AND m.id = r.id AND m.group_no IS NOT DISTINCT FROM r.group_no AND m.dlq IS NOT DISTINCT FROM r.dlq
	AND (m.lease_id = r.lease_id OR m.visible_at = '-infinity' AND EXISTS (SELECT 1 FROM held g
		WHERE g.lease_id = r.lease_id AND g.group_no = m.group_no AND m.id BETWEEN g.from_id AND g.to_id))
	RETURNING m.group_no, m.id, r.lease_id, m.visible_at = '-infinity' AS ranged
), emptied AS (
	DELETE FROM message_ranges d
	WHERE d.ctid = ANY (ARRAY (
		SELECT g.ctid FROM message_ranges g
		WHERE g.ctid = ANY (ARRAY (SELECT h.ctid FROM held h WHERE h.lease_id = ANY (ARRAY (SELECT DISTINCT lease_id FROM deleted WHERE ranged))))
			AND (SELECT m.id FROM messages m
				WHERE m.queue_no = $1 AND m.id BETWEEN g.from_id AND g.to_id AND m.group_no = g.group_no AND NOT m.dlq
					AND m.channel_id = g.channel_id AND m.visible_at = '-infinity'
					AND m.id <> ALL (ARRAY (SELECT id FROM deleted WHERE ranged AND group_no = g.group_no))
				LIMIT 1) IS NULL
		FOR UPDATE SKIP LOCKED))
)
SELECT group_no, id, false, lease_id FROM deleted;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @lease_ids, $3 @group_nos, $4 @ids, $5 @dlqs
-- messages.delete_ordered
WITH held AS MATERIALIZED (
	SELECT g.ctid, g.lease_id, g.group_no, g.channel_id, g.from_id, g.to_id, g.visible_at FROM message_ranges g
	WHERE g.queue_no = $1 AND g.lease_id = ANY (ARRAY (SELECT DISTINCT l FROM unnest($2::bigint[]) AS l))
), deleted AS (
	DELETE FROM messages m USING unnest($3::int[], $4::bigint[], $2::bigint[], $5::bool[]) AS r(group_no, id, lease_id, dlq)
	WHERE m.queue_no = $1 AND m.id = r.id AND m.group_no IS NOT DISTINCT FROM r.group_no AND m.dlq IS NOT DISTINCT FROM r.dlq
	AND (m.lease_id = r.lease_id OR m.visible_at = '-infinity' AND EXISTS (SELECT 1 FROM held g
		WHERE g.lease_id = r.lease_id AND g.group_no = m.group_no AND m.id BETWEEN g.from_id AND g.to_id))
	RETURNING m.group_no, m.id, m.message_group, m.dlq, r.lease_id
), heads_left AS (
	SELECT group_no, message_group FROM deleted WHERE NOT dlq
), next_up AS MATERIALIZED (
	SELECT h.group_no, (SELECT n.id FROM messages n
			WHERE n.queue_no = $1 AND n.group_no = h.group_no AND n.message_group = h.message_group AND NOT n.dlq
				AND n.visible_at = 'infinity'
			ORDER BY n.id LIMIT 1) AS id
	FROM (SELECT DISTINCT group_no, message_group FROM heads_left WHERE message_group IS NOT NULL) h
), unblocked AS (
	UPDATE messages m SET visible_at = now()
	FROM next_up nx
	WHERE m.queue_no = $1 AND m.id = ANY (ARRAY (SELECT id FROM next_up)) AND m.id = nx.id
		AND m.group_no IS NOT DISTINCT FROM nx.group_no AND m.visible_at = 'infinity'
	RETURNING m.group_no, m.id
)
SELECT group_no, id, false, lease_id FROM deleted UNION ALL SELECT group_no, id, true, 0::bigint FROM unblocked;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @ids
-- messages.delete_bodies
DELETE FROM message_bodies b
WHERE b.queue_no = $1 AND b.id = ANY (ARRAY (
	SELECT i FROM unnest($2::bigint[]) AS i
	WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.queue_no = $1 AND m.id = i)));

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @lease_ids, $3 @group_nos, $4 @ids, $5 @dlqs, $6 @seconds
-- messages.update_visibility
WITH held AS MATERIALIZED (
	SELECT g.ctid, g.lease_id, g.group_no, g.channel_id, g.from_id, g.to_id, g.visible_at FROM message_ranges g
	WHERE g.queue_no = $1 AND g.lease_id = ANY (ARRAY (SELECT DISTINCT l FROM unnest($2::bigint[]) AS l))
)
UPDATE messages m SET visible_at = now() + make_interval(secs => r.secs), lease_id = r.lease_id,
	delivery_count = CASE WHEN m.visible_at = '-infinity' THEN 1 ELSE m.delivery_count END
FROM unnest($3::int[], $4::bigint[], $2::bigint[], $5::bool[], $6::int[]) AS r(group_no, id, lease_id, dlq, secs)
WHERE m.queue_no = $1 AND m.id = r.id AND m.group_no IS NOT DISTINCT FROM r.group_no AND m.dlq IS NOT DISTINCT FROM r.dlq
	AND (m.lease_id = r.lease_id OR m.visible_at = '-infinity' AND EXISTS (SELECT 1 FROM held g
		WHERE g.lease_id = r.lease_id AND g.group_no = m.group_no AND m.id BETWEEN g.from_id AND g.to_id))
RETURNING m.group_no, m.id, m.lease_id, m.visible_at;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @lease_ids, $3 @code, $4 @reason, $5 @group_nos, $6 @ids, $7 @dlqs
-- messages.negative
WITH held AS MATERIALIZED (
	SELECT g.ctid, g.lease_id, g.group_no, g.channel_id, g.from_id, g.to_id, g.visible_at FROM message_ranges g
	WHERE g.queue_no = $1 AND g.lease_id = ANY (ARRAY (SELECT DISTINCT l FROM unnest($2::bigint[]) AS l))
)
UPDATE messages m SET visible_at = now(), lease_owner = NULL, lease_id = 0,
	delivery_count = CASE WHEN m.visible_at = '-infinity' THEN 1 ELSE m.delivery_count END,
	last_negative_code = $3, last_negative_reason = $4
FROM unnest($5::int[], $6::bigint[], $2::bigint[], $7::bool[]) AS r(group_no, id, lease_id, dlq)
WHERE m.queue_no = $1 AND m.id = r.id AND m.group_no IS NOT DISTINCT FROM r.group_no AND m.dlq IS NOT DISTINCT FROM r.dlq
	AND (m.lease_id = r.lease_id AND m.visible_at > now() OR m.visible_at = '-infinity' AND EXISTS (SELECT 1 FROM held g
		WHERE g.lease_id = r.lease_id AND g.group_no = m.group_no AND m.id BETWEEN g.from_id AND g.to_id AND g.visible_at > now()))
RETURNING m.group_no, m.id;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @group_nos, $2 @ids, $3 @queue_no
-- messages.existing
SELECT m.group_no, m.id FROM messages m
JOIN unnest($1::int[], $2::bigint[]) AS r(group_no, id) ON m.id = r.id AND m.group_no IS NOT DISTINCT FROM r.group_no
WHERE m.queue_no = $3;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @channels, $2 @queue_no, $3 @group_no, $4 @dlq, $5 @limit, $6 @max_deliveries, $7 @visibility_seconds, $8 @lease_id, $9 @owner
-- messages.lease
WITH candidates AS (
	SELECT m.ctid, m.group_no, m.id, row_number() OVER (PARTITION BY c.ord ORDER BY m.visible_at, m.id) AS rank, c.ord
	FROM unnest($1::text[]) WITH ORDINALITY AS c(channel_id, ord)
	CROSS JOIN LATERAL (
		SELECT ctid, group_no, id, visible_at FROM messages m
		WHERE queue_no = $2 AND group_no = $3 AND dlq = $4 AND channel_id = c.channel_id
			AND visible_at <= now() AND expire_at > now()
			AND (m.visible_at > '-infinity' OR m.id > coalesce((SELECT k.last_id FROM message_cursors k
				WHERE k.queue_no = $2 AND k.group_no = $3 AND k.channel_id = m.channel_id), 0))
		ORDER BY visible_at, id
		LIMIT $5
		FOR UPDATE SKIP LOCKED) m
), next AS (
	SELECT ctid, group_no, id FROM candidates ORDER BY rank, ord LIMIT $5
)
, leased AS (
UPDATE messages m SET
	dlq = m.dlq OR ($6 > 0 AND m.delivery_count >= $6),
	visible_at = CASE WHEN NOT m.dlq AND $6 > 0 AND m.delivery_count >= $6 THEN now()
		ELSE now() + make_interval(secs => $7) END,
	delivery_count = CASE WHEN NOT m.dlq AND $6 > 0 AND m.delivery_count >= $6 THEN m.delivery_count
		ELSE m.delivery_count + 1 END,
	lease_id = $8,
	lease_owner = $9
FROM next
WHERE m.ctid = ANY (ARRAY (SELECT ctid FROM next)) AND m.ctid = next.ctid AND m.queue_no = $2
RETURNING m.group_no, m.id, m.channel_id, m.visible_at, m.expire_at, m.delivery_count, m.content,
	m.attributes, m.metadata, m.time_created, m.dlq <> $4 AS dead_lettered, m.last_negative_code,
	m.last_negative_reason, m.message_group
)
SELECT l.group_no, l.id, l.channel_id, l.visible_at, l.expire_at, l.delivery_count,
	coalesce(l.content, b.content), coalesce(l.attributes, b.attributes), coalesce(l.metadata, b.metadata),
	l.time_created, l.dead_lettered, l.last_negative_code, l.last_negative_reason, l.message_group, l.content IS NULL
FROM leased l LEFT JOIN LATERAL (
	SELECT b.content, b.attributes, b.metadata FROM message_bodies b
	WHERE l.content IS NULL AND b.queue_no = $2 AND b.id = l.id) b ON true;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @channels, $2 @queue_no, $3 @group_no, $4 @dlq, $5 @limit, $6 @max_deliveries, $7 @visibility_seconds, $8 @lease_id, $9 @owner
-- messages.lease_dead_letter
WITH candidates AS (
	SELECT m.ctid, m.group_no, m.id, row_number() OVER (PARTITION BY c.ord ORDER BY m.visible_at, m.id) AS rank, c.ord
	FROM unnest($1::text[]) WITH ORDINALITY AS c(channel_id, ord)
	CROSS JOIN LATERAL (
		SELECT ctid, group_no, id, visible_at FROM messages m
		WHERE queue_no = $2 AND group_no = $3 AND dlq = $4 AND channel_id = c.channel_id
			AND visible_at <= now() AND expire_at > now()
			AND (m.visible_at > '-infinity' OR m.id > coalesce((SELECT k.last_id FROM message_cursors k
				WHERE k.queue_no = $2 AND k.group_no = $3 AND k.channel_id = m.channel_id), 0))
		ORDER BY visible_at, id
		LIMIT $5
		FOR UPDATE SKIP LOCKED) m
), next AS (
	SELECT ctid, group_no, id FROM candidates ORDER BY rank, ord LIMIT $5
)
, leased AS (
UPDATE messages m SET
	dlq = m.dlq OR ($6 > 0 AND m.delivery_count >= $6),
	visible_at = CASE WHEN NOT m.dlq AND $6 > 0 AND m.delivery_count >= $6 THEN now()
		ELSE now() + make_interval(secs => $7) END,
	delivery_count = CASE WHEN NOT m.dlq AND $6 > 0 AND m.delivery_count >= $6 THEN m.delivery_count
		ELSE m.delivery_count + 1 END,
	lease_id = $8,
	lease_owner = $9
FROM next
WHERE m.ctid = ANY (ARRAY (SELECT ctid FROM next)) AND m.ctid = next.ctid AND m.queue_no = $2
RETURNING m.group_no, m.id, m.channel_id, m.visible_at, m.expire_at, m.delivery_count, m.content,
	m.attributes, m.metadata, m.time_created, m.dlq <> $4 AS dead_lettered, m.last_negative_code,
	m.last_negative_reason, m.message_group
), heads_left AS (
	SELECT group_no, message_group FROM leased WHERE dead_lettered
), next_up AS MATERIALIZED (
	SELECT h.group_no, (SELECT n.id FROM messages n
			WHERE n.queue_no = $2 AND n.group_no = h.group_no AND n.message_group = h.message_group AND NOT n.dlq
				AND n.visible_at = 'infinity'
			ORDER BY n.id LIMIT 1) AS id
	FROM (SELECT DISTINCT group_no, message_group FROM heads_left WHERE message_group IS NOT NULL) h
), unblocked AS (
	UPDATE messages m SET visible_at = now()
	FROM next_up nx
	WHERE m.queue_no = $2 AND m.id = ANY (ARRAY (SELECT id FROM next_up)) AND m.id = nx.id
		AND m.group_no IS NOT DISTINCT FROM nx.group_no AND m.visible_at = 'infinity'
	RETURNING m.group_no, m.id
)
SELECT l.group_no, l.id, l.channel_id, l.visible_at, l.expire_at, l.delivery_count,
	coalesce(l.content, b.content), coalesce(l.attributes, b.attributes), coalesce(l.metadata, b.metadata),
	l.time_created, l.dead_lettered, l.last_negative_code, l.last_negative_reason, l.message_group, l.content IS NULL
FROM leased l LEFT JOIN LATERAL (
	SELECT b.content, b.attributes, b.metadata FROM message_bodies b
	WHERE l.content IS NULL AND b.queue_no = $2 AND b.id = l.id) b ON true;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @group_no, $3 @dlq, $4 @channels, $5 @limit, $6 @max_deliveries, $7 @visibility_seconds, $8 @lease_id, $9 @owner
-- messages.lease_one
WITH next AS (
	SELECT ctid, group_no, id FROM messages m
	WHERE queue_no = $1 AND group_no = $2 AND dlq = $3 AND channel_id = ($4::text[])[1]
		AND visible_at <= now() AND expire_at > now()
			AND (m.visible_at > '-infinity' OR m.id > coalesce((SELECT k.last_id FROM message_cursors k
				WHERE k.queue_no = $1 AND k.group_no = $2 AND k.channel_id = m.channel_id), 0))
	ORDER BY visible_at, id
	LIMIT $5
	FOR UPDATE SKIP LOCKED
)
, leased AS (
UPDATE messages m SET
	dlq = m.dlq OR ($6 > 0 AND m.delivery_count >= $6),
	visible_at = CASE WHEN NOT m.dlq AND $6 > 0 AND m.delivery_count >= $6 THEN now()
		ELSE now() + make_interval(secs => $7) END,
	delivery_count = CASE WHEN NOT m.dlq AND $6 > 0 AND m.delivery_count >= $6 THEN m.delivery_count
		ELSE m.delivery_count + 1 END,
	lease_id = $8,
	lease_owner = $9
FROM next
WHERE m.ctid = ANY (ARRAY (SELECT ctid FROM next)) AND m.ctid = next.ctid AND m.queue_no = $1
RETURNING m.group_no, m.id, m.channel_id, m.visible_at, m.expire_at, m.delivery_count, m.content,
	m.attributes, m.metadata, m.time_created, m.dlq <> $3 AS dead_lettered, m.last_negative_code,
	m.last_negative_reason, m.message_group
)
SELECT l.group_no, l.id, l.channel_id, l.visible_at, l.expire_at, l.delivery_count,
	coalesce(l.content, b.content), coalesce(l.attributes, b.attributes), coalesce(l.metadata, b.metadata),
	l.time_created, l.dead_lettered, l.last_negative_code, l.last_negative_reason, l.message_group, l.content IS NULL
FROM leased l LEFT JOIN LATERAL (
	SELECT b.content, b.attributes, b.metadata FROM message_bodies b
	WHERE l.content IS NULL AND b.queue_no = $1 AND b.id = l.id) b ON true;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @group_no, $3 @dlq, $4 @channels, $5 @limit, $6 @max_deliveries, $7 @visibility_seconds, $8 @lease_id, $9 @owner
-- messages.lease_one_dead_letter
WITH next AS (
	SELECT ctid, group_no, id FROM messages m
	WHERE queue_no = $1 AND group_no = $2 AND dlq = $3 AND channel_id = ($4::text[])[1]
		AND visible_at <= now() AND expire_at > now()
			AND (m.visible_at > '-infinity' OR m.id > coalesce((SELECT k.last_id FROM message_cursors k
				WHERE k.queue_no = $1 AND k.group_no = $2 AND k.channel_id = m.channel_id), 0))
	ORDER BY visible_at, id
	LIMIT $5
	FOR UPDATE SKIP LOCKED
)
, leased AS (
UPDATE messages m SET
	dlq = m.dlq OR ($6 > 0 AND m.delivery_count >= $6),
	visible_at = CASE WHEN NOT m.dlq AND $6 > 0 AND m.delivery_count >= $6 THEN now()
		ELSE now() + make_interval(secs => $7) END,
	delivery_count = CASE WHEN NOT m.dlq AND $6 > 0 AND m.delivery_count >= $6 THEN m.delivery_count
		ELSE m.delivery_count + 1 END,
	lease_id = $8,
	lease_owner = $9
FROM next
WHERE m.ctid = ANY (ARRAY (SELECT ctid FROM next)) AND m.ctid = next.ctid AND m.queue_no = $1
RETURNING m.group_no, m.id, m.channel_id, m.visible_at, m.expire_at, m.delivery_count, m.content,
	m.attributes, m.metadata, m.time_created, m.dlq <> $3 AS dead_lettered, m.last_negative_code,
	m.last_negative_reason, m.message_group
), heads_left AS (
	SELECT group_no, message_group FROM leased WHERE dead_lettered
), next_up AS MATERIALIZED (
	SELECT h.group_no, (SELECT n.id FROM messages n
			WHERE n.queue_no = $1 AND n.group_no = h.group_no AND n.message_group = h.message_group AND NOT n.dlq
				AND n.visible_at = 'infinity'
			ORDER BY n.id LIMIT 1) AS id
	FROM (SELECT DISTINCT group_no, message_group FROM heads_left WHERE message_group IS NOT NULL) h
), unblocked AS (
	UPDATE messages m SET visible_at = now()
	FROM next_up nx
	WHERE m.queue_no = $1 AND m.id = ANY (ARRAY (SELECT id FROM next_up)) AND m.id = nx.id
		AND m.group_no IS NOT DISTINCT FROM nx.group_no AND m.visible_at = 'infinity'
	RETURNING m.group_no, m.id
)
SELECT l.group_no, l.id, l.channel_id, l.visible_at, l.expire_at, l.delivery_count,
	coalesce(l.content, b.content), coalesce(l.attributes, b.attributes), coalesce(l.metadata, b.metadata),
	l.time_created, l.dead_lettered, l.last_negative_code, l.last_negative_reason, l.message_group, l.content IS NULL
FROM leased l LEFT JOIN LATERAL (
	SELECT b.content, b.attributes, b.metadata FROM message_bodies b
	WHERE l.content IS NULL AND b.queue_no = $1 AND b.id = l.id) b ON true;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @group_no, $3 @dlq, $4 @channels, $5 @limit, $6 @max_deliveries, $7 @visibility_seconds, $8 @lease_id, $9 @owners
-- messages.lease_one_owners
WITH picked AS (
	SELECT ctid, group_no, id FROM messages m
	WHERE queue_no = $1 AND group_no = $2 AND dlq = $3 AND channel_id = ($4::text[])[1]
		AND visible_at <= now() AND expire_at > now()
			AND (m.visible_at > '-infinity' OR m.id > coalesce((SELECT k.last_id FROM message_cursors k
				WHERE k.queue_no = $1 AND k.group_no = $2 AND k.channel_id = m.channel_id), 0))
	ORDER BY visible_at, id
	LIMIT $5
	FOR UPDATE SKIP LOCKED
), next AS (
	SELECT ctid, group_no, id, row_number() OVER (ORDER BY id) AS slot FROM picked
)
, leased AS (
UPDATE messages m SET
	dlq = m.dlq OR ($6 > 0 AND m.delivery_count >= $6),
	visible_at = CASE WHEN NOT m.dlq AND $6 > 0 AND m.delivery_count >= $6 THEN now()
		ELSE now() + make_interval(secs => $7) END,
	delivery_count = CASE WHEN NOT m.dlq AND $6 > 0 AND m.delivery_count >= $6 THEN m.delivery_count
		ELSE m.delivery_count + 1 END,
	lease_id = $8,
	lease_owner = ($9::text[])[next.slot]
FROM next
WHERE m.ctid = ANY (ARRAY (SELECT ctid FROM next)) AND m.ctid = next.ctid AND m.queue_no = $1
RETURNING m.group_no, m.id, m.channel_id, m.visible_at, m.expire_at, m.delivery_count, m.content,
	m.attributes, m.metadata, m.time_created, m.dlq <> $3 AS dead_lettered, m.last_negative_code,
	m.last_negative_reason, m.message_group
)
SELECT l.group_no, l.id, l.channel_id, l.visible_at, l.expire_at, l.delivery_count,
	coalesce(l.content, b.content), coalesce(l.attributes, b.attributes), coalesce(l.metadata, b.metadata),
	l.time_created, l.dead_lettered, l.last_negative_code, l.last_negative_reason, l.message_group, l.content IS NULL
FROM leased l LEFT JOIN LATERAL (
	SELECT b.content, b.attributes, b.metadata FROM message_bodies b
	WHERE l.content IS NULL AND b.queue_no = $1 AND b.id = l.id) b ON true;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @group_no, $3 @dlq, $4 @channels, $5 @limit, $6 @max_deliveries, $7 @visibility_seconds, $8 @lease_id, $9 @owners
-- messages.lease_one_owners_dead_letter
WITH picked AS (
	SELECT ctid, group_no, id FROM messages m
	WHERE queue_no = $1 AND group_no = $2 AND dlq = $3 AND channel_id = ($4::text[])[1]
		AND visible_at <= now() AND expire_at > now()
			AND (m.visible_at > '-infinity' OR m.id > coalesce((SELECT k.last_id FROM message_cursors k
				WHERE k.queue_no = $1 AND k.group_no = $2 AND k.channel_id = m.channel_id), 0))
	ORDER BY visible_at, id
	LIMIT $5
	FOR UPDATE SKIP LOCKED
), next AS (
	SELECT ctid, group_no, id, row_number() OVER (ORDER BY id) AS slot FROM picked
)
, leased AS (
UPDATE messages m SET
	dlq = m.dlq OR ($6 > 0 AND m.delivery_count >= $6),
	visible_at = CASE WHEN NOT m.dlq AND $6 > 0 AND m.delivery_count >= $6 THEN now()
		ELSE now() + make_interval(secs => $7) END,
	delivery_count = CASE WHEN NOT m.dlq AND $6 > 0 AND m.delivery_count >= $6 THEN m.delivery_count
		ELSE m.delivery_count + 1 END,
	lease_id = $8,
	lease_owner = ($9::text[])[next.slot]
FROM next
WHERE m.ctid = ANY (ARRAY (SELECT ctid FROM next)) AND m.ctid = next.ctid AND m.queue_no = $1
RETURNING m.group_no, m.id, m.channel_id, m.visible_at, m.expire_at, m.delivery_count, m.content,
	m.attributes, m.metadata, m.time_created, m.dlq <> $3 AS dead_lettered, m.last_negative_code,
	m.last_negative_reason, m.message_group
), heads_left AS (
	SELECT group_no, message_group FROM leased WHERE dead_lettered
), next_up AS MATERIALIZED (
	SELECT h.group_no, (SELECT n.id FROM messages n
			WHERE n.queue_no = $1 AND n.group_no = h.group_no AND n.message_group = h.message_group AND NOT n.dlq
				AND n.visible_at = 'infinity'
			ORDER BY n.id LIMIT 1) AS id
	FROM (SELECT DISTINCT group_no, message_group FROM heads_left WHERE message_group IS NOT NULL) h
), unblocked AS (
	UPDATE messages m SET visible_at = now()
	FROM next_up nx
	WHERE m.queue_no = $1 AND m.id = ANY (ARRAY (SELECT id FROM next_up)) AND m.id = nx.id
		AND m.group_no IS NOT DISTINCT FROM nx.group_no AND m.visible_at = 'infinity'
	RETURNING m.group_no, m.id
)
SELECT l.group_no, l.id, l.channel_id, l.visible_at, l.expire_at, l.delivery_count,
	coalesce(l.content, b.content), coalesce(l.attributes, b.attributes), coalesce(l.metadata, b.metadata),
	l.time_created, l.dead_lettered, l.last_negative_code, l.last_negative_reason, l.message_group, l.content IS NULL
FROM leased l LEFT JOIN LATERAL (
	SELECT b.content, b.attributes, b.metadata FROM message_bodies b
	WHERE l.content IS NULL AND b.queue_no = $1 AND b.id = l.id) b ON true;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @group_no, $3 @dlq, $4 @channels, $5 @queue_id, $6 @consumer, $7 @limit, $8 @max_deliveries, $9 @visibility_seconds, $10 @lease_id
-- messages.lease_as_consumer
WITH next AS (
	SELECT ctid, group_no, id FROM messages m
	WHERE queue_no = $1 AND group_no = $2 AND dlq = $3 AND ($4::text[] IS NULL OR channel_id = ANY ($4))
		AND visible_at <= now() AND expire_at > now()
			AND (m.visible_at > '-infinity' OR m.id > coalesce((SELECT k.last_id FROM message_cursors k
				WHERE k.queue_no = $1 AND k.group_no = $2 AND k.channel_id = m.channel_id), 0))
		AND EXISTS (SELECT 1 FROM consumers c WHERE c.queue_id = $5 AND c.group_no = $2 AND c.consumer_id = $6
			AND c.active_since IS NOT NULL AND c.last_seen = now())
	ORDER BY id
	LIMIT $7
	FOR UPDATE OF m SKIP LOCKED
)
, leased AS (
UPDATE messages m SET
	dlq = m.dlq OR ($8 > 0 AND m.delivery_count >= $8),
	visible_at = CASE WHEN NOT m.dlq AND $8 > 0 AND m.delivery_count >= $8 THEN now()
		ELSE now() + make_interval(secs => $9) END,
	delivery_count = CASE WHEN NOT m.dlq AND $8 > 0 AND m.delivery_count >= $8 THEN m.delivery_count
		ELSE m.delivery_count + 1 END,
	lease_id = $10,
	lease_owner = $6
FROM next
WHERE m.ctid = ANY (ARRAY (SELECT ctid FROM next)) AND m.ctid = next.ctid AND m.queue_no = $1
RETURNING m.group_no, m.id, m.channel_id, m.visible_at, m.expire_at, m.delivery_count, m.content,
	m.attributes, m.metadata, m.time_created, m.dlq <> $3 AS dead_lettered, m.last_negative_code,
	m.last_negative_reason, m.message_group
)
SELECT l.group_no, l.id, l.channel_id, l.visible_at, l.expire_at, l.delivery_count,
	coalesce(l.content, b.content), coalesce(l.attributes, b.attributes), coalesce(l.metadata, b.metadata),
	l.time_created, l.dead_lettered, l.last_negative_code, l.last_negative_reason, l.message_group, l.content IS NULL
FROM leased l LEFT JOIN LATERAL (
	SELECT b.content, b.attributes, b.metadata FROM message_bodies b
	WHERE l.content IS NULL AND b.queue_no = $1 AND b.id = l.id) b ON true;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @group_no, $3 @dlq, $4 @channels, $5 @queue_id, $6 @consumer, $7 @limit, $8 @max_deliveries, $9 @visibility_seconds, $10 @lease_id
-- messages.lease_as_consumer_dead_letter
WITH next AS (
	SELECT ctid, group_no, id FROM messages m
	WHERE queue_no = $1 AND group_no = $2 AND dlq = $3 AND ($4::text[] IS NULL OR channel_id = ANY ($4))
		AND visible_at <= now() AND expire_at > now()
			AND (m.visible_at > '-infinity' OR m.id > coalesce((SELECT k.last_id FROM message_cursors k
				WHERE k.queue_no = $1 AND k.group_no = $2 AND k.channel_id = m.channel_id), 0))
		AND EXISTS (SELECT 1 FROM consumers c WHERE c.queue_id = $5 AND c.group_no = $2 AND c.consumer_id = $6
			AND c.active_since IS NOT NULL AND c.last_seen = now())
	ORDER BY id
	LIMIT $7
	FOR UPDATE OF m SKIP LOCKED
)
, leased AS (
UPDATE messages m SET
	dlq = m.dlq OR ($8 > 0 AND m.delivery_count >= $8),
	visible_at = CASE WHEN NOT m.dlq AND $8 > 0 AND m.delivery_count >= $8 THEN now()
		ELSE now() + make_interval(secs => $9) END,
	delivery_count = CASE WHEN NOT m.dlq AND $8 > 0 AND m.delivery_count >= $8 THEN m.delivery_count
		ELSE m.delivery_count + 1 END,
	lease_id = $10,
	lease_owner = $6
FROM next
WHERE m.ctid = ANY (ARRAY (SELECT ctid FROM next)) AND m.ctid = next.ctid AND m.queue_no = $1
RETURNING m.group_no, m.id, m.channel_id, m.visible_at, m.expire_at, m.delivery_count, m.content,
	m.attributes, m.metadata, m.time_created, m.dlq <> $3 AS dead_lettered, m.last_negative_code,
	m.last_negative_reason, m.message_group
), heads_left AS (
	SELECT group_no, message_group FROM leased WHERE dead_lettered
), next_up AS MATERIALIZED (
	SELECT h.group_no, (SELECT n.id FROM messages n
			WHERE n.queue_no = $1 AND n.group_no = h.group_no AND n.message_group = h.message_group AND NOT n.dlq
				AND n.visible_at = 'infinity'
			ORDER BY n.id LIMIT 1) AS id
	FROM (SELECT DISTINCT group_no, message_group FROM heads_left WHERE message_group IS NOT NULL) h
), unblocked AS (
	UPDATE messages m SET visible_at = now()
	FROM next_up nx
	WHERE m.queue_no = $1 AND m.id = ANY (ARRAY (SELECT id FROM next_up)) AND m.id = nx.id
		AND m.group_no IS NOT DISTINCT FROM nx.group_no AND m.visible_at = 'infinity'
	RETURNING m.group_no, m.id
)
SELECT l.group_no, l.id, l.channel_id, l.visible_at, l.expire_at, l.delivery_count,
	coalesce(l.content, b.content), coalesce(l.attributes, b.attributes), coalesce(l.metadata, b.metadata),
	l.time_created, l.dead_lettered, l.last_negative_code, l.last_negative_reason, l.message_group, l.content IS NULL
FROM leased l LEFT JOIN LATERAL (
	SELECT b.content, b.attributes, b.metadata FROM message_bodies b
	WHERE l.content IS NULL AND b.queue_no = $1 AND b.id = l.id) b ON true;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @group_no, $3 @channels, $4 @dlq, $5 @limit, $6 @visibility_seconds, $7 @lease_id, $8 @max_deliveries, $9 @owner
-- messages.lease_cursor
WITH samples AS (
	SELECT s.id, s.xid, s.k, s.xid < pg_snapshot_xmin(pg_current_snapshot()) AS matured
	FROM message_cursors c, unnest(c.sample_ids, c.sample_xids) WITH ORDINALITY AS s(id, xid, k)
	WHERE c.queue_no = $1 AND c.group_no = $2 AND c.channel_id = ($3::text[])[1]
), cur AS (
	SELECT coalesce(c.last_id, 0) AS last_id,
		greatest(coalesce(c.safe_id, 0), (SELECT max(s.id) FROM samples s WHERE s.matured)) AS safe_id,
		ARRAY (SELECT s.id FROM samples s WHERE NOT s.matured ORDER BY s.k) AS pending_ids,
		ARRAY (SELECT s.xid FROM samples s WHERE NOT s.matured ORDER BY s.k) AS pending_xids
	FROM (SELECT) one LEFT JOIN message_cursors c
		ON c.queue_no = $1 AND c.group_no = $2 AND c.channel_id = ($3::text[])[1]
), due AS (
	SELECT ctid, group_no, id FROM messages m
	WHERE queue_no = $1 AND group_no = $2 AND dlq = $4 AND channel_id = ($3::text[])[1]
		AND visible_at > '-infinity' AND visible_at <= now() AND expire_at > now()
	ORDER BY visible_at, id
	LIMIT $5
	FOR UPDATE SKIP LOCKED
), picked AS (
	SELECT m.group_no, m.id, m.channel_id, now() + make_interval(secs => $6) AS visible_at,
		m.expire_at, 1 AS delivery_count, m.content, m.attributes, m.metadata, m.time_created, false AS dead_lettered,
		m.last_negative_code, m.last_negative_reason, m.message_group
	FROM messages m
	WHERE m.queue_no = $1 AND m.group_no = $2 AND m.dlq = $4 AND m.channel_id = ($3::text[])[1]
		AND m.visible_at = '-infinity' AND m.id > (SELECT last_id FROM cur) AND m.id <= (SELECT safe_id FROM cur)
		AND m.expire_at > now()
	ORDER BY m.id
	LIMIT (SELECT $5 - count(*) FROM due)
), beyond AS (
	SELECT ctid, group_no, id FROM messages m
	WHERE m.queue_no = $1 AND m.group_no = $2 AND m.dlq = $4 AND m.channel_id = ($3::text[])[1]
		AND m.visible_at = '-infinity' AND m.id > (SELECT greatest(last_id, safe_id) FROM cur) AND m.expire_at > now()
	ORDER BY m.id
	LIMIT (SELECT $5 - (SELECT count(*) FROM due) - count(*) FROM picked)
	FOR UPDATE SKIP LOCKED
), advanced AS (
	INSERT INTO message_cursors AS c (queue_no, group_no, channel_id, last_id, safe_id, sample_ids, sample_xids)
	SELECT $1, $2, ($3::text[])[1], coalesce((SELECT max(id) FROM picked), cur.last_id), cur.safe_id,
		CASE WHEN cardinality(cur.pending_ids) < 8 THEN cur.pending_ids || current_setting('ferry.sequence_position')::bigint
			ELSE cur.pending_ids END,
		CASE WHEN cardinality(cur.pending_xids) < 8 THEN cur.pending_xids || pg_current_xact_id() ELSE cur.pending_xids END
	FROM cur
	ON CONFLICT (queue_no, group_no, channel_id) DO UPDATE SET last_id = excluded.last_id, safe_id = excluded.safe_id,
		sample_ids = excluded.sample_ids, sample_xids = excluded.sample_xids
), ranged AS (
	INSERT INTO message_ranges (queue_no, lease_id, group_no, channel_id, from_id, to_id, visible_at)
	SELECT $1, $7, $2, ($3::text[])[1], min(id), max(id), now() + make_interval(secs => $6)
	FROM picked HAVING count(*) > 0
), next AS (
	SELECT ctid, group_no, id FROM due UNION ALL SELECT ctid, group_no, id FROM beyond
)
, leased AS (
UPDATE messages m SET
	dlq = m.dlq OR ($8 > 0 AND m.delivery_count >= $8),
	visible_at = CASE WHEN NOT m.dlq AND $8 > 0 AND m.delivery_count >= $8 THEN now()
		ELSE now() + make_interval(secs => $6) END,
	delivery_count = CASE WHEN NOT m.dlq AND $8 > 0 AND m.delivery_count >= $8 THEN m.delivery_count
		ELSE m.delivery_count + 1 END,
	lease_id = $7,
	lease_owner = $9
FROM next
WHERE m.ctid = ANY (ARRAY (SELECT ctid FROM next)) AND m.ctid = next.ctid AND m.queue_no = $1
RETURNING m.group_no, m.id, m.channel_id, m.visible_at, m.expire_at, m.delivery_count, m.content,
	m.attributes, m.metadata, m.time_created, m.dlq <> $4 AS dead_lettered, m.last_negative_code,
	m.last_negative_reason, m.message_group
)
SELECT l.group_no, l.id, l.channel_id, l.visible_at, l.expire_at, l.delivery_count,
	coalesce(l.content, b.content), coalesce(l.attributes, b.attributes), coalesce(l.metadata, b.metadata),
	l.time_created, l.dead_lettered, l.last_negative_code, l.last_negative_reason, l.message_group, l.content IS NULL
FROM (SELECT * FROM leased UNION ALL SELECT * FROM picked) l LEFT JOIN LATERAL (
	SELECT b.content, b.attributes, b.metadata FROM message_bodies b
	WHERE l.content IS NULL AND b.queue_no = $1 AND b.id = l.id) b ON true;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @group_no, $3 @channels, $4 @dlq, $5 @limit, $6 @visibility_seconds, $7 @lease_id, $8 @max_deliveries, $9 @owner
-- messages.lease_cursor_dead_letter
WITH samples AS (
	SELECT s.id, s.xid, s.k, s.xid < pg_snapshot_xmin(pg_current_snapshot()) AS matured
	FROM message_cursors c, unnest(c.sample_ids, c.sample_xids) WITH ORDINALITY AS s(id, xid, k)
	WHERE c.queue_no = $1 AND c.group_no = $2 AND c.channel_id = ($3::text[])[1]
), cur AS (
	SELECT coalesce(c.last_id, 0) AS last_id,
		greatest(coalesce(c.safe_id, 0), (SELECT max(s.id) FROM samples s WHERE s.matured)) AS safe_id,
		ARRAY (SELECT s.id FROM samples s WHERE NOT s.matured ORDER BY s.k) AS pending_ids,
		ARRAY (SELECT s.xid FROM samples s WHERE NOT s.matured ORDER BY s.k) AS pending_xids
	FROM (SELECT) one LEFT JOIN message_cursors c
		ON c.queue_no = $1 AND c.group_no = $2 AND c.channel_id = ($3::text[])[1]
), due AS (
	SELECT ctid, group_no, id FROM messages m
	WHERE queue_no = $1 AND group_no = $2 AND dlq = $4 AND channel_id = ($3::text[])[1]
		AND visible_at > '-infinity' AND visible_at <= now() AND expire_at > now()
	ORDER BY visible_at, id
	LIMIT $5
	FOR UPDATE SKIP LOCKED
), picked AS (
	SELECT m.group_no, m.id, m.channel_id, now() + make_interval(secs => $6) AS visible_at,
		m.expire_at, 1 AS delivery_count, m.content, m.attributes, m.metadata, m.time_created, false AS dead_lettered,
		m.last_negative_code, m.last_negative_reason, m.message_group
	FROM messages m
	WHERE m.queue_no = $1 AND m.group_no = $2 AND m.dlq = $4 AND m.channel_id = ($3::text[])[1]
		AND m.visible_at = '-infinity' AND m.id > (SELECT last_id FROM cur) AND m.id <= (SELECT safe_id FROM cur)
		AND m.expire_at > now()
	ORDER BY m.id
	LIMIT (SELECT $5 - count(*) FROM due)
), beyond AS (
	SELECT ctid, group_no, id FROM messages m
	WHERE m.queue_no = $1 AND m.group_no = $2 AND m.dlq = $4 AND m.channel_id = ($3::text[])[1]
		AND m.visible_at = '-infinity' AND m.id > (SELECT greatest(last_id, safe_id) FROM cur) AND m.expire_at > now()
	ORDER BY m.id
	LIMIT (SELECT $5 - (SELECT count(*) FROM due) - count(*) FROM picked)
	FOR UPDATE SKIP LOCKED
), advanced AS (
	INSERT INTO message_cursors AS c (queue_no, group_no, channel_id, last_id, safe_id, sample_ids, sample_xids)
	SELECT $1, $2, ($3::text[])[1], coalesce((SELECT max(id) FROM picked), cur.last_id), cur.safe_id,
		CASE WHEN cardinality(cur.pending_ids) < 8 THEN cur.pending_ids || current_setting('ferry.sequence_position')::bigint
			ELSE cur.pending_ids END,
		CASE WHEN cardinality(cur.pending_xids) < 8 THEN cur.pending_xids || pg_current_xact_id() ELSE cur.pending_xids END
	FROM cur
	ON CONFLICT (queue_no, group_no, channel_id) DO UPDATE SET last_id = excluded.last_id, safe_id = excluded.safe_id,
		sample_ids = excluded.sample_ids, sample_xids = excluded.sample_xids
), ranged AS (
	INSERT INTO message_ranges (queue_no, lease_id, group_no, channel_id, from_id, to_id, visible_at)
	SELECT $1, $7, $2, ($3::text[])[1], min(id), max(id), now() + make_interval(secs => $6)
	FROM picked HAVING count(*) > 0
), next AS (
	SELECT ctid, group_no, id FROM due UNION ALL SELECT ctid, group_no, id FROM beyond
)
, leased AS (
UPDATE messages m SET
	dlq = m.dlq OR ($8 > 0 AND m.delivery_count >= $8),
	visible_at = CASE WHEN NOT m.dlq AND $8 > 0 AND m.delivery_count >= $8 THEN now()
		ELSE now() + make_interval(secs => $6) END,
	delivery_count = CASE WHEN NOT m.dlq AND $8 > 0 AND m.delivery_count >= $8 THEN m.delivery_count
		ELSE m.delivery_count + 1 END,
	lease_id = $7,
	lease_owner = $9
FROM next
WHERE m.ctid = ANY (ARRAY (SELECT ctid FROM next)) AND m.ctid = next.ctid AND m.queue_no = $1
RETURNING m.group_no, m.id, m.channel_id, m.visible_at, m.expire_at, m.delivery_count, m.content,
	m.attributes, m.metadata, m.time_created, m.dlq <> $4 AS dead_lettered, m.last_negative_code,
	m.last_negative_reason, m.message_group
), heads_left AS (
	SELECT group_no, message_group FROM leased WHERE dead_lettered
), next_up AS MATERIALIZED (
	SELECT h.group_no, (SELECT n.id FROM messages n
			WHERE n.queue_no = $1 AND n.group_no = h.group_no AND n.message_group = h.message_group AND NOT n.dlq
				AND n.visible_at = 'infinity'
			ORDER BY n.id LIMIT 1) AS id
	FROM (SELECT DISTINCT group_no, message_group FROM heads_left WHERE message_group IS NOT NULL) h
), unblocked AS (
	UPDATE messages m SET visible_at = now()
	FROM next_up nx
	WHERE m.queue_no = $1 AND m.id = ANY (ARRAY (SELECT id FROM next_up)) AND m.id = nx.id
		AND m.group_no IS NOT DISTINCT FROM nx.group_no AND m.visible_at = 'infinity'
	RETURNING m.group_no, m.id
)
SELECT l.group_no, l.id, l.channel_id, l.visible_at, l.expire_at, l.delivery_count,
	coalesce(l.content, b.content), coalesce(l.attributes, b.attributes), coalesce(l.metadata, b.metadata),
	l.time_created, l.dead_lettered, l.last_negative_code, l.last_negative_reason, l.message_group, l.content IS NULL
FROM (SELECT * FROM leased UNION ALL SELECT * FROM picked) l LEFT JOIN LATERAL (
	SELECT b.content, b.attributes, b.metadata FROM message_bodies b
	WHERE l.content IS NULL AND b.queue_no = $1 AND b.id = l.id) b ON true;

-- $1 @queue_id, $2 @group_nos, $3 @message_groups
-- messages.lock_groups
SELECT pg_advisory_xact_lock(k) FROM (
	SELECT DISTINCT hashtextextended($1 || '/' || u.group_no || '/' || u.message_group, 0) AS k
	FROM unnest($2::int[], $3::text[]) AS u(group_no, message_group) ORDER BY 1) keys;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_id, $2 @queue_no, $3 @group_nos, $4 @ids
-- messages.lock_receipt_groups
SELECT pg_advisory_xact_lock(k) FROM (
	SELECT DISTINCT k FROM (
		SELECT (SELECT hashtextextended($1 || '/' || m.group_no || '/' || m.message_group, 0) FROM messages m
			WHERE m.queue_no = $2 AND m.id = r.id AND m.group_no IS NOT DISTINCT FROM r.group_no
				AND m.message_group IS NOT NULL AND NOT m.dlq) AS k
		FROM unnest($3::int[], $4::bigint[]) AS r(group_no, id)) receipt_keys
	WHERE k IS NOT NULL ORDER BY 1) keys;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @group_nos, $2 @message_groups, $3 @queue_no
-- messages.unblock_groups
WITH heads_left AS (
	SELECT k.group_no, k.message_group FROM unnest($1::int[], $2::text[]) AS k(group_no, message_group)
	WHERE NOT EXISTS (SELECT 1 FROM messages a WHERE a.queue_no = $3 AND a.group_no = k.group_no
		AND a.message_group = k.message_group AND NOT a.dlq AND a.visible_at <> 'infinity')
), next_up AS MATERIALIZED (
	SELECT h.group_no, (SELECT n.id FROM messages n
			WHERE n.queue_no = $3 AND n.group_no = h.group_no AND n.message_group = h.message_group AND NOT n.dlq
				AND n.visible_at = 'infinity'
			ORDER BY n.id LIMIT 1) AS id
	FROM (SELECT DISTINCT group_no, message_group FROM heads_left WHERE message_group IS NOT NULL) h
), unblocked AS (
	UPDATE messages m SET visible_at = now()
	FROM next_up nx
	WHERE m.queue_no = $3 AND m.id = ANY (ARRAY (SELECT id FROM next_up)) AND m.id = nx.id
		AND m.group_no IS NOT DISTINCT FROM nx.group_no AND m.visible_at = 'infinity'
	RETURNING m.group_no, m.id
)
SELECT count(*) FROM unblocked;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @group_no, $3 @limit
-- messages.redrive_pick
SELECT id, message_group FROM messages WHERE queue_no = $1 AND group_no = $2 AND dlq
ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @ids, $2 @message_groups, $3 @queue_no, $4 @group_no
-- messages.redrive
WITH picked AS (
	SELECT p.id, p.message_group, row_number() OVER (PARTITION BY p.message_group ORDER BY p.id) AS position
	FROM unnest($1::bigint[], $2::text[]) AS p(id, message_group)
), queued AS (
	SELECT k.message_group FROM (SELECT DISTINCT message_group FROM picked WHERE message_group IS NOT NULL) k
	CROSS JOIN LATERAL (
		SELECT 1 FROM messages m
		WHERE m.queue_no = $3 AND m.group_no = $4 AND m.message_group = k.message_group AND NOT m.dlq
		ORDER BY m.id DESC LIMIT 1
		FOR KEY SHARE) last
)
UPDATE messages m SET dlq = false, delivery_count = 0, lease_id = 0,
	visible_at = CASE WHEN p.message_group IS NOT NULL AND (p.position > 1 OR q.message_group IS NOT NULL)
		THEN 'infinity'::timestamptz ELSE now() END
FROM picked p LEFT JOIN queued q ON q.message_group = p.message_group
WHERE m.queue_no = $3 AND m.id = ANY ($1) AND m.id = p.id AND m.group_no IS NOT DISTINCT FROM $4 AND m.dlq;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @channel_ids, $2 @delays, $3 @sizes, $4 @contents, $5 @attributes, $6 @metadata, $7 @shared, $8 @queue_no, $9 @retention_seconds, $10 @copy_ords, $11 @copy_group_nos
-- messages.insert
WITH input AS (
	SELECT nextval('messages_id_seq') AS id, u.*
	FROM unnest($1::text[], $2::int[], $3::int[], $4::text[], $5::json[], $6::json[], $7::bool[])
		WITH ORDINALITY AS u(channel_id, delay, size_bytes, content, attributes, metadata, shared, ord)
	WHERE pg_current_xact_id() IS NOT NULL
	ORDER BY u.ord
), bodies AS (
	INSERT INTO message_bodies (queue_no, id, content, attributes, metadata)
	SELECT $8, id, content, attributes, metadata FROM input WHERE shared
), ins AS (
	INSERT INTO messages (queue_no, group_no, id, channel_id, visible_at, expire_at, size_bytes, content, attributes, metadata)
	SELECT $8, g.group_no, input.id, input.channel_id,
		CASE WHEN input.delay = 0 THEN '-infinity' ELSE now() + make_interval(secs => input.delay) END,
		now() + make_interval(secs => $9), input.size_bytes,
		CASE WHEN NOT input.shared THEN input.content END, CASE WHEN NOT input.shared THEN input.attributes END,
		CASE WHEN NOT input.shared THEN input.metadata END
	FROM input JOIN unnest($10::int[], $11::int[]) AS g(ord, group_no) ON g.ord = input.ord)
SELECT id, ord, now() + make_interval(secs => $9) FROM input;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @retention_seconds, $3 @channel_ids, $4 @delays, $5 @sizes, $6 @contents, $7 @attributes, $8 @metadata, $9 @group_nos
-- messages.insert_one_copy
INSERT INTO messages (queue_no, group_no, id, channel_id, visible_at, expire_at, size_bytes, content, attributes, metadata)
SELECT $1, u.group_no, nextval('messages_id_seq'), u.channel_id,
	CASE WHEN u.delay = 0 THEN '-infinity' ELSE now() + make_interval(secs => u.delay) END,
	now() + make_interval(secs => $2), u.size_bytes, u.content, u.attributes, u.metadata
FROM unnest($3::text[], $4::int[], $5::int[], $6::text[], $7::json[], $8::json[], $9::int[])
	AS u(channel_id, delay, size_bytes, content, attributes, metadata, group_no)
WHERE pg_current_xact_id() IS NOT NULL
RETURNING id, expire_at;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @channel_ids, $2 @delays, $3 @sizes, $4 @contents, $5 @attributes, $6 @metadata, $7 @message_groups, $8 @shared, $9 @queue_no, $10 @copy_ords, $11 @copy_group_nos, $12 @retention_seconds
-- messages.insert_ordered
WITH input AS (
	SELECT nextval('messages_id_seq') AS id, u.*
	FROM unnest($1::text[], $2::int[], $3::int[], $4::text[], $5::json[], $6::json[], $7::text[], $8::bool[])
		WITH ORDINALITY AS u(channel_id, delay, size_bytes, content, attributes, metadata, message_group, shared, ord)
	WHERE pg_current_xact_id() IS NOT NULL
	ORDER BY u.ord
), bodies AS (
	INSERT INTO message_bodies (queue_no, id, content, attributes, metadata)
	SELECT $9, id, content, attributes, metadata FROM input WHERE shared
), copies AS (
	SELECT input.*, g.group_no,
		row_number() OVER (PARTITION BY g.group_no, input.message_group ORDER BY input.id) AS position
	FROM input JOIN unnest($10::int[], $11::int[]) AS g(ord, group_no) ON g.ord = input.ord
), queued AS (
	SELECT k.group_no, k.message_group FROM (
		SELECT DISTINCT group_no, message_group FROM copies WHERE message_group IS NOT NULL) k
	CROSS JOIN LATERAL (
		SELECT 1 FROM messages m
		WHERE m.queue_no = $9 AND m.group_no = k.group_no AND m.message_group = k.message_group AND NOT m.dlq
		ORDER BY m.id DESC LIMIT 1
		FOR KEY SHARE) last
), ins AS (
	INSERT INTO messages (queue_no, group_no, id, channel_id, visible_at, expire_at, size_bytes, content,
		attributes, metadata, message_group)
	SELECT $9, c.group_no, c.id, c.channel_id,
		CASE WHEN c.message_group IS NOT NULL AND (c.position > 1 OR q.group_no IS NOT NULL) THEN 'infinity'::timestamptz
			WHEN c.message_group IS NULL AND c.delay = 0 THEN '-infinity'
			ELSE now() + make_interval(secs => c.delay) END,
		now() + make_interval(secs => $12), c.size_bytes, CASE WHEN NOT c.shared THEN c.content END,
		CASE WHEN NOT c.shared THEN c.attributes END, CASE WHEN NOT c.shared THEN c.metadata END, c.message_group
	FROM copies c LEFT JOIN queued q ON q.group_no = c.group_no AND q.message_group = c.message_group)
SELECT id, ord, now() + make_interval(secs => $12) FROM input;

-- $1 @queue_id, $2 @window_seconds, $3 @dedup_ids
-- dedup.claim
INSERT INTO message_dedup_keys (queue_id, dedup_id, message_id, expire_at)
SELECT $1, d, 0, now() + make_interval(secs => $2) FROM unnest($3::text[]) AS d
ON CONFLICT (queue_id, dedup_id) DO UPDATE SET message_id = 0, expire_at = excluded.expire_at
	WHERE message_dedup_keys.expire_at <= now()
RETURNING dedup_id;

-- $1 @queue_no, $2 @group_nos, $3 @window_seconds, $4 @retention_seconds, $5 @queue_id, $6 @dedup_ids
-- dedup.lookup
SELECT k.dedup_id, k.message_id, coalesce(
		(SELECT m.expire_at FROM messages m WHERE m.queue_no = $1 AND m.group_no = ANY ($2::int[]) AND m.id = k.message_id LIMIT 1),
		k.expire_at - make_interval(secs => $3) + make_interval(secs => $4))
FROM message_dedup_keys k WHERE k.queue_id = $5 AND k.dedup_id = ANY ($6::text[]);

-- $1 @dedup_ids, $2 @message_ids, $3 @queue_id
-- dedup.set
UPDATE message_dedup_keys k SET message_id = r.id FROM unnest($1::text[], $2::bigint[]) AS r(dedup_id, id)
WHERE k.queue_id = $3 AND k.dedup_id = r.dedup_id;

-- no parameters
-- messages.lease_position
SELECT set_config('ferry.sequence_position', (CASE WHEN is_called THEN last_value ELSE 0 END)::text, true) FROM messages_id_seq;

-- $1 @queue_no, $2 @group_no
-- messages.lease_lock
SELECT pg_advisory_xact_lock(hashtextextended($1::bigint::text || '/' || $2::int::text, 2));

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @group_no
-- messages.revive_ranges
WITH expired AS (
	DELETE FROM message_ranges r
	WHERE r.queue_no = $1 AND r.visible_at <= now() AND r.group_no = $2
	RETURNING r.lease_id, r.channel_id, r.from_id, r.to_id
), held AS (
	SELECT k.id, e.lease_id FROM expired e CROSS JOIN LATERAL (
		SELECT m.id FROM messages m
		WHERE m.queue_no = $1 AND m.id BETWEEN e.from_id AND e.to_id AND m.group_no = $2 AND NOT m.dlq
			AND m.channel_id = e.channel_id AND m.visible_at = '-infinity') k
)
UPDATE messages m SET visible_at = now(), delivery_count = 1, lease_id = h.lease_id
FROM held h
WHERE m.queue_no = $1 AND m.id = ANY (ARRAY (SELECT id FROM held)) AND m.id = h.id AND m.group_no = $2
	AND m.visible_at = '-infinity';

-- $1 @limit
-- messages.expired_range_groups
SELECT DISTINCT queue_no, group_no FROM message_ranges WHERE visible_at <= now() LIMIT $1;

-- $1 @limit
-- messages.delete_empty_ranges
DELETE FROM message_ranges d
WHERE d.ctid = ANY (ARRAY (
	SELECT g.ctid FROM message_ranges g
	WHERE (SELECT m.id FROM messages m
		WHERE m.queue_no = g.queue_no AND m.id BETWEEN g.from_id AND g.to_id AND m.group_no = g.group_no AND NOT m.dlq
			AND m.channel_id = g.channel_id AND m.visible_at = '-infinity'
		LIMIT 1) IS NULL
	LIMIT $1
	FOR UPDATE SKIP LOCKED));

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @dlq, $3 @group_nos, $4 @channel_ids, $5 @up_to, $6 @limit
-- messages.purge_pick
SELECT group_no, id, message_group FROM messages
WHERE queue_no = $1 AND ($2::bool IS NULL OR dlq = $2)
	AND ($3::int[] IS NULL OR group_no = ANY ($3))
	AND ($4::text[] IS NULL OR channel_id = ANY ($4))
	AND id <= $5 LIMIT $6;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @queue_id, $3 @cutoff, $4 @limit
-- messages.expire_pick
SELECT group_no, id, message_group FROM messages WHERE queue_no = $1
	AND group_no = ANY (ARRAY (SELECT 0 UNION SELECT group_no FROM consumer_groups WHERE queue_id = $2))
	AND id <= $3 LIMIT $4;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @group_nos, $2 @ids, $3 @queue_no, $4 @dlq
-- messages.delete_picked
DELETE FROM messages m USING unnest($1::int[], $2::bigint[]) AS p(group_no, id)
WHERE m.queue_no = $3 AND m.id = ANY ($2) AND m.id = p.id AND m.group_no IS NOT DISTINCT FROM p.group_no
	AND ($4::bool IS NULL OR m.dlq IS NOT DISTINCT FROM $4);

-- $1 @limit
-- messages.delete_orphans
DELETE FROM messages m USING (
	SELECT o.queue_no, o.group_no, o.id FROM queues q
	CROSS JOIN LATERAL (SELECT queue_no, group_no, id FROM messages WHERE queue_no = q.no LIMIT $1) o
	WHERE q.lifecycle_state = 'DELETED' AND q.time_updated > now() - interval '1 day' LIMIT $1) d
WHERE m.queue_no = d.queue_no AND m.id = d.id AND m.group_no IS NOT DISTINCT FROM d.group_no;

-- $1 @limit
-- messages.expire_bodies
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
		ORDER BY b.id LIMIT $1) o
	WHERE q.queue_no IS NOT NULL
	LIMIT $1
)
DELETE FROM message_bodies b USING orphans o WHERE b.queue_no = o.queue_no AND b.id = o.id;

-- no parameters
-- messages.last_id
SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM messages_id_seq;

-- no parameters
-- messages.watermark_record
INSERT INTO message_id_watermarks (time_recorded, max_id)
SELECT now(), CASE WHEN is_called THEN last_value ELSE 0 END FROM messages_id_seq
ON CONFLICT DO NOTHING;

-- $1 @retention_seconds
-- messages.watermark_cutoff
SELECT coalesce((SELECT max_id FROM message_id_watermarks WHERE time_recorded <= now() - make_interval(secs => $1)
	ORDER BY time_recorded DESC LIMIT 1), 0);

-- no parameters
-- messages.watermark_prune
DELETE FROM message_id_watermarks WHERE time_recorded < now() - interval '8 days';

-- $1 @limit
-- dedup.expire
DELETE FROM message_dedup_keys WHERE ctid = ANY (ARRAY (
	SELECT ctid FROM message_dedup_keys WHERE expire_at < now() LIMIT $1));

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @group_no, $3 @channel_id
-- messages.stats
SELECT dlq, count(*) FILTER (WHERE visible_at <= now() AND NOT ranged OR visible_at = 'infinity'),
	count(*) FILTER (WHERE visible_at > now() AND visible_at < 'infinity' AND delivery_count > 0 OR ranged),
	count(*) FILTER (WHERE visible_at > now() AND visible_at < 'infinity' AND delivery_count = 0),
	coalesce(sum(size_bytes), 0)
FROM (SELECT m.dlq, m.visible_at, m.delivery_count, m.size_bytes,
		m.visible_at = '-infinity' AND m.id <= coalesce(k.last_id, 0) AS ranged
	FROM messages m LEFT JOIN message_cursors k ON k.queue_no = $1 AND k.group_no = m.group_no AND k.channel_id = m.channel_id
	WHERE m.queue_no = $1 AND m.group_no = $2 AND ($3 = '' OR m.channel_id = $3) AND m.expire_at > now()) s
GROUP BY dlq;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @group_nos, $3 @channel_id
-- messages.stats_by_group
SELECT group_no, dlq, count(*) FILTER (WHERE visible_at <= now() AND NOT ranged OR visible_at = 'infinity'),
	count(*) FILTER (WHERE visible_at > now() AND visible_at < 'infinity' AND delivery_count > 0 OR ranged),
	count(*) FILTER (WHERE visible_at > now() AND visible_at < 'infinity' AND delivery_count = 0),
	coalesce(sum(size_bytes), 0),
	coalesce(extract(epoch FROM now() - min(time_created) FILTER (WHERE visible_at <= now() AND NOT ranged OR visible_at = 'infinity')), 0)::float8
FROM (SELECT m.group_no, m.dlq, m.visible_at, m.delivery_count, m.size_bytes, m.time_created,
		m.visible_at = '-infinity' AND m.id <= coalesce(k.last_id, 0) AS ranged
	FROM messages m LEFT JOIN message_cursors k ON k.queue_no = $1 AND k.group_no = m.group_no AND k.channel_id = m.channel_id
	WHERE m.queue_no = $1 AND ($2::int[] IS NULL OR m.group_no = ANY ($2))
		AND ($3 = '' OR m.channel_id = $3) AND m.expire_at > now()) s
GROUP BY group_no, dlq;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no, $2 @group_no, $3 @dlq, $4 @from_channel, $5 @inclusive, $6 @limit
-- messages.channels
WITH RECURSIVE ch AS (
	(SELECT channel_id FROM messages WHERE queue_no = $1 AND group_no = $2 AND dlq = $3 AND channel_id >= $4
		AND (channel_id <> $4 OR $5) ORDER BY channel_id LIMIT 1)
	UNION ALL
	SELECT (SELECT m.channel_id FROM messages m WHERE m.queue_no = $1 AND m.group_no = $2 AND m.dlq = $3
		AND m.channel_id > ch.channel_id ORDER BY m.channel_id LIMIT 1)
	FROM ch WHERE ch.channel_id IS NOT NULL)
SELECT channel_id FROM ch WHERE channel_id IS NOT NULL LIMIT $6;

-- sent on messages_k and message_bodies_k, k the partition of @queue_no
-- $1 @queue_no
-- messages.size_by_channel
SELECT channel_id, coalesce(sum(size_bytes), 0), max(id) FROM messages WHERE queue_no = $1 GROUP BY channel_id;

-- $1 @queue_id, $2 @discarded
-- messages.add_discarded
INSERT INTO queue_discards (queue_id, discarded) VALUES ($1, $2)
ON CONFLICT (queue_id) DO UPDATE SET discarded = queue_discards.discarded + excluded.discarded;

-- $1 @queue_id
-- messages.discarded
SELECT coalesce((SELECT discarded FROM queue_discards WHERE queue_id = $1), 0);

-- $1 @queue_ids, $2 @group_nos, $3 @minutes, $4 @tenancy_ids, $5 @published, $6 @published_bytes, $7 @delivered, $8 @acknowledged, $9 @released, $10 @dead_lettered, $11 @redriven, $12 @discarded, $13 @expired
-- metrics.add_counts
INSERT INTO queue_metrics AS m (queue_id, group_no, minute, tenancy_id, published, published_bytes, delivered,
	acknowledged, released, dead_lettered, redriven, discarded, expired)
SELECT * FROM unnest($1::text[], $2::int[], $3::timestamptz[], $4::text[],
	$5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[],
	$9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[])
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

-- $1 @queue_ids, $2 @group_nos, $3 @minutes, $4 @tenancy_ids, $5 @visible, $6 @in_flight, $7 @delayed, $8 @dlq_messages, $9 @oldest_age_seconds, $10 @consumers, $11 @partition_lags
-- metrics.set_gauges
INSERT INTO queue_metrics AS m (queue_id, group_no, minute, tenancy_id, visible, in_flight, delayed, dlq_messages,
	oldest_age_seconds, consumers, partition_lag)
SELECT * FROM unnest($1::text[], $2::int[], $3::timestamptz[], $4::text[],
	$5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[],
	$9::float8[], $10::int[], $11::bigint[])
ON CONFLICT (queue_id, group_no, minute) DO UPDATE SET
	visible = excluded.visible, in_flight = excluded.in_flight, delayed = excluded.delayed,
	dlq_messages = excluded.dlq_messages, oldest_age_seconds = excluded.oldest_age_seconds,
	consumers = excluded.consumers, partition_lag = excluded.partition_lag;

-- $1 @minute
-- metrics.sample_candidates
SELECT DISTINCT queue_id, tenancy_id FROM queue_metrics
WHERE minute BETWEEN $1::timestamptz - interval '1 minute' AND $1 AND group_no = -1
	AND (published + delivered + acknowledged + released + dead_lettered + redriven + discarded + expired > 0
		OR visible > 0 OR in_flight > 0 OR delayed > 0 OR dlq_messages > 0 OR partition_lag > 0);

-- $1 @queue_id
-- metrics.partition_lags
SELECT g.group_no, sum(greatest(0, coalesce(p.next_offset, 0) - 1 - coalesce(a.committed, -1)))::bigint
FROM queues q
JOIN consumer_groups g ON g.queue_id = q.id AND g.load_balancing = 'PARTITION' AND g.lifecycle_state <> 'DELETED'
CROSS JOIN generate_series(0, q.partition_count - 1) AS s(p)
LEFT JOIN partition_assignments a ON a.queue_no = q.no AND a.group_no = g.group_no AND a.partition = s.p
LEFT JOIN queue_partitions p ON p.queue_no = q.no AND p.partition = s.p
WHERE q.id = $1 AND q.partition_count IS NOT NULL
GROUP BY g.group_no;

-- $1 @since
-- metrics.latest_partition_lags
SELECT DISTINCT ON (m.queue_id, m.group_no) m.queue_id, m.tenancy_id, m.group_no, g.id, m.partition_lag
FROM queue_metrics m JOIN consumer_groups g ON g.queue_id = m.queue_id AND g.group_no = m.group_no
WHERE m.minute >= $1 AND m.group_no >= 0 AND m.partition_lag IS NOT NULL
ORDER BY m.queue_id, m.group_no, m.minute DESC;

-- $1 @queue_id, $2 @live
-- metrics.consumers
SELECT group_no, count(*)::int FROM consumers
WHERE queue_id = $1 AND left_at IS NULL AND NOT leaving AND last_seen > now() - $2::interval
GROUP BY group_no;

-- $1 @since
-- metrics.latest_gauges
SELECT DISTINCT ON (queue_id) queue_id, tenancy_id, visible, in_flight, delayed, dlq_messages, oldest_age_seconds,
	consumers
FROM queue_metrics WHERE minute >= $1 AND group_no = -1 AND visible IS NOT NULL
ORDER BY queue_id, minute DESC;

-- $1 @resolution, $2 @queue_id, $3 @group_no, $4 @start, $5 @end
-- metrics.series
SELECT date_bin($1::interval, minute, TIMESTAMPTZ '2000-01-01 00:00:00+00') AS bucket,
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
FROM queue_metrics WHERE queue_id = $2 AND group_no = $3 AND minute >= $4 AND minute < $5
GROUP BY bucket ORDER BY bucket;

-- $1 @cutoff, $2 @limit
-- metrics.expire
DELETE FROM queue_metrics WHERE (queue_id, group_no, minute) IN (
	SELECT queue_id, group_no, minute FROM queue_metrics WHERE minute < $1 LIMIT $2);
