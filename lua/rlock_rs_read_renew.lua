-- rlock, Redisson mode: watchdog renewal of a read hold (Redisson's ReadLockTask for one
-- owner): every timeout key of this owner's holds and the hash get the lease again.
-- KEYS[1] rw hash, KEYS[2] key prefix ('{name}'); ARGV[1] owner, ARGV[2] lease ms.
-- Returns 1 renewed, 0 lost.
local c = redis.call('hget', KEYS[1], ARGV[1])
if c == false then
    return 0
end
for i = tonumber(c), 1, -1 do
    redis.call('pexpire', KEYS[2] .. ':' .. ARGV[1] .. ':rwlock_timeout:' .. i, ARGV[2])
end
redis.call('pexpire', KEYS[1], ARGV[2])
return 1
