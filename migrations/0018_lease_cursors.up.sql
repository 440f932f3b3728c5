-- The cursor lease (docs/architecture.md, "Leasing"). A message no lease has taken yet is stored with
-- visible_at '-infinity' (fresh), so that the lease index holds a channel's fresh messages in id order. A lease
-- of one channel takes the next fresh messages after its channel's cursor and records them as one range row,
-- instead of updating every leased row: two row operations per lease, whatever its size.
--
-- message_cursors: per consumer group and channel, the last id a range took (last_id); the horizon below which
-- every put has ended (safe_id); and the samples of the id sequence's position, with the transaction ids of the
-- leases that read them, from which later leases move the horizon.
CREATE TABLE message_cursors (
    queue_no    bigint  NOT NULL,
    group_no    integer NOT NULL,
    channel_id  text    NOT NULL,
    last_id     bigint  NOT NULL DEFAULT 0,
    safe_id     bigint  NOT NULL DEFAULT 0,
    sample_ids  bigint[] NOT NULL DEFAULT '{}',
    sample_xids xid8[]  NOT NULL DEFAULT '{}',
    PRIMARY KEY (queue_no, group_no, channel_id)
) WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_cost_delay = 0);

-- message_ranges: the fresh messages a lease took (ids from_id..to_id of one group and channel), held under
-- lease_id until visible_at. Not unique by lease id: lease ids are random, and a collision must not fail a lease.
CREATE TABLE message_ranges (
    queue_no   bigint      NOT NULL,
    lease_id   bigint      NOT NULL,
    group_no   integer     NOT NULL,
    channel_id text        NOT NULL,
    from_id    bigint      NOT NULL,
    to_id      bigint      NOT NULL,
    visible_at timestamptz NOT NULL
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
CREATE INDEX message_ranges_lease ON message_ranges (queue_no, lease_id);
CREATE INDEX message_ranges_expiry ON message_ranges (queue_no, visible_at);
