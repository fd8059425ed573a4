-- order_status.lua: where an order on its way to PostgreSQL is, for GET /api/v1/orders/{id}.
-- KEYS[1] seckill:{e<ID>}:pending  KEYS[2] seckill:{e<ID>}:accepted
-- ARGV[1] order_id
-- Returns {1, "user_id:ts_ms"} reserved and not yet acknowledged by Kafka,
--         {2, "user_id:ts_ms"} acknowledged by Kafka (confirm.lua moved it), or {0}.
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v then
    return {1, v}
end
v = redis.call('HGET', KEYS[2], ARGV[1])
if v then
    return {2, v}
end
return {0}
