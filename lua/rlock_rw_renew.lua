-- rlock: watchdog renewal of a read or write hold, only while the owner holds it. A
-- read hold's deadline is renewed under a write too (it outlives a downgrade).
-- KEYS[1] rw hash, KEYS[2] reader deadlines zset; ARGV[1] owner or owner:write, ARGV[2] lease ms.
-- Returns 1 renewed, 0 lost.
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
    return 0
end
local ttl = tonumber(ARGV[2])
if string.sub(ARGV[1], -6) == ':write' then
    if redis.call('pttl', KEYS[1]) < ttl then
        redis.call('pexpire', KEYS[1], ttl)
    end
    return 1
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('zadd', KEYS[2], now + ttl, ARGV[1])
for i = 1, 2 do
    if redis.call('pttl', KEYS[i]) < ttl then
        redis.call('pexpire', KEYS[i], ttl)
    end
end
return 1
