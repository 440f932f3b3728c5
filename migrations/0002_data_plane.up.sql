-- Data plane: messages and their delivery state, deduplication keys, and id watermarks for retention.
-- Every statement on these tables is scoped by queue_id (DESIGN principle 4), so they can be distributed by it.

-- Message ids are global and increase with publish time (retention relies on that, see message_id_watermarks).
CREATE SEQUENCE messages_id_seq AS bigint;

-- One row per (consumer group, message): fanout copies the message into each matching group, so that leasing,
-- acknowledging and dead-lettering touch one row in one table. group_no 0 is the primary consumer group.
-- A row is visible when visible_at <= now(); a lease moves visible_at into the future and sets a new lease_id;
-- an acknowledgement deletes the row.
CREATE TABLE messages (
    queue_id             text NOT NULL,
    group_no             integer NOT NULL DEFAULT 0,
    id                   bigint NOT NULL,
    channel_id           text NOT NULL DEFAULT '' CHECK (length(channel_id) <= 256),
    visible_at           timestamptz NOT NULL,
    expire_at            timestamptz NOT NULL,
    delivery_count       integer NOT NULL DEFAULT 0,
    lease_id             bigint NOT NULL DEFAULT 0,
    dlq                  boolean NOT NULL DEFAULT false,
    size_bytes           integer NOT NULL CHECK (size_bytes >= 0),
    content              text NOT NULL,
    attributes           json,   -- {"key": "string" | number}; evaluated by filters at publish, never queried
    metadata             json,   -- {"traceparent": …, "deduplicationId": …}
    last_negative_code   text,
    last_negative_reason text,
    time_created         timestamptz NOT NULL DEFAULT now(),
    -- id before group_no: the lease index, not this one, is the obvious path for "visible rows of a group"
    PRIMARY KEY (queue_id, id, group_no)
) WITH (
    -- Rows are updated (leased) and deleted (acknowledged) within seconds of insertion: vacuum often and leave
    -- room on each page for the updated versions.
    fillfactor = 80,
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.05,
    autovacuum_vacuum_cost_delay = 0
);

-- The lease index: the lease statement's WHERE (queue, group, dlq, channel, visible_at <= now()) and ORDER BY
-- (visible_at, id) exactly. A leased row's visible_at moves past now(), so leased-but-unacknowledged rows are
-- never re-scanned by the next lease.
CREATE INDEX messages_lease ON messages (queue_id, group_no, dlq, channel_id, visible_at, id);

-- Deduplication: the first message accepted with a deduplicationId owns it until expire_at.
CREATE TABLE message_dedup_keys (
    queue_id   text NOT NULL,
    dedup_id   text NOT NULL CHECK (length(dedup_id) BETWEEN 1 AND 128),
    message_id bigint NOT NULL,
    expire_at  timestamptz NOT NULL,
    PRIMARY KEY (queue_id, dedup_id)
);

-- Expiry sweep of dedup keys.
CREATE INDEX message_dedup_keys_expiry ON message_dedup_keys (expire_at);

-- Watermarks of the id sequence: every id <= max_id was allocated at or before time_recorded. Retention deletes
-- a queue's messages with id <= the watermark recorded retention ago — a primary-key range scan, so the hot
-- table needs no expiry index.
CREATE TABLE message_id_watermarks (
    time_recorded timestamptz PRIMARY KEY,
    max_id        bigint NOT NULL
);
