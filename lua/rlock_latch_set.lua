-- rlock: countdown latch try-set-count: only when it is not already counting.
-- KEYS[1] count; ARGV[1] count. Returns 1 set, 0 already counting.
if redis.call('exists', KEYS[1]) == 0 then
    redis.call('set', KEYS[1], ARGV[1])
    return 1
end
return 0
