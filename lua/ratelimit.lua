-- ratelimit.lua: a token bucket shared by every instance (like Redisson's
-- RRateLimiter, without its per-permit log: one hash of two fields per bucket): per
-- user, and per event (the event's cluster-wide admission rate, taken in batches).
-- KEYS[1] seckill:rl:{u<user_id>} or seckill:{e<event_id>}:rate
-- ARGV[1] rate (tokens per second)  ARGV[2] burst (bucket size)  ARGV[3] now_ms
-- ARGV[4] (optional, default 1) tokens wanted
-- Returns the tokens taken: min(wanted, whole tokens in the bucket); so with one token
-- wanted, 1 allowed, 0 limited.
-- The caller's clock is used so that the script stays deterministic; instances whose
-- clocks disagree only shift when tokens come back. The key expires once a full
-- bucket would have refilled, so idle users cost nothing.
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local want = tonumber(ARGV[4]) or 1
local b = redis.call('HMGET', KEYS[1], 't', 'ts')
local tokens = tonumber(b[1]) or burst
local ts = tonumber(b[2]) or now
if now > ts then
    tokens = math.min(burst, tokens + (now - ts) * rate / 1000)
    ts = now
end
local ok = math.min(want, math.floor(tokens))
if ok < 0 then
    ok = 0
end
tokens = tokens - ok
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'ts', string.format('%d', ts))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return ok
