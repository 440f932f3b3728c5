-- Queue-based load balancing (docs/partitions.md): a partitioned queue appends every message to one of its
-- partitions, where it gets a dense offset; a consumer group with load_balancing 'PARTITION' reads the partitions
-- by offset, each partition owned by one live consumer of the group, and keeps only its committed offsets — no
-- row per message and group. MESSAGE groups of the same queue keep their rows in messages, as before.

-- Set at creation and immutable: a key's partition is hash(key) mod partition_count for the queue's life.
ALTER TABLE queues ADD COLUMN partition_count integer CHECK (partition_count BETWEEN 1 AND 256);

-- Set at creation; the primary group (group_no 0) is always MESSAGE.
ALTER TABLE consumer_groups ADD COLUMN load_balancing text NOT NULL DEFAULT 'MESSAGE'
    CHECK (load_balancing IN ('MESSAGE', 'PARTITION') AND (load_balancing = 'MESSAGE' OR group_no > 0));

-- Consumers of PARTITION groups register in consumers too (kind 'partition'): the same liveness
-- (consumerLeaseInSeconds), the same GET /consumers and DELETE /consumers/{id}.
ALTER TABLE consumers DROP CONSTRAINT consumers_kind_check;
ALTER TABLE consumers ADD CONSTRAINT consumers_kind_check CHECK (kind IN ('poll', 'watch', 'partition'));

-- The next offset of each partition. A put locks the rows of its partitions (ON CONFLICT DO UPDATE, in partition
-- order) until it commits, so offsets are dense and become visible in order: a reader never sees offset n+1
-- committed before n. This is the one counter row per message the data plane has, on purpose: it is what makes
-- offsets dense; its cost is that puts to one partition commit one after another (coalesced puts share it).
CREATE TABLE queue_partitions (
    queue_no    bigint NOT NULL,
    partition   integer NOT NULL CHECK (partition BETWEEN 0 AND 255),
    next_offset bigint NOT NULL CHECK (next_offset >= 0),
    PRIMARY KEY (queue_no, partition)
);

-- The partitions' messages, stored once for every PARTITION group of the queue, and deleted by retention only
-- (expire_at), never by consumption. id is the message's id (the one MESSAGE groups' rows carry).
CREATE TABLE partition_messages (
    queue_no    bigint NOT NULL,
    partition   integer NOT NULL,
    log_offset  bigint NOT NULL,
    id          bigint NOT NULL,
    channel_id  text NOT NULL DEFAULT '',
    size_bytes  integer NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expire_at   timestamptz NOT NULL,
    content     text NOT NULL,
    attributes  json,
    metadata    json,
    PRIMARY KEY (queue_no, partition, log_offset)
) WITH (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.05,
    vacuum_truncate = false
);
-- Retention: rows are appended in expire_at order (per queue, retention is fixed), so a BRIN index finds the
-- expired ones for almost nothing at insert time.
CREATE INDEX partition_messages_expiry ON partition_messages USING brin (expire_at);

-- A PARTITION group's state per partition: its owner, the generation at which the owner got it, the committed
-- offset (the last message processed; -1 = none), and a handover in progress (next_owner: the owner is to
-- release it; handover_by: when it moves anyway).
CREATE TABLE partition_assignments (
    queue_no     bigint NOT NULL,
    group_no     integer NOT NULL,
    partition    integer NOT NULL CHECK (partition BETWEEN 0 AND 255),
    owner        text,
    generation   bigint NOT NULL DEFAULT 0,
    committed    bigint NOT NULL DEFAULT -1 CHECK (committed >= -1),
    next_owner   text,
    handover_by  timestamptz,
    time_committed timestamptz,
    PRIMARY KEY (queue_no, group_no, partition)
);
