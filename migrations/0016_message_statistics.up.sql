-- Cheaper statistics for the message tables. Autovacuum analyzes a table after 5 % of its rows changed, which on a
-- busy queue is every few seconds; with the default statistics target each ANALYZE samples 30,000 rows, and on a
-- messages table of 400,000 rows it took 0.9 s of CPU, about a fifth of what PostgreSQL spent draining a queue at
-- 12,000 messages/s. A target of 10 samples 3,000 rows (0.1–0.2 s): plenty for the few figures the planner uses
-- here (the queues, groups and channels, and the spread of visible_at), and the queue drained 15–25 % faster. The
-- target is set on every column: ANALYZE samples for the largest one, so a column left at the default would undo
-- it (TestMessageTablesSampleFewRows checks).
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
