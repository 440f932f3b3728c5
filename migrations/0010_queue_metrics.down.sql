DROP TABLE queue_metrics;
