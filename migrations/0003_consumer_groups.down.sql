-- Reverts 0003_consumer_groups.
DROP TABLE IF EXISTS queue_discards;
DROP TABLE IF EXISTS consumer_groups;
ALTER TABLE queues DROP COLUMN IF EXISTS consumer_groups_enabled;
