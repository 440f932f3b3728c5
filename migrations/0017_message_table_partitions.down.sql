-- Back to one table each, with the settings, indexes and statistics targets of 0002–0016.
CREATE TABLE messages_unpartitioned (LIKE messages INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE) WITH (
    fillfactor = 80,
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.05,
    autovacuum_vacuum_cost_delay = 0,
    vacuum_truncate = false);
CREATE TABLE message_bodies_unpartitioned (LIKE message_bodies INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE) WITH (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.05,
    autovacuum_vacuum_cost_delay = 0,
    vacuum_truncate = false);
INSERT INTO messages_unpartitioned SELECT * FROM messages;
INSERT INTO message_bodies_unpartitioned SELECT * FROM message_bodies;
DROP TABLE messages, message_bodies;
ALTER TABLE messages_unpartitioned RENAME TO messages;
ALTER TABLE message_bodies_unpartitioned RENAME TO message_bodies;

ALTER TABLE messages ADD PRIMARY KEY (queue_no, id, group_no);
CREATE INDEX messages_lease ON messages (queue_no, group_no, dlq, channel_id, visible_at, id);
CREATE INDEX messages_group ON messages (queue_no, group_no, message_group, id)
    WHERE message_group IS NOT NULL AND NOT dlq;
CREATE INDEX messages_lease_owner ON messages (queue_no, group_no, lease_owner) WHERE lease_owner IS NOT NULL;
ALTER TABLE message_bodies ADD PRIMARY KEY (queue_no, id);

DO $$
DECLARE
    t text;
    c text;
BEGIN
    FOREACH t IN ARRAY ARRAY['messages', 'message_bodies'] LOOP
        FOR c IN SELECT attname FROM pg_attribute WHERE attrelid = t::regclass AND attnum > 0 AND NOT attisdropped LOOP
            EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET STATISTICS 10', t, c);
        END LOOP;
    END LOOP;
END $$;
