-- rlock: watchdog renewal of a reentrant, fair or write lock, only while the owner holds it.
-- KEYS[1] lock hash; ARGV[1] owner, ARGV[2] lease ms. Returns 1 renewed, 0 lost.
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
    return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
