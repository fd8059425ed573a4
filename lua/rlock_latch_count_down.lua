-- rlock: countdown latch count down. At zero the key goes (a later try-set may start
-- again) and waiters wake. A latch that is not counting stays so (no -1 left behind).
-- KEYS[1] count; ARGV[1] channel. Returns the count now.
if redis.call('exists', KEYS[1]) == 0 then
    return 0
end
local v = redis.call('decr', KEYS[1])
if v <= 0 then
    redis.call('del', KEYS[1])
    redis.call('publish', ARGV[1], '0')
    return 0
end
return v
