-- cancel.lua: gives a reservation back (its message surely never reached Kafka).
-- KEYS[1] seckill:{e<ID>}:stock  KEYS[2] ...:buyers  KEYS[3] ...:pending
-- ARGV[1] order_id  ARGV[2] user_id
-- Returns 1 cancelled, 0 nothing to cancel (already cancelled or confirmed), -1 the
-- pending entry belongs to another user (nothing changed).
-- Only the pending entry proves the stock was taken for this order, so without it
-- nothing is touched: a second call, or a call after confirm, changes nothing.
local v = redis.call('HGET', KEYS[3], ARGV[1])
if not v then
    return 0
end
if string.sub(v, 1, #ARGV[2] + 1) ~= ARGV[2] .. ':' then
    return -1
end
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('INCR', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[2])
return 1
