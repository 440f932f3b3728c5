-- Reverts 0007_queue_numbers.
ALTER TABLE messages ADD COLUMN queue_id text;
UPDATE messages m SET queue_id = q.id FROM queues q WHERE q.no = m.queue_no;
ALTER TABLE messages ALTER COLUMN queue_id SET NOT NULL;
DROP INDEX messages_lease, messages_group, messages_lease_owner;
ALTER TABLE messages DROP CONSTRAINT messages_pkey, DROP COLUMN queue_no;
ALTER TABLE messages ADD PRIMARY KEY (queue_id, id, group_no);
CREATE INDEX messages_lease ON messages (queue_id, group_no, dlq, channel_id, visible_at, id);
CREATE INDEX messages_group ON messages (queue_id, group_no, message_group, id)
    WHERE message_group IS NOT NULL AND NOT dlq;
CREATE INDEX messages_lease_owner ON messages (queue_id, group_no, lease_owner) WHERE lease_owner IS NOT NULL;
DROP INDEX queues_id;
ALTER TABLE queues DROP COLUMN no;
