-- Fresh messages become per-message visible rows again, delivered once when a range held them.
UPDATE messages m SET visible_at = now(), delivery_count = 1, lease_id = r.lease_id
FROM message_ranges r
WHERE m.queue_no = r.queue_no AND m.group_no = r.group_no AND m.id BETWEEN r.from_id AND r.to_id AND m.visible_at = '-infinity';
UPDATE messages SET visible_at = now() WHERE visible_at = '-infinity';
DROP TABLE IF EXISTS message_ranges, message_cursors;
