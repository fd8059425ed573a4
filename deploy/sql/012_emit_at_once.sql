-- 012: the transition triggers of 011, the statement's time computed once. Applied by
-- `seckill-consumer migrate` like the others, once, in its transaction; idempotent on
-- its own too.
--
-- at_ms is the start of the statement (statement_timestamp()), the same for every row of
-- it, but 011 computed it per row: extract(epoch ...) is numeric arithmetic, and with the
-- casts (to bigint, then text) it was about 0.3 of the insert trigger's 0.8 us per row
-- (micro-benchmark, INSERTs of 1,000 rows into a copy of the table, 3 rounds of 200
-- each way, 2026-11-27: +0.7-0.85 us per row against +0.4-0.6 now). The payload is the
-- same, byte for byte.
CREATE OR REPLACE FUNCTION seckill_order_emit_ins() RETURNS trigger AS $$
DECLARE
    at_ms text := ((extract(epoch FROM statement_timestamp()) * 1000)::bigint)::text;
BEGIN
    PERFORM pg_logical_emit_message(true, 'seckill', (
        SELECT string_agg(concat_ws(E'\t', order_id, event_id, user_id, status, at_ms, quantity),
                          E'\n' ORDER BY order_id)
          FROM new_rows));
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION seckill_order_emit_upd() RETURNS trigger AS $$
DECLARE
    at_ms text := ((extract(epoch FROM statement_timestamp()) * 1000)::bigint)::text;
BEGIN
    PERFORM pg_logical_emit_message(true, 'seckill', (
        SELECT string_agg(concat_ws(E'\t', t.order_id, t.event_id, t.user_id, t.status,
                                    at_ms, t.quantity),
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
