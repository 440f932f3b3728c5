-- Consumer groups (DESIGN sections 3, 6, 7): each group receives the messages whose attributes match its filter,
-- with its own leases, delivery counts and DLQ (its rows in messages carry its group_no).

-- The CONSUMER_GROUPS capability of a queue.
ALTER TABLE queues ADD COLUMN consumer_groups_enabled boolean NOT NULL DEFAULT false;

-- group_no numbers a queue's groups for the messages table (compact, never reused); 0 is the primary group,
-- whose id is the queue's id. Deleted groups stay as DELETED rows until their messages are gone.
CREATE TABLE consumer_groups (
    tenancy_id                       text NOT NULL,
    id                               text NOT NULL CHECK (length(id) BETWEEN 1 AND 255),
    queue_id                         text NOT NULL,
    group_no                         integer NOT NULL CHECK (group_no >= 0),
    display_name                     text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 255),
    filter                           text NOT NULL DEFAULT '' CHECK (length(filter) <= 256),
    is_enabled                       boolean NOT NULL DEFAULT true,
    dead_letter_queue_delivery_count integer CHECK (dead_letter_queue_delivery_count BETWEEN 0 AND 1000), -- NULL = the queue's
    lifecycle_state                  text NOT NULL DEFAULT 'ACTIVE'
        CHECK (lifecycle_state IN ('CREATING', 'ACTIVE', 'UPDATING', 'DELETING', 'DELETED', 'FAILED')),
    freeform_tags                    jsonb NOT NULL DEFAULT '{}',
    version                          bigint NOT NULL DEFAULT 1,
    time_created                     timestamptz NOT NULL DEFAULT now(),
    time_updated                     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenancy_id, id, queue_id),
    UNIQUE (queue_id, group_no),
    FOREIGN KEY (tenancy_id, queue_id) REFERENCES queues (tenancy_id, id)
);

-- displayName is unique per queue, case-insensitively, among live groups.
CREATE UNIQUE INDEX consumer_groups_name ON consumer_groups (queue_id, lower(display_name)) WHERE lifecycle_state <> 'DELETED';
-- A queue's groups in list order.
CREATE INDEX consumer_groups_by_queue ON consumer_groups (tenancy_id, queue_id, time_created, id);

-- Messages that no consumer group took (the primary group disabled, no filter matched): counted, not stored.
-- Touched only by puts that discard, so it is not a hot row for ordinary traffic.
CREATE TABLE queue_discards (
    queue_id  text PRIMARY KEY,
    discarded bigint NOT NULL DEFAULT 0
);
