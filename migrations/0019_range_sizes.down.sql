ALTER TABLE message_ranges DROP COLUMN IF EXISTS taken;
