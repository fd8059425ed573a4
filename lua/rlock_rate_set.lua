-- rlock: rate limiter (Redisson RRateLimiter, both modes): sets the rate once. The limiter
-- is a hash of rate (permits), interval (ms), type (0 overall, 1 per client) and
-- keepAliveTime (ms, 0: none); with a keep-alive the hash expires when unused that long.
-- KEYS[1] config hash; ARGV[1] rate, ARGV[2] interval ms, ARGV[3] type, ARGV[4] keep-alive ms.
-- Returns 1 set, 0 a rate was there (left unchanged).
if redis.call('exists', KEYS[1]) == 1 then
    return 0
end
redis.call('hset', KEYS[1], 'rate', ARGV[1], 'interval', ARGV[2], 'keepAliveTime', ARGV[4], 'type', ARGV[3])
if tonumber(ARGV[4]) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[4])
end
return 1
