UPDATE messages m SET content = b.content, attributes = b.attributes, metadata = b.metadata
FROM message_bodies b WHERE m.content IS NULL AND b.queue_no = m.queue_no AND b.id = m.id;
DELETE FROM messages WHERE content IS NULL;
ALTER TABLE messages ALTER COLUMN content SET NOT NULL;
DROP TABLE message_bodies;
