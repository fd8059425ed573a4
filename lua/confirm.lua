-- confirm.lua: the order is durable in Kafka; it is no longer the reconciler's business.
-- KEYS[1] seckill:{e<ID>}:pending  [KEYS[2] seckill:{e<ID>}:accepted]
-- ARGV[1] order_id
-- Returns 1 confirmed, 0 not pending (already confirmed or cancelled).
-- With KEYS[2], the entry (user_id:ts_ms) moves to the event's accepted hash, which
-- GET /api/v1/orders/{id} reads to answer "queued" until the consumer has written the
-- order to PostgreSQL. It is bounded by the event's stock.
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then
    return 0
end
redis.call('HDEL', KEYS[1], ARGV[1])
if KEYS[2] then
    redis.call('HSET', KEYS[2], ARGV[1], v)
end
return 1
