-- 009: archived events (issue 32). An event that took orders is never deleted, only
-- archived by DELETE /api/v1/events/{id}: out of the list, its orders and its record
-- (seckill_admin_audit) readable.
ALTER TABLE seckill_event ADD COLUMN IF NOT EXISTS archived_at timestamptz;
