-- rlock, Redisson mode: release one hold of a fair lock (RedissonFairLock.unlockInnerAsync,
-- without the unlock-latch key): stale waiters dropped; the last hold deletes the hash
-- and publishes UNLOCK_MESSAGE (0) to the head waiter only, on
-- redisson_lock__channel:{name}:<its owner>. A lock that is gone also tells the head.
-- KEYS[1] lock hash, KEYS[2] queue, KEYS[3] deadlines, KEYS[4] channel prefix;
-- ARGV[1] owner, ARGV[2] lease ms, ARGV[3] now ms, ARGV[4] publish command.
-- Returns -1 not held by this owner, 0 released, n > 0 holds left.
while true do
    local first = redis.call('lindex', KEYS[2], 0)
    if first == false then
        break
    end
    local t = redis.call('zscore', KEYS[3], first)
    if t ~= false and tonumber(t) <= tonumber(ARGV[3]) then
        redis.call('zrem', KEYS[3], first)
        redis.call('lpop', KEYS[2])
    else
        break
    end
end
if redis.call('exists', KEYS[1]) == 0 then
    local nxt = redis.call('lindex', KEYS[2], 0)
    if nxt ~= false then
        redis.call(ARGV[4], KEYS[4] .. ':' .. nxt, '0')
    end
    return -1
end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
    return -1
end
local n = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if n > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    return n
end
redis.call('del', KEYS[1])
local nxt = redis.call('lindex', KEYS[2], 0)
if nxt ~= false then
    redis.call(ARGV[4], KEYS[4] .. ':' .. nxt, '0')
end
return 0
