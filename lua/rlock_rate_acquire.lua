-- rlock: rate limiter acquire (RRateLimiter.tryAcquire, both modes; Redisson's layout, so
-- Java and C share one budget): at most `rate` permits per sliding `interval`. Left
-- permits are a counter; grants of the last interval are a zset of packed members
-- (struct 'Bc0I': id length, id, permits) scored by their time (client clock ms, as
-- Redisson's). Grants older than the interval give their permits back first.
-- KEYS[1] config hash, KEYS[2] left (overall), KEYS[3] left (this client), KEYS[4] grants
-- (overall), KEYS[5] grants (this client); ARGV[1] permits, ARGV[2] now ms, ARGV[3] grant id.
-- Returns {1, 0} granted, {0, ms until enough may be back}.
local cfg = redis.call('hmget', KEYS[1], 'rate', 'interval', 'type', 'keepAliveTime')
if not cfg[1] or not cfg[2] or not cfg[3] then
    return redis.error_reply('rate limiter not set')
end
local rate, interval = tonumber(cfg[1]), tonumber(cfg[2])
local want, now = tonumber(ARGV[1]), tonumber(ARGV[2])
if want > rate then
    return redis.error_reply('more permits asked than the rate')
end
local left_key, grants_key = KEYS[2], KEYS[4]
if cfg[3] == '1' then
    left_key, grants_key = KEYS[3], KEYS[5]
end
local function permits_of(members)
    local n = 0
    for _, m in ipairs(members) do
        local _, p = struct.unpack('Bc0I', m)
        n = n + p
    end
    return n
end
local left = redis.call('get', left_key)
if left == false then
    left = rate
else
    left = tonumber(left)
    local old = redis.call('zrangebyscore', grants_key, 0, now - interval)
    if #old > 0 then
        redis.call('zremrangebyscore', grants_key, 0, now - interval)
        left = left + permits_of(old)
        if left > rate then -- a changed rate or lost counter: recount what is out
            left = rate - permits_of(redis.call('zrange', grants_key, 0, -1))
        end
        redis.call('set', left_key, left)
    end
end
local res = {1, 0}
if left < want then
    local first = redis.call('zrange', grants_key, 0, 0, 'withscores')
    local wait = interval
    if first[2] then
        wait = 3 + interval - (now - tonumber(first[2]))
    end
    res = {0, math.max(1, wait)}
else
    redis.call('zadd', grants_key, now, struct.pack('Bc0I', string.len(ARGV[3]), ARGV[3], want))
    redis.call('set', left_key, left - want)
end
local keep = tonumber(cfg[4] or '0') or 0
if keep > 0 then
    for _, k in ipairs({KEYS[1], left_key, grants_key}) do
        redis.call('pexpire', k, keep)
    end
else
    local ttl = redis.call('pttl', KEYS[1])
    if ttl > 0 then
        redis.call('pexpire', left_key, ttl)
        redis.call('pexpire', grants_key, ttl)
    end
end
return res
