-- Fanout stored once: a message that goes to several consumer groups keeps its content, attributes and metadata
-- in one row of message_bodies, and each group's row in messages holds only its delivery state (content NULL). A
-- message that goes to one group keeps them in its row, as before: the common case reads one row.
--
-- A body is deleted with its last group's row by the acknowledgement that deletes it (in the same transaction),
-- by retention (by id, with the rows), and otherwise by the maintainer: the bodies of a queue older than its
-- oldest stored message have no row left (a put inserts a body and its rows in one transaction).
CREATE TABLE message_bodies (
    queue_no   bigint NOT NULL,
    id         bigint NOT NULL,
    content    text NOT NULL,
    attributes json,
    metadata   json,
    PRIMARY KEY (queue_no, id)
) WITH (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.05,
    autovacuum_vacuum_cost_delay = 0,
    vacuum_truncate = false
);

ALTER TABLE messages ALTER COLUMN content DROP NOT NULL;
