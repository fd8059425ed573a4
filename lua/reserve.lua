-- reserve.lua: the flash-sale gate, one atomic step per buyer (DESIGN.md, Lua scripts).
-- KEYS[1] seckill:{e<ID>}:stock  KEYS[2] ...:buyers  KEYS[3] ...:meta  KEYS[4] ...:pending
-- ARGV[1] user_id  ARGV[2] order_id  ARGV[3] now_ms
-- Returns 0 ok, 1 sold out, 2 duplicate, 3 not started, 4 ended, 5 event not loaded.
-- Every check comes before the first write, so a rejected request changes nothing and
-- the stock never goes below zero.
local stock = redis.call('GET', KEYS[1])
if not stock then
    return 5
end
local now = tonumber(ARGV[3])
local win = redis.call('HMGET', KEYS[3], 'starts_at_ms', 'ends_at_ms')
if win[1] and now < tonumber(win[1]) then
    return 3
end
if win[2] and now >= tonumber(win[2]) then
    return 4
end
if tonumber(stock) <= 0 then
    return 1
end
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then
    return 2
end
redis.call('DECR', KEYS[1])
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[4], ARGV[2], ARGV[1] .. ':' .. ARGV[3])
return 0
