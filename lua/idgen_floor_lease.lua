-- libidgen floor mode: lease n numbers of a day counter that must already exist.
-- KEYS[1] icr:<prefix>:<yyyymmdd>; ARGV[1] n (>= 1), ARGV[2] EXPIRE seconds (0: none).
-- The value is epoch * 2^33 + sequence (epoch < 2^20, so every value is exact in Lua).
-- Returns -1 when the key is missing (a new day, or Redis lost it: the caller restores
-- it from the floor first, never INCRBY from 0); the value unchanged when the sequence
-- already passed 2^32-1 (exhausted: no carry into the epoch); else the value after INCRBY.
local v = redis.call('GET', KEYS[1])
if not v then
    return -1
end
v = tonumber(v)
if v % 8589934592 > 4294967295 then
    return v
end
v = redis.call('INCRBY', KEYS[1], ARGV[1])
if tonumber(ARGV[2]) > 0 then
    redis.call('EXPIRE', KEYS[1], ARGV[2])
end
return v
