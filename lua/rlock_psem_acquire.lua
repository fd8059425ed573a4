-- rlock: expirable-permit semaphore acquire (Redisson RPermitExpirableSemaphore, both
-- modes): one permit, with an id, that comes back by itself at its deadline (its holder
-- died). Free permits are a counter; permits out are a zset id -> deadline (ms, client
-- clock as Redisson's; 922337203685477: never). Expired permits are given back first,
-- and their return is published (the new count). The id is stored as its 16 bytes, as
-- Redisson stores it, so Java and C permits are one set.
-- KEYS[1] free permits, KEYS[2] deadlines zset, KEYS[3] channel; ARGV[1] permit id (32 hex),
-- ARGV[2] deadline ms, ARGV[3] now ms, ARGV[4] publish command.
-- Returns {1, 0} taken, {0, ms until the nearest deadline (0: none will come)}.
local expired = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3])
if #expired > 0 then
    redis.call('zrem', KEYS[2], unpack(expired))
    local v = redis.call('incrby', KEYS[1], #expired)
    if v > 0 then
        redis.call(ARGV[4], KEYS[3], v)
    end
end
local free = tonumber(redis.call('get', KEYS[1]) or '0')
if free >= 1 then
    redis.call('decrby', KEYS[1], 1)
    local id = string.gsub(ARGV[1], '%x%x', function(h) return string.char(tonumber(h, 16)) end)
    redis.call('zadd', KEYS[2], ARGV[2], id)
    local ttl = redis.call('pttl', KEYS[1])
    if ttl > 0 then
        redis.call('pexpire', KEYS[2], ttl)
    end
    return {1, 0}
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
if first[1] and tonumber(first[2]) < 922337203685477 then
    return {0, math.max(1, tonumber(first[2]) - tonumber(ARGV[3]))}
end
return {0, 0}
