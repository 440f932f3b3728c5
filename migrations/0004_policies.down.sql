-- Reverts 0004_policies.
DROP TABLE IF EXISTS policies;
