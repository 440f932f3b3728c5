-- How many messages a range took when its lease took it (message_ranges, 0018): an acknowledgement that names
-- that many of its messages deletes them by one walk of the range's ids and ends the range at once, instead of
-- one primary-key probe per receipt and a scan for what the range still holds (sql/messages/ack.sql). NULL for
-- the ranges taken before this column: acknowledged the per-receipt way.
ALTER TABLE message_ranges ADD COLUMN taken integer;
