-- 011: several units per order (issue 31). Applied by `seckill-consumer migrate` like the
-- others, once, in its transaction; idempotent on its own too.
--
-- An order carries its units (the Kafka message's "quantity", 1 when absent); every
-- stock figure counts units: the consumer takes an order's quantity off stock_left, a
-- close gives it back. The bound 100 is SK_ORDER_MSG_MAX_QUANTITY (domain/sk_order_msg.h),
-- and an event's per_user_limit (the most units one user holds over their live orders)
-- has the same bound.
ALTER TABLE seckill_order ADD COLUMN IF NOT EXISTS quantity int NOT NULL DEFAULT 1;
ALTER TABLE seckill_order DROP CONSTRAINT IF EXISTS seckill_order_quantity_check;
ALTER TABLE seckill_order ADD CONSTRAINT seckill_order_quantity_check
    CHECK (quantity BETWEEN 1 AND 100);
ALTER TABLE seckill_event DROP CONSTRAINT IF EXISTS seckill_event_per_user_limit_check;
ALTER TABLE seckill_event ADD CONSTRAINT seckill_event_per_user_limit_check
    CHECK (per_user_limit BETWEEN 1 AND 100);

-- One live order per (event, user) stays the database's own guard for an event whose
-- per_user_limit is 1 (002's partial index); a user of an event with a higher limit may
-- hold several orders (the Redis gate counts their units). The consumer marks the rows
-- of such an event (many_per_user, from the event it has locked), which the index skips.
ALTER TABLE seckill_order ADD COLUMN IF NOT EXISTS many_per_user boolean NOT NULL DEFAULT false;
DROP INDEX IF EXISTS seckill_order_one_per_user;
CREATE UNIQUE INDEX seckill_order_one_per_user ON seckill_order (event_id, user_id)
    WHERE status NOT IN ('cancelled', 'expired') AND NOT many_per_user;

-- The transitions (006) carry the order's quantity as a sixth field:
-- "order_id\tevent_id\tuser_id\tstatus\tat_ms\tquantity" (consumer_walproto.h), so that
-- seckill.order-events says how many units each transition took or gave back.
CREATE OR REPLACE FUNCTION seckill_order_emit_ins() RETURNS trigger AS $$
BEGIN
    PERFORM pg_logical_emit_message(true, 'seckill', (
        SELECT string_agg(concat_ws(E'\t', order_id, event_id, user_id, status,
                                    (extract(epoch FROM statement_timestamp()) * 1000)::bigint,
                                    quantity),
                          E'\n' ORDER BY order_id)
          FROM new_rows));
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION seckill_order_emit_upd() RETURNS trigger AS $$
BEGIN
    PERFORM pg_logical_emit_message(true, 'seckill', (
        SELECT string_agg(concat_ws(E'\t', t.order_id, t.event_id, t.user_id, t.status,
                                    (extract(epoch FROM statement_timestamp()) * 1000)::bigint,
                                    t.quantity),
                          E'\n' ORDER BY t.order_id, t.k)
          FROM (SELECT n.order_id, n.event_id, n.user_id, n.status, n.quantity, 0 AS k
                  FROM new_rows n JOIN old_rows o USING (order_id)
                 WHERE n.status IS DISTINCT FROM o.status
                UNION ALL
                SELECT n.order_id, n.event_id, n.user_id, 'released', n.quantity, 1
                  FROM new_rows n JOIN old_rows o USING (order_id)
                 WHERE o.released_at IS NULL AND n.released_at IS NOT NULL) t));
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
