-- confirm.lua: the order is durable in Kafka; it is no longer the reconciler's business.
-- KEYS[1] seckill:{e<ID>}:pending
-- ARGV[1] order_id [ARGV[2] order_id ...]
-- Returns how many of the orders were confirmed: for one order 1 confirmed, 0 not pending
-- (already confirmed or cancelled). Several ids of one event in one call let the front
-- confirm the orders of one delivery batch for the cost of one script run: one HDEL.
-- (What Kafka acknowledged is recorded by the order index entry, order_msg.h; the
-- retired accepted hash and its KEYS[2] are gone.)
return redis.call('HDEL', KEYS[1], unpack(ARGV))
