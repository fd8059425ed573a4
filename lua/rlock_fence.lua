-- rlock: the fencing counter of a lock; not a script of its own, but prepended by
-- lock/rlock_script.c to every lock script that calls rlock_fence (one home for the rule).
-- rlock_fence(key, keep_ms) returns the lock's next token: the larger of the last token
-- + 1 and the server's clock in microseconds, and keeps the counter keep_ms longer. So no
-- counter outlives its use by more than keep_ms (a lock per order id leaves no key
-- behind), and a counter that expired starts again above every token it handed out:
-- each of those was at most the clock of its grant plus the grants that came faster than
-- one per microsecond, and keep_ms (an hour by default) is far more than that surplus or
-- any step back of the server's clock. Tokens: strictly increasing per lock name.
local function rlock_fence(key, keep)
    local t = redis.call('time')
    local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
    local f = (tonumber(redis.call('get', key) or '0') or 0) + 1
    if f < now then
        f = now
    end
    redis.call('set', key, string.format('%.0f', f), 'PX', keep)
    return f
end
