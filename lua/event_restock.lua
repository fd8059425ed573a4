-- event_restock.lua: adds units to one segment's gate, or takes units out of it, while
-- orders flow (issue 32: POST /api/v1/events/{id}/stock, under the event's lock, inside
-- the PostgreSQL transaction that changes the event's stock_total and stock_left).
-- KEYS[1] seckill:{e<ID>}:stock (segment k >= 1: seckill:{e<ID>.<k>}:stock)
-- ARGV[1] delta: units to add (> 0) or to take out (< 0)
-- Returns {loaded, applied}: loaded 0 when the gate is not loaded (nothing changed: a
-- reload will read PostgreSQL's figure), else 1 and the units applied: delta when it is
-- positive; for a removal, as many of -delta as the segment has unsold (never below
-- zero: units held by orders are never taken back), as a negative number. An ARGV that
-- is not an integer is an error reply, and nothing is touched.
local delta = tonumber(ARGV[1])
if not delta or delta ~= math.floor(delta) then
    return redis.error_reply('ERR event_restock.lua: ARGV[1] is an integer')
end
local stock = redis.call('GET', KEYS[1])
if not stock then
    return {0, 0}
end
stock = tonumber(stock)
if delta < 0 and -delta > stock then
    delta = -stock
end
if delta ~= 0 then
    redis.call('INCRBY', KEYS[1], delta)
end
return {1, delta}
