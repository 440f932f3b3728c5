DROP TABLE partition_assignments;
DROP TABLE partition_messages;
DROP TABLE queue_partitions;
DELETE FROM consumers WHERE kind = 'partition';
ALTER TABLE consumers DROP CONSTRAINT consumers_kind_check;
ALTER TABLE consumers ADD CONSTRAINT consumers_kind_check CHECK (kind IN ('poll', 'watch'));
ALTER TABLE consumer_groups DROP COLUMN load_balancing;
ALTER TABLE queues DROP COLUMN partition_count;
