-- borrow.lua: a segmented event's unit taken from a segment that is not the users' home
-- (issue 19), for users whose home segment held their claim (reserve.lua's code 6).
-- KEYS[1] seckill:{e<ID>.<k>}:stock  KEYS[2] ...:pending (the lending segment k's keys)
-- ARGV[1] now_ms, then one or more pairs: ARGV[2k] user_id, ARGV[2k+1] order_id, or
--   "order_id:q" for an order of q > 1 units (issue 31)
-- Returns an array with one code per pair, in order: 0 taken, 1 this segment has fewer
-- units than the order's (none taken: an order's units all come from one segment),
-- 5 this segment is not loaded. An ARGV that is not now_ms plus pairs is an error reply.
-- No buyers set here: one order per user is held by the claim in the home segment. A
-- taken unit's pending entry is an ordinary "user:now_ms", so cancel.lua on this segment
-- gives it back and the reconciler treats it as any other reservation; for q > 1 units it
-- is "user:now_ms:q", and cancel.lua gives back q.
if #ARGV < 3 or #ARGV % 2 == 0 then
    return redis.error_reply('ERR borrow.lua: ARGV is now_ms, then (user_id, order_id) pairs')
end
local n = (#ARGV - 1) / 2
local codes = {}
local stock = redis.call('GET', KEYS[1])
if not stock then
    for i = 1, n do
        codes[i] = 5
    end
    return codes
end
stock = tonumber(stock)
local taken, pending = 0, {}
local np = 0
for i = 1, n do
    local order, q = string.match(ARGV[2 * i + 1], '^(%d+):(%d+)$')
    local entry = ARGV[2 * i] .. ':' .. ARGV[1]
    if order then
        q = tonumber(q)
        entry = entry .. ':' .. q
    else
        order, q = ARGV[2 * i + 1], 1
    end
    if stock - taken < q then
        codes[i] = 1
    else
        taken = taken + q
        np = np + 1
        pending[2 * np - 1] = order
        pending[2 * np] = entry
        codes[i] = 0
    end
end
if taken > 0 then
    redis.call('DECRBY', KEYS[1], taken)
    redis.call('HSET', KEYS[2], unpack(pending))
end
return codes
