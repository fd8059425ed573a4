-- 003: segmented stock (issue 19). An event's stock may be split over `segments` Redis
-- segments (order/README.md); 1, the default, is the single gate of before. stock_left
-- stays the event's total: the consumer takes each order off it whatever segment sold it.
ALTER TABLE seckill_event ADD COLUMN IF NOT EXISTS segments int NOT NULL DEFAULT 1
    CHECK (segments BETWEEN 1 AND 64);
