-- event_load.lua: puts a new event's gate into Redis (after its PostgreSQL row exists).
-- KEYS[1] seckill:{e<ID>}:stock  KEYS[2] seckill:{e<ID>}:meta
-- ARGV[1] stock  ARGV[2] starts_at_ms  ARGV[3] ends_at_ms  ARGV[4] per_user_limit
-- [ARGV[5] segments K > 1: the keys are one segment's, ARGV[1] its share of the stock]
-- [ARGV[6] ip_rate  ARGV[7] user_rate  ARGV[8] event_rate: the event's rate overrides
--  (issue 19 section 2), "0" for none; kept in meta for the fronts that did not create
--  the event (they read them once, order/README.md)]
-- [ARGV[9] challenge_bits: the event's proof-of-work difficulty (issue 31), "-1" a hidden
--  order path, "0" for neither]
-- Returns 1 loaded, 0 already loaded (nothing changed: a live gate's stock is never
-- overwritten, since reservations may already have taken some of it).
if redis.call('EXISTS', KEYS[1]) == 1 then
    return 0
end
redis.call('HSET', KEYS[2], 'starts_at_ms', ARGV[2], 'ends_at_ms', ARGV[3],
           'per_user_limit', ARGV[4])
if ARGV[5] and tonumber(ARGV[5]) > 1 then
    redis.call('HSET', KEYS[2], 'segments', ARGV[5])
end
for i, field in ipairs({'ip_rate', 'user_rate', 'event_rate'}) do
    local v = ARGV[5 + i]
    if v and tonumber(v) and tonumber(v) > 0 then
        redis.call('HSET', KEYS[2], field, v)
    end
end
if ARGV[9] and tonumber(ARGV[9]) and tonumber(ARGV[9]) ~= 0 then
    redis.call('HSET', KEYS[2], 'challenge_bits', ARGV[9])
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
