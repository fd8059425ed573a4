-- 010: a user's orders of one event, whatever their status (issue 32 item 5). Once an
-- event's Redis keys expired, the orders list (GET /api/v1/orders?event_id=) asks
-- PostgreSQL for the user's order; seckill_order_one_per_user is partial (it leaves
-- the cancelled and expired orders out), so this index keeps that query off a scan.
CREATE INDEX IF NOT EXISTS seckill_order_event_user_idx ON seckill_order (event_id, user_id);
