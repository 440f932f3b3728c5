-- Push consumers (watch over WebSocket, DESIGN section 7) register in consumers too, so that every node lists
-- them (GET /consumers), a consumer id holds at most one open watch per consumer group across the nodes, and the
-- open watches of a tenancy can be capped.
--   kind         'poll' (a single active consumer's GetMessages registered it) or 'watch'.
--   session_id   the open watch that owns the row: a watch that lost it (its node stopped heartbeating, the
--                consumer reconnected elsewhere, or DELETE /consumers removed it) stops pushing.
--   last_seen    a watch's node heartbeats every few seconds; a watch whose heartbeat stopped is dead.
--   delivered    messages pushed to the consumer by this watch (written by the heartbeat).
--   last_active  when the watch last pushed a message or heard from its consumer (idleSeconds).
--   leaving      the consumer sent Shutdown: nothing more is pushed to it.
--   left_at      the consumer left (disconnected, Shutdown and closed, or removed): listed as EXIT for a while,
--                then swept.
ALTER TABLE consumers
    ADD COLUMN kind        text NOT NULL DEFAULT 'poll' CHECK (kind IN ('poll', 'watch')),
    ADD COLUMN tenancy_id  text,
    ADD COLUMN session_id  text,
    ADD COLUMN window_size integer CHECK (window_size BETWEEN 1 AND 1000),
    ADD COLUMN auto_commit boolean NOT NULL DEFAULT false,
    ADD COLUMN delivered   bigint NOT NULL DEFAULT 0,
    ADD COLUMN last_active timestamptz,
    ADD COLUMN leaving     boolean NOT NULL DEFAULT false,
    ADD COLUMN left_at     timestamptz;

-- The open watches of a tenancy (the per-tenancy cap counts them when a watch opens).
CREATE INDEX consumers_open_watches ON consumers (tenancy_id, last_seen) WHERE kind = 'watch' AND left_at IS NULL;

-- The sweep of consumers that left.
CREATE INDEX consumers_left ON consumers (left_at) WHERE left_at IS NOT NULL;
