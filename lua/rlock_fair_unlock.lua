-- rlock: release one hold of a fair lock. The last hold deletes the hash and publishes
-- the owner at the head of the queue: only that waiter tries at once, the others keep
-- their place by their periodic retry (no thundering herd). An owner that holds
-- nothing gets -1, never 0.
-- KEYS[1] lock hash, KEYS[2] queue list; ARGV[1] owner, ARGV[2] channel.
-- Returns -1 not held by this owner, 0 released, n > 0 holds left.
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
    return -1
end
local n = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if n > 0 then
    return n
end
redis.call('del', KEYS[1])
redis.call('publish', ARGV[2], redis.call('lindex', KEYS[2], 0) or '0')
return 0
