-- rlock: expirable-permit semaphore, free permits now (availablePermits): expired permits
-- are given back (and published) first.
-- KEYS[1] free permits, KEYS[2] deadlines zset, KEYS[3] channel; ARGV[1] now ms, ARGV[2] publish command.
-- Returns the free permits.
local expired = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1])
if #expired > 0 then
    redis.call('zrem', KEYS[2], unpack(expired))
    local v = redis.call('incrby', KEYS[1], #expired)
    if v > 0 then
        redis.call(ARGV[2], KEYS[3], v)
    end
end
return tonumber(redis.call('get', KEYS[1]) or '0')
