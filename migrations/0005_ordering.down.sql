-- Reverts 0005_ordering.
DROP TABLE IF EXISTS consumers;
ALTER TABLE queues DROP COLUMN IF EXISTS consumer_lease_seconds, DROP COLUMN IF EXISTS is_single_active_consumer;
DROP INDEX IF EXISTS messages_lease_owner;
DROP INDEX IF EXISTS messages_group;
ALTER TABLE messages DROP COLUMN IF EXISTS lease_owner, DROP COLUMN IF EXISTS message_group;
