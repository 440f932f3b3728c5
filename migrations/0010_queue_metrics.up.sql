-- Tenant metrics (GET /queues/{id}/metrics): one row per queue, consumer group and minute with any traffic, or
-- with messages waiting. Counters are what the nodes counted in that minute (each node adds its own: one upsert
-- per flush); gauges are sampled once per minute, by the maintainer, from the statement GetStats uses. A queue
-- with no traffic and no messages has no rows. Rows older than the retention (FERRY_METRICS_RETENTION) are
-- deleted in batches by the maintainer.
--   group_no  -1 = the queue as a whole (every consumer group's copies; published counts messages, not copies),
--             else one consumer group's share (published counts the copies it received).
--   minute    the start of the minute the counts are for (UTC, whole minutes).
--   visible…consumers  NULL until sampled.
CREATE TABLE queue_metrics (
    queue_id            text NOT NULL,
    group_no            integer NOT NULL CHECK (group_no >= -1),
    minute              timestamptz NOT NULL CHECK (date_trunc('minute', minute) = minute),
    tenancy_id          text NOT NULL,
    published           bigint NOT NULL DEFAULT 0,
    published_bytes     bigint NOT NULL DEFAULT 0,
    delivered           bigint NOT NULL DEFAULT 0,
    acknowledged        bigint NOT NULL DEFAULT 0,
    released            bigint NOT NULL DEFAULT 0,
    dead_lettered       bigint NOT NULL DEFAULT 0,
    redriven            bigint NOT NULL DEFAULT 0,
    discarded           bigint NOT NULL DEFAULT 0,
    expired             bigint NOT NULL DEFAULT 0,
    visible             bigint,
    in_flight           bigint,
    delayed             bigint,
    dlq_messages        bigint,
    oldest_age_seconds  double precision,
    consumers           integer,
    PRIMARY KEY (queue_id, group_no, minute)
);

-- Recent rows (the sampler's candidates, the gauges exported to Prometheus) and the retention sweep.
CREATE INDEX queue_metrics_minute ON queue_metrics (minute);
