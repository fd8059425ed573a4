-- rlock: expirable-permit semaphore release (RPermitExpirableSemaphore.tryRelease, both
-- modes): the permit goes back and the new count is published; a permit past its
-- deadline goes back too but does not count as held.
-- KEYS[1] free permits, KEYS[2] deadlines zset, KEYS[3] channel; ARGV[1] permit id (32 hex),
-- ARGV[2] now ms, ARGV[3] publish command.
-- Returns 1 released, 0 not held (unknown id, or expired).
local id = string.gsub(ARGV[1], '%x%x', function(h) return string.char(tonumber(h, 16)) end)
local deadline = redis.call('zscore', KEYS[2], id)
if redis.call('zrem', KEYS[2], id) ~= 1 then
    return 0
end
local v = redis.call('incrby', KEYS[1], 1)
redis.call(ARGV[3], KEYS[3], v)
if tonumber(deadline) <= tonumber(ARGV[2]) then
    return 0
end
return 1
