-- rlock, Redisson mode: RCountDownLatch.countDown: at zero the key goes and
-- ZERO_COUNT_MESSAGE (0) is published on redisson_countdownlatch__channel__{name}.
-- KEYS[1] count, KEYS[2] channel; ARGV[1] publish command. Returns the count now (>= 0).
local v = redis.call('decr', KEYS[1])
if v <= 0 then
    redis.call('del', KEYS[1])
end
if v == 0 then
    redis.call(ARGV[1], KEYS[2], '0')
end
return math.max(v, 0)
