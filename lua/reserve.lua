-- reserve.lua: the flash-sale gate. The orders of one event that reached a worker in one
-- loop turn, decided in arrival order in one atomic step (DESIGN.md, Lua scripts).
-- KEYS[1] seckill:{e<ID>}:stock  KEYS[2] ...:buyers  KEYS[3] ...:meta  KEYS[4] ...:pending
-- ARGV[1] now_ms, then one or more pairs: ARGV[2k] user_id, ARGV[2k+1] order_id
-- Returns an array with one code per pair, in order: 0 ok, 1 sold out, 2 duplicate,
-- 3 not started, 4 ended, 5 event not loaded. An ARGV that is not now_ms plus pairs is an
-- error reply, and nothing is touched.
-- Every check of a pair comes before its writes, so a refused pair changes nothing and
-- the stock never goes below zero. A user twice in one call: the second is a duplicate
-- (the first is a buyer by then). The writes of the accepted pairs go out together at
-- the end (one DECRBY, one SADD, one HSET): the same state as one call per pair.
if #ARGV < 3 or #ARGV % 2 == 0 then
    return redis.error_reply('ERR reserve.lua: ARGV is now_ms, then (user_id, order_id) pairs')
end
local n = (#ARGV - 1) / 2
local codes = {}
local function refuse_all(code)
    for i = 1, n do
        codes[i] = code
    end
    return codes
end
local stock = redis.call('GET', KEYS[1])
if not stock then
    return refuse_all(5)
end
local now = tonumber(ARGV[1])
local win = redis.call('HMGET', KEYS[3], 'starts_at_ms', 'ends_at_ms')
if win[1] and now < tonumber(win[1]) then
    return refuse_all(3)
end
if win[2] and now >= tonumber(win[2]) then
    return refuse_all(4)
end
stock = tonumber(stock)
local taken, users, pending, seen = 0, {}, {}, {}
for i = 1, n do
    local user, order = ARGV[2 * i], ARGV[2 * i + 1]
    if stock - taken <= 0 then
        codes[i] = 1
    elseif seen[user] or redis.call('SISMEMBER', KEYS[2], user) == 1 then
        codes[i] = 2
    else
        seen[user] = true
        taken = taken + 1
        users[taken] = user
        pending[2 * taken - 1] = order
        pending[2 * taken] = user .. ':' .. ARGV[1]
        codes[i] = 0
    end
end
if taken > 0 then
    redis.call('DECRBY', KEYS[1], taken)
    redis.call('SADD', KEYS[2], unpack(users))
    redis.call('HSET', KEYS[4], unpack(pending))
end
return codes
