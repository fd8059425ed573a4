-- 006: the order transitions through the WAL (issue 36), replacing 002's outbox table.
-- Applied by `seckill-consumer migrate` like the others, once, in its transaction;
-- idempotent on its own too.
--
-- Every transition (created, rejected, paid, cancelled, expired, released) is written
-- into the WAL by pg_logical_emit_message(true, 'seckill', payload) in the transaction
-- that makes it, by the triggers below, whoever writes (the consumer's batch, a front's
-- pay or cancel, the expiry, the release sweep, an operator's UPDATE). Transactional:
-- the message is decoded at the commit, in commit order, and never for a transaction
-- that rolled back. seckill-consumer's publisher (consumer/consumer_events.h) reads them
-- from a logical replication slot (pgoutput, the publication below) and produces them.
-- One WAL record per statement instead of an outbox row per transition (a heap tuple,
-- its primary key entry, a read back and a delete): the drain's cost before the outbox.
--
-- The payload: one line per transition, "order_id\tevent_id\tuser_id\tstatus\tat_ms",
-- in order_id order within a statement (consumer_walproto.h parses it). at_ms is the
-- start of the statement that wrote the transition (statement_timestamp()), in ms.
--
-- Why no fallback outbox for a server without logical decoding: the messages are WAL
-- records whatever wal_level says, so every write works on any server; only reading them
-- needs wal_level = logical (every managed PostgreSQL offers it). Keeping the outbox as a
-- second path would keep its cost in the drain and two publishers to test.

DROP TRIGGER IF EXISTS seckill_order_outbox ON seckill_order;
DROP TRIGGER IF EXISTS seckill_order_outbox_ins ON seckill_order;
DROP TRIGGER IF EXISTS seckill_order_outbox_upd ON seckill_order;
DROP FUNCTION IF EXISTS seckill_order_outbox_add();
DROP FUNCTION IF EXISTS seckill_order_outbox_add_rows();
-- Rows still in the outbox at the upgrade were committed and not yet published: they
-- are emitted once here (this migration's transaction), then the table goes.
DO $$
BEGIN
    IF to_regclass('seckill_order_outbox') IS NOT NULL THEN
        PERFORM pg_logical_emit_message(true, 'seckill', string_agg(
            concat_ws(E'\t', order_id, event_id, user_id, status,
                      (extract(epoch FROM at) * 1000)::bigint), E'\n' ORDER BY id))
          FROM seckill_order_outbox HAVING count(*) > 0;
        DROP TABLE seckill_order_outbox;
    END IF;
END
$$;

-- pg_logical_emit_message is strict: a statement that made no transition (a NULL
-- string_agg) emits nothing.
-- Inserts (the consumer's batches: the drain): one message per statement, from the
-- statement's transition table, not a plpgsql call per row.
CREATE OR REPLACE FUNCTION seckill_order_emit_ins() RETURNS trigger AS $$
BEGIN
    PERFORM pg_logical_emit_message(true, 'seckill', (
        SELECT string_agg(concat_ws(E'\t', order_id, event_id, user_id, status,
                                    (extract(epoch FROM statement_timestamp()) * 1000)::bigint),
                          E'\n' ORDER BY order_id)
          FROM new_rows));
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

-- Updates: a status that changed is a transition; released_at set is `released` (the
-- unit back in the Redis gate). One message per statement (the expiry's and the
-- release sweep's batches, a pay, a cancel).
CREATE OR REPLACE FUNCTION seckill_order_emit_upd() RETURNS trigger AS $$
BEGIN
    PERFORM pg_logical_emit_message(true, 'seckill', (
        SELECT string_agg(concat_ws(E'\t', t.order_id, t.event_id, t.user_id, t.status,
                                    (extract(epoch FROM statement_timestamp()) * 1000)::bigint),
                          E'\n' ORDER BY t.order_id, t.k)
          FROM (SELECT n.order_id, n.event_id, n.user_id, n.status, 0 AS k
                  FROM new_rows n JOIN old_rows o USING (order_id)
                 WHERE n.status IS DISTINCT FROM o.status
                UNION ALL
                SELECT n.order_id, n.event_id, n.user_id, 'released', 1
                  FROM new_rows n JOIN old_rows o USING (order_id)
                 WHERE o.released_at IS NULL AND n.released_at IS NOT NULL) t));
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS seckill_order_emit_ins ON seckill_order;
DROP TRIGGER IF EXISTS seckill_order_emit_upd ON seckill_order;
CREATE TRIGGER seckill_order_emit_ins AFTER INSERT ON seckill_order
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION seckill_order_emit_ins();
CREATE TRIGGER seckill_order_emit_upd AFTER UPDATE ON seckill_order
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION seckill_order_emit_upd();

-- The publication pgoutput reads (seckill_events, holding no table, so the slot's reader
-- gets the messages and no row change of the drain) is made by seckill-consumer with
-- the slot (consumer_events_slot_ensure), before it: pgoutput looks the publication up
-- as of each decoded transaction, so one made after the slot breaks it.
