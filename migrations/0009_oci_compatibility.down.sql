-- Reverts 0009_oci_compatibility (the consumer groups' work requests are deleted: the old check refuses them).
ALTER TABLE consumer_groups DROP COLUMN defined_tags;
ALTER TABLE queues DROP COLUMN large_messages, DROP COLUMN custom_encryption_key_id, DROP COLUMN defined_tags;
ALTER TABLE work_requests DROP CONSTRAINT work_requests_status_check;
ALTER TABLE work_requests ADD CONSTRAINT work_requests_status_check
    CHECK (status IN ('ACCEPTED', 'IN_PROGRESS', 'WAITING', 'FAILED', 'SUCCEEDED', 'CANCELING', 'CANCELED'));
DELETE FROM work_requests WHERE operation_type IN ('CREATE_CONSUMER_GROUP', 'UPDATE_CONSUMER_GROUP', 'DELETE_CONSUMER_GROUP');
ALTER TABLE work_requests DROP CONSTRAINT work_requests_operation_type_check;
ALTER TABLE work_requests ADD CONSTRAINT work_requests_operation_type_check
    CHECK (operation_type IN ('CREATE_QUEUE', 'UPDATE_QUEUE', 'DELETE_QUEUE', 'MOVE_QUEUE', 'PURGE_QUEUE'));
