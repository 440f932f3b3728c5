-- Per-tenancy quotas, the nodes that share the rate limits, and the hourly usage (docs/limits.md).

-- An operator's override of one quota of one tenancy (`ferry quota set`). A quota without a row takes the
-- default of the nodes' configuration (FERRY_QUOTA_*). Count quotas are checked against this table inside the
-- creating transaction; the rate and concurrency quotas are read by every node into a cache refreshed every
-- FERRY_LIMITS_REFRESH (2 s), so a change takes effect within seconds.
CREATE TABLE tenancy_quotas (
    tenancy_id   text NOT NULL REFERENCES tenancies (id) ON DELETE CASCADE,
    name         text NOT NULL CHECK (name IN ('queues', 'consumer-groups-per-queue', 'compartments', 'policies',
                     'long-polls', 'watches', 'stored-bytes', 'requests-per-second', 'bytes-per-second')),
    value        bigint NOT NULL CHECK (value >= 0),
    time_updated timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenancy_id, name)
);

-- The live ferry nodes: each one writes its row every FERRY_LIMITS_REFRESH. A node enforces its share of a
-- tenancy's rate limits: the limit divided by the nodes seen within the last few refreshes. One row per node,
-- one write per node per refresh; rows of nodes gone for an hour are deleted by the refresh.
CREATE TABLE ferry_nodes (
    id        text PRIMARY KEY CHECK (length(id) <= 64),
    last_seen timestamptz NOT NULL
);

-- Usage per tenancy, queue and hour, for billing (`ferry usage`). Requests and bytes are counted in memory by
-- each node and added here by its metering flush (one statement per node per minute, for every active tenancy);
-- stored message-hours are added by the maintainer's per-minute sample (a message stored for a minute adds 1/60).
--   queue_id  '' for calls that name no queue (the control plane).
CREATE TABLE usage_hourly (
    tenancy_id    text NOT NULL,
    queue_id      text NOT NULL,
    hour          timestamptz NOT NULL CHECK (date_trunc('hour', hour) = hour),
    requests      bigint NOT NULL DEFAULT 0,
    bytes_in      bigint NOT NULL DEFAULT 0,
    bytes_out     bigint NOT NULL DEFAULT 0,
    message_hours double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (tenancy_id, hour, queue_id)
);
