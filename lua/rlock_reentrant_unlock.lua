-- rlock: release one hold of a reentrant or fair lock; the last hold deletes the hash
-- and wakes waiters. An owner that holds nothing gets -1 (IllegalMonitorState), never 0.
-- KEYS[1] lock hash; ARGV[1] owner, ARGV[2] channel.
-- Returns -1 not held by this owner, 0 released, n > 0 holds left.
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
    return -1
end
local n = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if n > 0 then
    return n
end
redis.call('del', KEYS[1])
redis.call('publish', ARGV[2], '0')
return 0
