-- rlock: watchdog renewal of a simple lock, only while this token still holds it.
-- KEYS[1] lock; ARGV[1] token, ARGV[2] lease ms. Returns 1 renewed, 0 lost.
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
