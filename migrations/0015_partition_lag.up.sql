-- The lag of PARTITION groups (docs/partitions.md), sampled with the other gauges: for a PARTITION group's row,
-- the sum over its partitions of latest offset − committed offset; for the whole queue's row, the sum over its
-- PARTITION groups. NULL on the rows of queues without PARTITION groups, and of MESSAGE groups. A column of its
-- own (not visible): a partition's messages stay stored after they are committed, so lag is not a depth.
ALTER TABLE queue_metrics ADD COLUMN partition_lag bigint CHECK (partition_lag >= 0);
