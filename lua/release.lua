-- release.lua: gives back the unit of a durable order that was cancelled or expired
-- (issue 22), after PostgreSQL committed the close and stock_left + 1.
-- KEYS[1] seckill:{e<ID>}:stock  KEYS[2] ...:buyers  KEYS[3] ...:released
-- [KEYS[4] ...:units, the units hash of an event whose per_user_limit is above 1]
-- ARGV[1] order_id  ARGV[2] user_id  ARGV[3] rebuy: 1 the buyer may buy this event again
--   (the event's rebuy_after_release: HDEL from the buyers hash), 0 the buyer stays in buyers.
-- [ARGV[4] quantity: the order's units, 1 when absent (issue 31). With rebuy they come
--   off the user's units field, and the buyers field goes with the user's last unit.]
-- Answers 1 released now, 0 already released (nothing changed), -1 the event's stock is
-- not loaded (nothing changed). After -1 the caller keeps the release owed while the sale
-- is on: the reconciler's reload puts the orders closed at its read into the released set
-- and their units into the stock, so the retry answers 0 for those and gives back the unit
-- of one that closed after the read.
-- Exactly once by order id: the released set remembers every order whose unit came back,
-- so a retry (the front's after a lost answer, the consumer's release sweep after a crash
-- between the PostgreSQL commit and this call) changes nothing. Unlike cancel.lua there is
-- no pending entry to prove the unit was taken: the order was confirmed long ago.
local q = tonumber(ARGV[4] or '1')
if (#ARGV ~= 3 and #ARGV ~= 4) or not q or q < 1 then
    return redis.error_reply('ERR release.lua: ARGV is order_id, user_id, rebuy[, quantity]')
end
if redis.call('EXISTS', KEYS[1]) == 0 then
    return -1
end
if redis.call('SADD', KEYS[3], ARGV[1]) == 0 then
    return 0
end
redis.call('INCRBY', KEYS[1], q)
if ARGV[3] == '1' then
    local left = 0
    if KEYS[4] and redis.call('HEXISTS', KEYS[4], ARGV[2]) == 1 then
        left = redis.call('HINCRBY', KEYS[4], ARGV[2], -q)
        if left <= 0 then
            redis.call('HDEL', KEYS[4], ARGV[2])
        end
    end
    if left <= 0 then
        redis.call('HDEL', KEYS[2], ARGV[2])
    end
end
return 1
