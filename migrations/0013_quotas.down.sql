DROP TABLE usage_hourly;
DROP TABLE ferry_nodes;
DROP TABLE tenancy_quotas;
