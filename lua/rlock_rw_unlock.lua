-- rlock: release one hold of a read or write lock; when no holder is left the hash
-- goes and waiters wake; when the last write hold goes and the writer's reads remain,
-- the mode turns read (the downgrade) and waiting readers wake.
-- KEYS[1] rw hash, KEYS[2] reader deadlines zset;
-- ARGV[1] owner (read) or owner:write (write), ARGV[2] channel.
-- Returns -1 not held by this owner, 0 released, n > 0 holds left.
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
    return -1
end
local n = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if n > 0 then
    return n
end
redis.call('hdel', KEYS[1], ARGV[1])
redis.call('zrem', KEYS[2], ARGV[1])
if redis.call('hlen', KEYS[1]) <= 1 then
    redis.call('del', KEYS[1], KEYS[2])
elseif string.sub(ARGV[1], -6) == ':write' then
    redis.call('hset', KEYS[1], 'mode', 'read')
end
-- a reader leaving can let a writer in even when other readers remain queued behind it
redis.call('publish', ARGV[2], '0')
return 0
