-- rlock: a fair-lock waiter that gives up leaves the queue, and wakes the others in
-- case it was at the head.
-- KEYS[1] queue list, KEYS[2] waiter deadlines zset; ARGV[1] owner, ARGV[2] channel.
-- Returns the number of queue entries removed.
local n = redis.call('lrem', KEYS[1], 0, ARGV[1])
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('publish', ARGV[2], '0')
return n
