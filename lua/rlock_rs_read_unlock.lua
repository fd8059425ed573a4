-- rlock, Redisson mode: release one read hold (RedissonReadLock.unlockInnerAsync, without
-- the unlock-latch key): drop this hold's timeout key; while other holds are left the
-- hash lives as long as the longest of their timeout keys; the last hold deletes the
-- hash and publishes UNLOCK_MESSAGE (0) on redisson_rwlock:{name}.
-- KEYS[1] rw hash, KEYS[2] channel, KEYS[3] this owner's timeout prefix, KEYS[4] key
-- prefix ('{name}'); ARGV[1] owner, ARGV[2] publish command.
-- Returns -1 not held by this owner, else this owner's holds left (0: none).
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call(ARGV[2], KEYS[2], '0')
    return -1
end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
    return -1
end
local mine = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if mine == 0 then
    redis.call('hdel', KEYS[1], ARGV[1])
end
redis.call('del', KEYS[3] .. ':' .. (mine + 1))
if redis.call('hlen', KEYS[1]) > 1 then
    local max = -3
    for _, f in ipairs(redis.call('hkeys', KEYS[1])) do
        local c = tonumber(redis.call('hget', KEYS[1], f))
        if type(c) == 'number' then
            for i = c, 1, -1 do
                max = math.max(max, redis.call('pttl', KEYS[4] .. ':' .. f .. ':rwlock_timeout:' .. i))
            end
        end
    end
    if max > 0 then
        redis.call('pexpire', KEYS[1], max)
        return mine
    end
    if mode == 'write' then
        return mine
    end
end
redis.call('del', KEYS[1])
redis.call(ARGV[2], KEYS[2], '0')
return mine
