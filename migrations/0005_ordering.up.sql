-- Ordered message groups and single active consumer (DESIGN section 7).

-- message_group is the ordering key of a message within its consumer group (metadata.messageGroupId); NULL for
-- unordered messages and for messages published with a delay (a delay takes a message out of its group's order).
-- Within one (queue_id, group_no, message_group) exactly one message that is not in the DLQ is "the head": it is
-- visible, leased or released like any message; every later one waits with visible_at = 'infinity', which sorts
-- after every lease range of messages_lease, so a receive never reads a waiting message. The statement that
-- removes the head (acknowledge, dead-letter, purge, retention) makes the next one visible in the same statement
-- or transaction.
-- lease_owner is the consumerId that holds the current lease on a single-active-consumer queue (NULL elsewhere):
-- on a takeover, the new active consumer makes the previous one's unacknowledged messages visible at once.
ALTER TABLE messages
    ADD COLUMN message_group text CHECK (length(message_group) BETWEEN 1 AND 128),
    ADD COLUMN lease_owner   text CHECK (length(lease_owner) BETWEEN 1 AND 128);

-- A group's messages in publish order: the head lookup of a put (the group's last message) and the next-message
-- lookup of the statements that remove a head. Dead-lettered messages are no longer part of their group's order,
-- so they leave the index.
CREATE INDEX messages_group ON messages (queue_id, group_no, message_group, id)
    WHERE message_group IS NOT NULL AND NOT dlq;

-- The messages a single active consumer holds (lease_owner is only set on such queues): a takeover or a leave
-- makes them visible without reading the rest of the group.
CREATE INDEX messages_lease_owner ON messages (queue_id, group_no, lease_owner) WHERE lease_owner IS NOT NULL;

-- Single active consumer: per consumer group, only the consumer that registered first among the live ones
-- receives messages; the others are standby.
ALTER TABLE queues
    ADD COLUMN is_single_active_consumer boolean NOT NULL DEFAULT false,
    ADD COLUMN consumer_lease_seconds   integer NOT NULL DEFAULT 30 CHECK (consumer_lease_seconds BETWEEN 5 AND 300);

-- The consumers of single-active-consumer queues. Each GetMessages upserts its caller (last_seen = now()); a
-- consumer is live while last_seen is within the queue's consumer_lease_seconds. The active consumer is the live
-- one with the smallest (registered_at, consumer_id) — decided in SQL under a per-group advisory lock, so every
-- node agrees. active_since is set while the consumer holds the active role (its first call as the active one
-- takes over the previous consumer's unacknowledged messages). A consumer that lapsed and comes back registers
-- again at the back. Rows of lapsed consumers are deleted by the next decision and by the maintainer.
CREATE TABLE consumers (
    queue_id      text NOT NULL,
    group_no      integer NOT NULL CHECK (group_no >= 0),
    consumer_id   text NOT NULL CHECK (length(consumer_id) BETWEEN 1 AND 128),
    registered_at timestamptz NOT NULL,
    last_seen     timestamptz NOT NULL,
    active_since  timestamptz,
    PRIMARY KEY (queue_id, group_no, consumer_id)
);

-- The maintainer's sweep of consumers that stopped calling.
CREATE INDEX consumers_last_seen ON consumers (last_seen);
