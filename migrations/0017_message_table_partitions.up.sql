-- The message tables are split by queue into 8 hash partitions (PostgreSQL's table partitions, not ferry's
-- partitioned queues). Vacuum works a table at a time, and each pass reads every entry of every index of the table
-- it cleans: on one table, a busy queue's vacuum read the index entries of all the other queues' stored messages
-- too, so that its cost grew with the whole service's backlog (a drain beside 300,000 idle messages spent a fifth
-- more PostgreSQL CPU per message than beside none). Now it reads the entries of its own partition's queues only,
-- an eighth of the backlog on average, and autovacuum cleans each partition when that partition has churned.
--
-- Every statement names the queue (queue_no = …), which prunes it to one partition, at planning or, for a generic
-- plan, when it starts. The lease statement's ctid lookups stay correct: a ctid is unique within one partition,
-- and the queue's rows are all in the same one. Eight partitions keep a statement's locks few (PostgreSQL 15 locks
-- every partition of a generic plan before pruning); more would isolate queues better and cost each statement more.
ALTER TABLE messages RENAME TO messages_unpartitioned;
ALTER INDEX messages_pkey RENAME TO messages_unpartitioned_pkey;
ALTER INDEX messages_lease RENAME TO messages_unpartitioned_lease;
ALTER INDEX messages_group RENAME TO messages_unpartitioned_group;
ALTER INDEX messages_lease_owner RENAME TO messages_unpartitioned_lease_owner;
ALTER TABLE message_bodies RENAME TO message_bodies_unpartitioned;
ALTER INDEX message_bodies_pkey RENAME TO message_bodies_unpartitioned_pkey;

CREATE TABLE messages (LIKE messages_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)
    PARTITION BY HASH (queue_no);
CREATE TABLE message_bodies (LIKE message_bodies_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)
    PARTITION BY HASH (queue_no);

-- The storage and autovacuum settings of 0002, 0008 and 0012, on each partition (a partitioned table has none).
DO $$
DECLARE
    autovacuum text := 'autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.05,
        autovacuum_vacuum_cost_delay = 0, vacuum_truncate = false';
BEGIN
    FOR p IN 0..7 LOOP
        EXECUTE format('CREATE TABLE messages_%s PARTITION OF messages FOR VALUES WITH (MODULUS 8, REMAINDER %s)
            WITH (fillfactor = 80, %s)', p, p, autovacuum);
        EXECUTE format('CREATE TABLE message_bodies_%s PARTITION OF message_bodies FOR VALUES WITH (MODULUS 8, REMAINDER %s)
            WITH (%s)', p, p, autovacuum);
    END LOOP;
END $$;

INSERT INTO messages SELECT * FROM messages_unpartitioned;
INSERT INTO message_bodies SELECT * FROM message_bodies_unpartitioned;
DROP TABLE messages_unpartitioned, message_bodies_unpartitioned;

-- The indexes of 0007, on the partitioned tables (each partition gets its own).
ALTER TABLE messages ADD PRIMARY KEY (queue_no, id, group_no);
CREATE INDEX messages_lease ON messages (queue_no, group_no, dlq, channel_id, visible_at, id);
CREATE INDEX messages_group ON messages (queue_no, group_no, message_group, id)
    WHERE message_group IS NOT NULL AND NOT dlq;
CREATE INDEX messages_lease_owner ON messages (queue_no, group_no, lease_owner) WHERE lease_owner IS NOT NULL;
ALTER TABLE message_bodies ADD PRIMARY KEY (queue_no, id);

-- Each partition's indexes are named after its table and the partitioned index (messages_3_lease), so that plans
-- read like the statements; and every column of every partition keeps 0016's statistics target (ANALYZE of a
-- partition reads the partition's own targets).
DO $$
DECLARE
    parent record;
    child record;
    c text;
BEGIN
    FOR parent IN SELECT indexrelid, indexrelid::regclass::text AS name, indrelid::regclass::text AS tab FROM pg_index
            WHERE indrelid IN ('messages'::regclass, 'message_bodies'::regclass) LOOP
        FOR child IN SELECT i.indexrelid::regclass AS idx, i.indrelid::regclass::text AS tab
                FROM pg_inherits h JOIN pg_index i ON i.indexrelid = h.inhrelid WHERE h.inhparent = parent.indexrelid LOOP
            IF child.idx::text <> child.tab || substr(parent.name, length(parent.tab) + 1) THEN -- the keys' are already
                EXECUTE format('ALTER INDEX %s RENAME TO %I', child.idx, child.tab || substr(parent.name, length(parent.tab) + 1));
            END IF;
        END LOOP;
    END LOOP;
    FOR child IN SELECT relid FROM pg_partition_tree('messages') UNION ALL SELECT relid FROM pg_partition_tree('message_bodies') LOOP
        FOR c IN SELECT attname FROM pg_attribute WHERE attrelid = child.relid AND attnum > 0 AND NOT attisdropped LOOP
            EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET STATISTICS 10', child.relid::regclass, c);
        END LOOP;
    END LOOP;
END $$;
