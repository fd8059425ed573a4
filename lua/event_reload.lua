-- event_reload.lua: rebuilds an event's gate after its Redis keys were lost, from
-- PostgreSQL once the consumer has drained the event's partition (order_reconcile.c).
-- KEYS[1] seckill:{e<ID>}:stock  KEYS[2] ...:meta  KEYS[3] ...:buyers
-- ARGV[1] stock (PostgreSQL stock_left)  ARGV[2] starts_at_ms  ARGV[3] ends_at_ms
-- ARGV[4] per_user_limit  ARGV[5..] user ids that hold an order for the event
-- Returns 1 reloaded, 0 the gate exists (nothing changed: it was loaded meanwhile, and a
-- live stock is never overwritten).
-- The stock key is written last: reserve.lua answers "not loaded" until it exists.
if redis.call('EXISTS', KEYS[1]) == 1 then
    return 0
end
redis.call('DEL', KEYS[3])
local n = #ARGV
local i = 5
while i <= n do -- SADD in chunks: unpack() has a limit on the number of values
    local j = math.min(i + 999, n)
    redis.call('SADD', KEYS[3], unpack(ARGV, i, j))
    i = j + 1
end
redis.call('HSET', KEYS[2], 'starts_at_ms', ARGV[2], 'ends_at_ms', ARGV[3],
           'per_user_limit', ARGV[4])
redis.call('SET', KEYS[1], ARGV[1])
return 1
