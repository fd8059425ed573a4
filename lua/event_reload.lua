-- event_reload.lua: rebuilds an event's gate (or one segment of a segmented event) after
-- its Redis keys were lost, from PostgreSQL once the consumer has drained the event's
-- partition (order_reconcile.c).
-- KEYS[1] seckill:{e<ID>}:stock  KEYS[2] ...:meta  KEYS[3] ...:buyers  KEYS[4] ...:released
-- [KEYS[5] ...:units, needed when a buyer below carries its units (issue 31)]
--   (segment k >= 1: seckill:{e<ID>.<k>}:..., all four in one slot)
-- ARGV[1] stock (PostgreSQL stock_left, or the segment's share of it)  ARGV[2] starts_at_ms
-- ARGV[3] ends_at_ms  ARGV[4] per_user_limit  ARGV[5] ip_rate  ARGV[6] user_rate
-- ARGV[7] event_rate (the event's rate overrides, "0" for none: event_load.lua's meta)
-- ARGV[8] challenge_bits (the event's proof-of-work difficulty, "-1" a hidden order path,
--   "0" for neither; issue 31)
-- ARGV[9] n: how many buyers follow
-- ARGV[10..9+n] "user_id:order_id" of the users that hold an order for the event (the
--   buyers hash, user -> order id, rebuilt whole; reserve.lua), or
--   "user_id:order_id:units" for an event whose per_user_limit is above 1: the units the
--   user holds over their live orders (the units hash, rebuilt whole with it)
-- ARGV[10+n..] ids of the closed (cancelled or expired) orders whose unit the stock above
--   already counts (homed on this segment): they join the released set, so that a
--   release.lua owed for one of them (the consumer's sweep after the flush) answers 0
--   instead of giving the unit back a second time.
-- Returns 1 reloaded, 0 the gate exists (nothing changed: it was loaded meanwhile, and a
-- live stock is never overwritten). An ARGV without its count is an error reply.
-- The stock key is written last: reserve.lua answers "not loaded" until it exists.
if redis.call('EXISTS', KEYS[1]) == 1 then
    return 0
end
local n = #ARGV
local nb = tonumber(ARGV[9])
if not nb or nb < 0 or 9 + nb > n then
    return redis.error_reply('ERR event_reload.lua: ARGV[9] is the number of buyers')
end
for i = 10, 9 + nb do
    if not string.match(ARGV[i], '^%d+:%d+$') and
        not (KEYS[5] and string.match(ARGV[i], '^%d+:%d+:%d+$')) then
        return redis.error_reply('ERR event_reload.lua: a buyer is user_id:order_id[:units]')
    end
end
-- SADD in chunks: unpack() has a limit on the number of values
local function sadd_range(key, from, to)
    local i = from
    while i <= to do
        local j = math.min(i + 999, to)
        redis.call('SADD', key, unpack(ARGV, i, j))
        i = j + 1
    end
end
-- HSET in chunks of 500 buyers, for the same reason
local function buyers_range(key, from, to)
    local i = from
    while i <= to do
        local j, kv, ku = math.min(i + 499, to), {}, {}
        for b = i, j do
            local u, o, q = string.match(ARGV[b], '^(%d+):(%d+):?(%d*)$')
            kv[#kv + 1] = u
            kv[#kv + 1] = o
            if q ~= '' then
                ku[#ku + 1] = u
                ku[#ku + 1] = q
            end
        end
        redis.call('HSET', key, unpack(kv))
        if #ku > 0 then
            redis.call('HSET', KEYS[5], unpack(ku))
        end
        i = j + 1
    end
end
redis.call('DEL', KEYS[3])
if KEYS[5] then
    redis.call('DEL', KEYS[5])
end
buyers_range(KEYS[3], 10, 9 + nb)
-- The released set is not cleared: what it still holds was given back to this stock
-- already (a partial loss), and the new ids only add to it.
sadd_range(KEYS[4], 10 + nb, n)
redis.call('HSET', KEYS[2], 'starts_at_ms', ARGV[2], 'ends_at_ms', ARGV[3],
           'per_user_limit', ARGV[4])
for i, field in ipairs({'ip_rate', 'user_rate', 'event_rate'}) do
    if tonumber(ARGV[4 + i]) and tonumber(ARGV[4 + i]) > 0 then
        redis.call('HSET', KEYS[2], field, ARGV[4 + i])
    end
end
if tonumber(ARGV[8]) and tonumber(ARGV[8]) ~= 0 then
    redis.call('HSET', KEYS[2], 'challenge_bits', ARGV[8])
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
