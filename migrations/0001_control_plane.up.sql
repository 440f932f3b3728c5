-- Control plane: tenancies, the compartment tree, queues, work requests, idempotency keys and server secrets.
-- Every tenant-owned table leads its primary key and indexes with tenancy_id (DESIGN principle 5).

-- A tenancy is the unit of isolation. Its root compartment has the tenancy's OCID.
CREATE TABLE tenancies (
    id           text PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 255),
    name         text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 255),
    time_created timestamptz NOT NULL DEFAULT now()
);

-- Compartments form a tree through parent_id (NULL only for the root). Deleted compartments stay as DELETED rows
-- so that their OCIDs keep answering, and free their name for a new sibling.
CREATE TABLE compartments (
    tenancy_id      text NOT NULL REFERENCES tenancies (id),
    id              text NOT NULL CHECK (length(id) BETWEEN 1 AND 255),
    parent_id       text,
    name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    description     text NOT NULL DEFAULT '' CHECK (length(description) <= 400),
    lifecycle_state text NOT NULL DEFAULT 'ACTIVE'
        CHECK (lifecycle_state IN ('CREATING', 'ACTIVE', 'UPDATING', 'DELETING', 'DELETED', 'FAILED')),
    freeform_tags   jsonb NOT NULL DEFAULT '{}',
    version         bigint NOT NULL DEFAULT 1,
    time_created    timestamptz NOT NULL DEFAULT now(),
    time_updated    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenancy_id, id),
    FOREIGN KEY (tenancy_id, parent_id) REFERENCES compartments (tenancy_id, id)
);

-- Sibling names are unique (case-insensitively) among live compartments.
CREATE UNIQUE INDEX compartments_sibling_name ON compartments (tenancy_id, coalesce(parent_id, ''), lower(name))
    WHERE lifecycle_state <> 'DELETED';
-- Children of a compartment, in list order.
CREATE INDEX compartments_by_parent ON compartments (tenancy_id, parent_id, time_created, id);

-- Queues and their settings (DESIGN section 3). Deleted queues stay as DELETED rows.
CREATE TABLE queues (
    tenancy_id                       text NOT NULL,
    id                               text NOT NULL CHECK (length(id) BETWEEN 1 AND 255),
    compartment_id                   text NOT NULL,
    display_name                     text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 255),
    lifecycle_state                  text NOT NULL DEFAULT 'ACTIVE'
        CHECK (lifecycle_state IN ('CREATING', 'ACTIVE', 'UPDATING', 'DELETING', 'DELETED', 'FAILED')),
    lifecycle_details                text NOT NULL DEFAULT '',
    retention_seconds                integer NOT NULL CHECK (retention_seconds BETWEEN 10 AND 604800),
    visibility_seconds               integer NOT NULL CHECK (visibility_seconds BETWEEN 0 AND 43200),
    timeout_seconds                  integer NOT NULL CHECK (timeout_seconds BETWEEN 0 AND 30),
    dead_letter_queue_delivery_count integer NOT NULL CHECK (dead_letter_queue_delivery_count BETWEEN 0 AND 1000),
    channel_consumption_limit        integer NOT NULL CHECK (channel_consumption_limit BETWEEN 1 AND 100),
    max_size_bytes                   bigint NOT NULL CHECK (max_size_bytes BETWEEN 1048576 AND 1099511627776),
    dedup_window_seconds             integer NOT NULL CHECK (dedup_window_seconds BETWEEN 0 AND 86400),
    freeform_tags                    jsonb NOT NULL DEFAULT '{}',
    version                          bigint NOT NULL DEFAULT 1,
    time_created                     timestamptz NOT NULL DEFAULT now(),
    time_updated                     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenancy_id, id),
    FOREIGN KEY (tenancy_id, compartment_id) REFERENCES compartments (tenancy_id, id)
);

-- Queues of a compartment, in list order.
CREATE INDEX queues_by_compartment ON queues (tenancy_id, compartment_id, time_created, id);

-- Asynchronous operations (queue delete, purge). Workers claim ACCEPTED rows with SKIP LOCKED.
CREATE TABLE work_requests (
    tenancy_id       text NOT NULL REFERENCES tenancies (id),
    id               text NOT NULL CHECK (length(id) BETWEEN 1 AND 255),
    compartment_id   text NOT NULL,
    operation_type   text NOT NULL CHECK (operation_type IN ('CREATE_QUEUE', 'UPDATE_QUEUE', 'DELETE_QUEUE', 'MOVE_QUEUE', 'PURGE_QUEUE')),
    status           text NOT NULL DEFAULT 'ACCEPTED'
        CHECK (status IN ('ACCEPTED', 'IN_PROGRESS', 'WAITING', 'FAILED', 'SUCCEEDED', 'CANCELING', 'CANCELED')),
    resource_type    text NOT NULL,
    resource_id      text NOT NULL,
    action_type      text NOT NULL,
    params           jsonb NOT NULL DEFAULT '{}',
    percent_complete real NOT NULL DEFAULT 0 CHECK (percent_complete BETWEEN 0 AND 100),
    error_message    text NOT NULL DEFAULT '',
    time_accepted    timestamptz NOT NULL DEFAULT now(),
    time_started     timestamptz,
    time_heartbeat   timestamptz, -- the worker's last sign of life; a stale one lets another node take over
    time_finished    timestamptz,
    PRIMARY KEY (tenancy_id, id)
);

-- The worker's claim predicate.
CREATE INDEX work_requests_pending ON work_requests (time_accepted) WHERE status IN ('ACCEPTED', 'IN_PROGRESS');
-- Work requests of a compartment or a resource, newest first.
CREATE INDEX work_requests_by_compartment ON work_requests (tenancy_id, compartment_id, time_accepted DESC);

-- opc-retry-token: the first response to a create is kept for 24 h and replayed for the same token and body.
-- status_code 0 marks a request still in progress.
CREATE TABLE idempotency_keys (
    tenancy_id    text NOT NULL,
    operation     text NOT NULL,
    token         text NOT NULL CHECK (length(token) BETWEEN 1 AND 64),
    request_hash  bytea NOT NULL,
    status_code   integer NOT NULL DEFAULT 0,
    headers       jsonb NOT NULL DEFAULT '{}',
    body          bytea NOT NULL DEFAULT '',
    time_created  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenancy_id, operation, token)
);

-- Expiry sweep.
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (time_created);

-- Keys shared by every node (receipt and page-token signing): created once, read at start.
CREATE TABLE server_secrets (
    name   text PRIMARY KEY,
    secret bytea NOT NULL CHECK (length(secret) >= 32)
);
