-- rlock: simple unlock by compare-and-delete: only the token that took the lock frees
-- it, so a holder whose lease ran out cannot free the next holder's lock.
-- KEYS[1] lock; ARGV[1] token, ARGV[2] channel to wake waiters on.
-- Returns 1 released, 0 not held by this token.
if redis.call('get', KEYS[1]) == ARGV[1] then
    redis.call('del', KEYS[1])
    redis.call('publish', ARGV[2], '0')
    return 1
end
return 0
