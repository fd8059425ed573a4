-- reserve.lua: the flash-sale gate. The orders of one event that reached a worker in one
-- loop turn, decided in arrival order in one atomic step (docs/design.md, Lua scripts).
-- KEYS[1] seckill:{e<ID>}:stock  KEYS[2] ...:buyers  KEYS[3] ...:meta  KEYS[4] ...:pending
-- [KEYS[5] ...:units, needed only when the event's per_user_limit is above 1]
-- ARGV[1] now_ms, then one or more pairs: ARGV[2k] user_id, ARGV[2k+1] order_id, or
--   "order_id:q" for an order of q > 1 units (issue 31)
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
-- Several units (issue 31): the meta's per_user_limit L (absent: 1). With L = 1 every
-- pair is one unit and the path above is the whole story (an "order_id:q" pair answers
-- "Q1"). With L > 1 the units hash (user -> units held over the user's live orders,
-- the claims included) counts per user; a pair of q units is taken whole or not at all:
-- "Q<L>" q alone is over L, "L<held>:<order_id>" the user's held + q would pass L (the
-- order is the buyers hash's: the user's latest), 1 nothing left, "S<left>" fewer than
-- q left (K = 1; with K > 1 the home segment claims q units and borrow.lua takes them
-- all from one other segment). A taken order's pending entry is "user:now_ms:q" (q > 1)
-- and a claim "user:now_ms:q:c", so that cancel.lua gives back q units.
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
local win = redis.call('HMGET', KEYS[3], 'starts_at_ms', 'ends_at_ms', 'segments',
                      'per_user_limit')
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
local limit = tonumber(win[4] or '1') or 1
if limit > 1 then
    if not KEYS[5] then
        return redis.error_reply('ERR reserve.lua: per_user_limit > 1 needs KEYS[5] (units)')
    end
    -- several units per user: the units hash counts them (header); not the hot path of
    -- "1 per customer", which stays below untouched
    local taken, held, latest, nbuy = 0, {}, {}, 0
    local buyers, units, pending = {}, {}, {}
    for i = 1, n do
        local user, word = ARGV[2 * i], ARGV[2 * i + 1]
        local order, q = string.match(word, '^(%d+):(%d+)$')
        if order then
            q = tonumber(q)
        else
            order, q = word, 1
        end
        local left = stock - taken
        if q < 1 or q > limit then
            codes[i] = 'Q' .. limit
        elseif k == 1 and left <= 0 then
            codes[i] = 1
        elseif k == 1 and left < q then
            codes[i] = 'S' .. left
        else
            local h = held[user]
            if not h then
                h = tonumber(redis.call('HGET', KEYS[5], user) or '0')
            end
            if h + q > limit then
                held[user] = h
                codes[i] = 'L' .. h .. ':' .. (latest[user] or redis.call('HGET', KEYS[2], user) or '')
            else
                local entry = user .. ':' .. now_s
                if q > 1 then
                    entry = entry .. ':' .. q
                end
                if left < q then -- K > 1: the claim of q units, none taken here
                    entry = entry .. ':c'
                    codes[i] = 6
                else
                    taken = taken + q
                    codes[i] = 0
                end
                held[user], latest[user] = h + q, order
                nbuy = nbuy + 1
                buyers[2 * nbuy - 1], buyers[2 * nbuy] = user, order
                units[2 * nbuy - 1], units[2 * nbuy] = user, h + q
                pending[2 * nbuy - 1], pending[2 * nbuy] = order, entry
            end
        end
    end
    if taken > 0 then
        redis.call('DECRBY', KEYS[1], taken)
    end
    if nbuy > 0 then
        redis.call('HSET', KEYS[2], unpack(buyers))
        redis.call('HSET', KEYS[5], unpack(units))
        redis.call('HSET', KEYS[4], unpack(pending))
    end
    return codes
end
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
    if string.find(order, ':', 1, true) then -- several units over a limit of 1
        codes[i] = 'Q1'
    elseif empty and k == 1 then
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
