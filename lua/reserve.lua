-- reserve.lua: the flash-sale gate. The orders of one event that reached a worker in one
-- loop turn, decided in arrival order in one atomic step (docs/design.md, Lua scripts).
-- KEYS[1] seckill:{e<ID>}:stock  KEYS[2] ...:buyers  KEYS[3] ...:meta  KEYS[4] ...:pending
-- ARGV[1] now_ms, then one or more pairs: ARGV[2k] user_id, ARGV[2k+1] order_id
-- Returns an array with one code per pair, in order: 0 ok, 1 sold out, 2 duplicate,
-- 3 not started, 4 ended, 5 event not loaded, 6 claim held (below), 100 + K the front's
-- segment count is not the event's K (nothing touched; the front retries with K). An
-- ARGV that is not now_ms plus pairs is an error reply, and nothing is touched.
-- Segmented stock (issue 19): the keys are one segment's (order_msg.h), the users this
-- segment's home users. ARGV[1] is "now_ms:K" when the front knows the event has K > 1
-- segments (meta "segments", written by event_load.lua); a plain now_ms means K = 1, the
-- path of before. With K > 1 an empty home segment does not answer "sold out": it holds
-- the user's claim (a buyer, and the pending entry "user:now_ms:c" with no unit taken
-- here) and answers 6; the front then takes the unit from another segment (borrow.lua)
-- or, if none has any, gives the claim back (cancel.lua) and answers sold out.
-- Every check of a pair comes before its writes, so a refused pair changes nothing and
-- the stock never goes below zero. A user twice in one call: the second is a duplicate
-- (the first is a buyer by then). The writes of the accepted pairs go out together at
-- the end (one DECRBY, two HSETs): the same state as one call per pair.
-- The buyers hash (issue 31) maps a user to the id of the order they hold (or held, when
-- the event keeps them out after a release): a duplicate answers that id, a bulk string
-- in place of the code 2 (an empty string when a reload did not know it), so that a retry
-- whose first answer was lost finds its order.
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
local now, segs, now_s = tonumber(ARGV[1]), 1, ARGV[1]
if not now then
    local a, b = string.match(ARGV[1], '^(%d+):(%d+)$')
    if not a then
        return redis.error_reply('ERR reserve.lua: ARGV[1] is now_ms or now_ms:K')
    end
    now, segs, now_s = tonumber(a), tonumber(b), a
end
local win = redis.call('HMGET', KEYS[3], 'starts_at_ms', 'ends_at_ms', 'segments')
local k = tonumber(win[3] or '1')
if k ~= segs then
    return refuse_all(100 + k)
end
if win[1] and now < tonumber(win[1]) then
    return refuse_all(3)
end
if win[2] and now >= tonumber(win[2]) then
    return refuse_all(4)
end
stock = tonumber(stock)
local taken, users, pending, seen = 0, {}, {}, {}
local claims, nclaim = {}, 0
-- the order the user holds: this call's earlier one, else the buyers hash's (false: none)
local function held(user)
    return seen[user] or redis.call('HGET', KEYS[2], user)
end
for i = 1, n do
    local user, order = ARGV[2 * i], ARGV[2 * i + 1]
    local empty = stock - taken <= 0
    local h = (k > 1 or not empty) and held(user)
    if empty and k == 1 then
        codes[i] = 1
    elseif h then
        codes[i] = h
    elseif empty then -- K > 1: the claim, no unit taken here
        seen[user] = order
        nclaim = nclaim + 1
        claims[2 * nclaim - 1] = order
        claims[2 * nclaim] = user .. ':' .. now_s .. ':c'
        redis.call('HSET', KEYS[2], user, order)
        codes[i] = 6
    else
        seen[user] = order
        taken = taken + 1
        users[2 * taken - 1] = user
        users[2 * taken] = order
        pending[2 * taken - 1] = order
        pending[2 * taken] = user .. ':' .. now_s
        codes[i] = 0
    end
end
if taken > 0 then
    redis.call('DECRBY', KEYS[1], taken)
    redis.call('HSET', KEYS[2], unpack(users))
    redis.call('HSET', KEYS[4], unpack(pending))
end
if nclaim > 0 then
    redis.call('HSET', KEYS[4], unpack(claims))
end
return codes
