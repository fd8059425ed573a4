-- rlock: semaphore acquire (Redisson RSemaphore): take ARGV[1] permits if that many are left.
-- KEYS[1] permits counter. Returns 1 taken, 0 not enough.
local n = tonumber(ARGV[1])
local v = tonumber(redis.call('get', KEYS[1]) or '0')
if v >= n then
    redis.call('decrby', KEYS[1], n)
    return 1
end
return 0
