-- rlock: read side of a read-write lock. One hash: field 'mode' = read|write, and
-- owner -> read holds, owner:write -> write holds. Each reader also has a deadline in a
-- zset, renewed by its watchdog, so a dead reader is purged and cannot starve writers
-- while other readers keep the hash alive. Time is the server's. As in Redisson, the
-- write holder may take reads (mode stays write until its last write hold goes, then
-- turns read: the downgrade); a reader cannot take the write side (no upgrade).
-- KEYS[1] rw hash, KEYS[2] reader deadlines zset, KEYS[3] fence; ARGV[1] owner, ARGV[2] lease ms,
-- ARGV[3] fence keep ms.
-- Returns {1, fence} when acquired, {0, pttl} while a writer holds it.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
local dead = redis.call('zrangebyscore', KEYS[2], '-inf', now)
for _, o in ipairs(dead) do
    redis.call('hdel', KEYS[1], o)
    redis.call('zrem', KEYS[2], o)
end
if #dead > 0 and redis.call('hlen', KEYS[1]) == 1 then
    redis.call('del', KEYS[1])
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == 'write' then
    if redis.call('hexists', KEYS[1], ARGV[1] .. ':write') == 0 then
        return {0, redis.call('pttl', KEYS[1])}
    end
else
    redis.call('hset', KEYS[1], 'mode', 'read')
end
redis.call('hincrby', KEYS[1], ARGV[1], 1)
local old = tonumber(redis.call('zscore', KEYS[2], ARGV[1]) or '0')
if now + ttl > old then
    redis.call('zadd', KEYS[2], now + ttl, ARGV[1])
end
for i = 1, 2 do
    if redis.call('pttl', KEYS[i]) < ttl then
        redis.call('pexpire', KEYS[i], ttl)
    end
end
return {1, rlock_fence(KEYS[3], ARGV[3])}
