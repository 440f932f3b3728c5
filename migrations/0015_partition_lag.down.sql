ALTER TABLE queue_metrics DROP COLUMN partition_lag;
