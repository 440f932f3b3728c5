-- OCI Queue compatibility (the official OCI SDKs work against ferry unchanged but for endpoint and token).

-- Every control-plane change of a queue or a consumer group answers with a work request, as OCI's do: the
-- consumer-group operations join the queue ones. A work request's failed resource is RELATED (OCI's action types
-- have no FAILED), and no work request waits (OCI's statuses have no WAITING).
ALTER TABLE work_requests DROP CONSTRAINT work_requests_operation_type_check;
ALTER TABLE work_requests ADD CONSTRAINT work_requests_operation_type_check CHECK (operation_type IN ('CREATE_QUEUE',
    'UPDATE_QUEUE', 'DELETE_QUEUE', 'MOVE_QUEUE', 'PURGE_QUEUE', 'CREATE_CONSUMER_GROUP', 'UPDATE_CONSUMER_GROUP',
    'DELETE_CONSUMER_GROUP'));
UPDATE work_requests SET action_type = 'RELATED' WHERE action_type = 'FAILED';
ALTER TABLE work_requests DROP CONSTRAINT work_requests_status_check;
ALTER TABLE work_requests ADD CONSTRAINT work_requests_status_check
    CHECK (status IN ('ACCEPTED', 'IN_PROGRESS', 'FAILED', 'SUCCEEDED', 'CANCELING', 'CANCELED'));

-- OCI's defined tags ({"namespace": {"key": value}}), kept and returned as given; the key a queue's content would
-- be encrypted with (kept and returned: at rest, messages are as safe as PostgreSQL's storage makes them); and the
-- LARGE_MESSAGES capability (messages up to 1 MiB instead of 256 KiB).
ALTER TABLE queues ADD COLUMN defined_tags jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN custom_encryption_key_id text CHECK (length(custom_encryption_key_id) BETWEEN 1 AND 255),
    ADD COLUMN large_messages boolean NOT NULL DEFAULT false;
ALTER TABLE consumer_groups ADD COLUMN defined_tags jsonb NOT NULL DEFAULT '{}';
