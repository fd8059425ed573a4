-- rlock, Redisson mode: a fair-lock waiter that gives up (RedissonFairLock.acquireFailedAsync):
-- the deadlines of those behind it move up by its wait, and it leaves queue and set.
-- KEYS[1] queue, KEYS[2] deadlines; ARGV[1] owner, ARGV[2] wait ms. Returns 0.
local queue = redis.call('lrange', KEYS[1], 0, -1)
local i = 1
while i <= #queue and queue[i] ~= ARGV[1] do
    i = i + 1
end
i = i + 1
while i <= #queue do
    redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[i])
    i = i + 1
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])
return 0
