-- rlock, Redisson mode: RCountDownLatch.trySetCount: set the count when the latch is not
-- counting, and publish NEW_COUNT_MESSAGE (1) on redisson_countdownlatch__channel__{name}.
-- KEYS[1] count (the latch's name), KEYS[2] channel; ARGV[1] count, ARGV[2] publish command.
-- Returns 1 set, 0 already counting.
if redis.call('exists', KEYS[1]) == 0 then
    redis.call('set', KEYS[1], ARGV[1])
    redis.call(ARGV[2], KEYS[2], '1')
    return 1
end
return 0
