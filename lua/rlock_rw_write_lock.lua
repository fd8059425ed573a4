-- rlock: write side of a read-write lock: exclusive and reentrant; refused while anyone
-- (this owner too) holds a read without the write. Readers whose deadline passed (dead
-- holders) are purged first. See rlock_rw_read_lock.lua.
-- KEYS[1] rw hash, KEYS[2] reader deadlines zset, KEYS[3] fence; ARGV[1] owner:write, ARGV[2] lease ms,
-- ARGV[3] fence keep ms.
-- Returns {1, fence} when acquired, {0, pttl} while others hold it.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local dead = redis.call('zrangebyscore', KEYS[2], '-inf', now)
for _, o in ipairs(dead) do
    redis.call('hdel', KEYS[1], o)
    redis.call('zrem', KEYS[2], o)
end
if #dead > 0 and redis.call('hlen', KEYS[1]) == 1 then
    redis.call('del', KEYS[1])
end
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[1]) == 1) then
    redis.call('hset', KEYS[1], 'mode', 'write')
    redis.call('hincrby', KEYS[1], ARGV[1], 1)
    redis.call('pexpire', KEYS[1], ARGV[2])
    return {1, rlock_fence(KEYS[3], ARGV[3])}
end
return {0, redis.call('pttl', KEYS[1])}
