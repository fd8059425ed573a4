-- 004: per-event overrides of the rate-limit levels (issue 19 section 2), given at
-- creation as "limits": {"ip_rate", "user_rate", "event_rate"} (order/README.md). NULL:
-- the level keeps the front's configured default (ratelimit.ip_rate, ratelimit.rate,
-- limits.event_rate). Requests per second; the bounds are the configuration's.
ALTER TABLE seckill_event ADD COLUMN IF NOT EXISTS ip_rate int
    CHECK (ip_rate BETWEEN 1 AND 1000000);
ALTER TABLE seckill_event ADD COLUMN IF NOT EXISTS user_rate int
    CHECK (user_rate BETWEEN 1 AND 1000000);
ALTER TABLE seckill_event ADD COLUMN IF NOT EXISTS event_rate int
    CHECK (event_rate BETWEEN 1 AND 10000000);
