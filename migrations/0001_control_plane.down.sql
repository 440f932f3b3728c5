-- Reverts 0001_control_plane.
DROP TABLE IF EXISTS server_secrets;
DROP TABLE IF EXISTS idempotency_keys;
DROP TABLE IF EXISTS work_requests;
DROP TABLE IF EXISTS queues;
DROP TABLE IF EXISTS compartments;
DROP TABLE IF EXISTS tenancies;
