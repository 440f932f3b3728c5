DO $$
DECLARE
    t text;
    c text;
BEGIN
    FOREACH t IN ARRAY ARRAY['messages', 'message_bodies'] LOOP
        FOR c IN SELECT attname FROM pg_attribute WHERE attrelid = t::regclass AND attnum > 0 AND NOT attisdropped LOOP
            EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET STATISTICS -1', t, c);
        END LOOP;
    END LOOP;
END $$;
