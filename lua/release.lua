-- release.lua: gives back the unit of a durable order that was cancelled or expired
-- (issue 22), after PostgreSQL committed the close and stock_left + 1.
-- KEYS[1] seckill:{e<ID>}:stock  KEYS[2] ...:buyers  KEYS[3] ...:released
-- ARGV[1] order_id  ARGV[2] user_id  ARGV[3] rebuy: 1 the buyer may buy this event again
--   (the event's rebuy_after_release: HDEL from the buyers hash), 0 the buyer stays in buyers.
-- Answers 1 released now, 0 already released (nothing changed), -1 the event's stock is
-- not loaded (nothing changed). After -1 the caller keeps the release owed while the sale
-- is on: the reconciler's reload puts the orders closed at its read into the released set
-- and their units into the stock, so the retry answers 0 for those and gives back the unit
-- of one that closed after the read.
-- Exactly once by order id: the released set remembers every order whose unit came back,
-- so a retry (the front's after a lost answer, the consumer's release sweep after a crash
-- between the PostgreSQL commit and this call) changes nothing. Unlike cancel.lua there is
-- no pending entry to prove the unit was taken: the order was confirmed long ago.
if #ARGV ~= 3 then
    return redis.error_reply('ERR release.lua: ARGV is order_id, user_id, rebuy')
end
if redis.call('EXISTS', KEYS[1]) == 0 then
    return -1
end
if redis.call('SADD', KEYS[3], ARGV[1]) == 0 then
    return 0
end
redis.call('INCR', KEYS[1])
if ARGV[3] == '1' then
    redis.call('HDEL', KEYS[2], ARGV[2])
end
return 1
