-- ratelimit.lua: a token bucket per user shared by every instance (like Redisson's
-- RRateLimiter, without its per-permit log: one hash of two fields per user).
-- KEYS[1] seckill:rl:{u<user_id>}
-- ARGV[1] rate (tokens per second)  ARGV[2] burst (bucket size)  ARGV[3] now_ms
-- Returns 1 allowed (a token taken), 0 limited.
-- The caller's clock is used so that the script stays deterministic; instances whose
-- clocks disagree only shift when tokens come back. The key expires once a full
-- bucket would have refilled, so idle users cost nothing.
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local b = redis.call('HMGET', KEYS[1], 't', 'ts')
local tokens = tonumber(b[1]) or burst
local ts = tonumber(b[2]) or now
if now > ts then
    tokens = math.min(burst, tokens + (now - ts) * rate / 1000)
    ts = now
end
local ok = 0
if tokens >= 1 then
    tokens = tokens - 1
    ok = 1
end
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'ts', string.format('%d', ts))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return ok
