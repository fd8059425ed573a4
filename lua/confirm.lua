-- confirm.lua: the order is durable in Kafka; it is no longer the reconciler's business.
-- KEYS[1] seckill:{e<ID>}:pending  [KEYS[2] seckill:{e<ID>}:accepted]
-- ARGV[1] order_id [ARGV[2] order_id ...]
-- Returns how many of the orders were confirmed: for one order 1 confirmed, 0 not pending
-- (already confirmed or cancelled). Several ids of one event in one call let the front
-- confirm the orders of one delivery batch for the cost of one script run.
-- Without KEYS[2] (DESIGN.md's form, what seckill-order sends): one HDEL of every id.
-- With KEYS[2], each entry (user_id:ts_ms) also moves to the event's accepted hash, which
-- order_status.lua reads. seckill-order no longer asks for it: its order index entry says
-- "acknowledged" (order_msg.h), which spares Redis an HGET and an HSET per order.
if not KEYS[2] then
    return redis.call('HDEL', KEYS[1], unpack(ARGV))
end
local n = 0
for i = 1, #ARGV do
    local v = redis.call('HGET', KEYS[1], ARGV[i])
    if v then
        redis.call('HDEL', KEYS[1], ARGV[i])
        redis.call('HSET', KEYS[2], ARGV[i], v)
        n = n + 1
    end
end
return n
