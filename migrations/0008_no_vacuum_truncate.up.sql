-- A queue's table shrinks and grows back all day: vacuum must not give its empty tail pages back to the file
-- system. Truncating takes an ACCESS EXCLUSIVE lock on the table, which stops every put, lease and
-- acknowledgement until it is done (autovacuum truncated messages every few seconds in the benchmark; put calls
-- then waited up to ~0.5 s). The pages are reused by the next puts instead.
ALTER TABLE messages SET (vacuum_truncate = false);
