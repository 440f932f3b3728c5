-- Reverts 0008_no_vacuum_truncate.
ALTER TABLE messages RESET (vacuum_truncate);
