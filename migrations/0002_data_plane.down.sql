-- Reverts 0002_data_plane.
DROP TABLE IF EXISTS message_id_watermarks;
DROP TABLE IF EXISTS message_dedup_keys;
DROP TABLE IF EXISTS messages;
DROP SEQUENCE IF EXISTS messages_id_seq;
