-- cancel.lua: gives reservations back (their messages surely never reached Kafka).
-- KEYS[1] seckill:{e<ID>}:stock  KEYS[2] ...:buyers  KEYS[3] ...:pending
-- [KEYS[4] ...:units, the user's units hash of an event whose per_user_limit is above 1]
-- ARGV[1] order_id  ARGV[2] user_id  [ARGV[3] order_id  ARGV[4] user_id ...]: one or more
-- pairs of one event (the front batches the cancels of one loop turn, the reconciler sends one).
-- Per pair: 1 cancelled, 0 nothing to cancel (already cancelled or confirmed), -1 the
-- pending entry belongs to another user (nothing changed). One pair answers its code as
-- an integer (the first contract's form); several answer an array of codes, in order. An ARGV that
-- is not pairs is an error reply, and nothing is touched.
-- A claim of a segmented event (pending "user:ts:c", reserve.lua) took no unit in this
-- segment: it is removed with its buyer (code 1 too) and gives no stock back here; a
-- borrowed unit goes back to its lending segment by a cancel there, whose entry is an
-- ordinary "user:ts" (borrow.lua).
-- KEYS[2] is the buyers hash (user -> order id, reserve.lua): the user's field goes with
-- the entry.
-- Several units (issue 31): an entry "user:ts:q" (or the claim "user:ts:q:c") gives
-- back q units; when the user has a units field (KEYS[4], reserve.lua), q comes off it,
-- and the buyers field goes only with the user's last unit.
-- Only the pending entry proves the stock was taken for this order, so without it
-- nothing is touched: a second call, or a call after confirm, changes nothing.
if #ARGV < 2 or #ARGV % 2 == 1 then
    return redis.error_reply('ERR cancel.lua: ARGV is (order_id, user_id) pairs')
end
local codes, given = {}, 0
for i = 1, #ARGV / 2 do
    local order, user = ARGV[2 * i - 1], ARGV[2 * i]
    local v = redis.call('HGET', KEYS[3], order)
    if not v then
        codes[i] = 0
    elseif string.sub(v, 1, #user + 1) ~= user .. ':' then
        codes[i] = -1
    else
        redis.call('HDEL', KEYS[3], order)
        local q = tonumber(string.match(v, '^%d+:%d+:(%d+)') or '1')
        local left = 0
        if KEYS[4] and redis.call('HEXISTS', KEYS[4], user) == 1 then
            left = redis.call('HINCRBY', KEYS[4], user, -q)
            if left <= 0 then
                redis.call('HDEL', KEYS[4], user)
            end
        end
        if left <= 0 then
            redis.call('HDEL', KEYS[2], user)
        end
        if string.sub(v, -2) ~= ':c' then
            given = given + q
        end
        codes[i] = 1
    end
end
if given > 0 then
    redis.call('INCRBY', KEYS[1], given)
end
if #codes == 1 then
    return codes[1]
end
return codes
