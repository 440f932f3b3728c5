-- Reverts 0006_push.
DROP INDEX IF EXISTS consumers_left;
DROP INDEX IF EXISTS consumers_open_watches;
DELETE FROM consumers WHERE kind = 'watch' OR left_at IS NOT NULL;
ALTER TABLE consumers
    DROP COLUMN IF EXISTS left_at, DROP COLUMN IF EXISTS leaving, DROP COLUMN IF EXISTS last_active, DROP COLUMN IF EXISTS delivered,
    DROP COLUMN IF EXISTS auto_commit, DROP COLUMN IF EXISTS window_size, DROP COLUMN IF EXISTS session_id,
    DROP COLUMN IF EXISTS tenancy_id, DROP COLUMN IF EXISTS kind;
