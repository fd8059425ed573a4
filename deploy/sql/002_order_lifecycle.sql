-- 002: after the 202 (issue 22): the payment window, cancel, expiry, and the unit given
-- back. Applied by `seckill-consumer migrate` like 001, once, inside its transaction.
-- Idempotent on its own too (IF NOT EXISTS, DROP ... IF EXISTS before each ADD, OR
-- REPLACE), so a half-applied run can be repeated.

-- Each event's payment window (seconds a buyer has to pay after the order is written)
-- and whether a buyer whose order was cancelled or expired may buy the event again.
ALTER TABLE seckill_event ADD COLUMN IF NOT EXISTS payment_window_s int NOT NULL DEFAULT 900;
ALTER TABLE seckill_event ADD COLUMN IF NOT EXISTS rebuy_after_release boolean NOT NULL DEFAULT false;
ALTER TABLE seckill_event DROP CONSTRAINT IF EXISTS seckill_event_payment_window_s_check;
ALTER TABLE seckill_event ADD CONSTRAINT seckill_event_payment_window_s_check
    CHECK (payment_window_s > 0);

-- created (awaiting payment) -> paid | cancelled | expired; rejected stays.
-- 001's inline CHECK got PostgreSQL's default name, seckill_order_status_check.
ALTER TABLE seckill_order DROP CONSTRAINT IF EXISTS seckill_order_status_check;
ALTER TABLE seckill_order ADD CONSTRAINT seckill_order_status_check
    CHECK (status IN ('created', 'paid', 'cancelled', 'expired', 'rejected'));

-- One order per (event, user) still, but a cancelled or expired order no longer counts:
-- with the event's rebuy_after_release the buyer may buy again (the Redis buyers set
-- decides; this index is the database's own guard). The consumer's ON CONFLICT DO
-- NOTHING (no target) covers every unique index, this partial one included.
ALTER TABLE seckill_order DROP CONSTRAINT IF EXISTS seckill_order_event_id_user_id_key;
CREATE UNIQUE INDEX IF NOT EXISTS seckill_order_one_per_user ON seckill_order (event_id, user_id)
    WHERE status NOT IN ('cancelled', 'expired');

ALTER TABLE seckill_order ADD COLUMN IF NOT EXISTS pay_by timestamptz;      -- created + window
ALTER TABLE seckill_order ADD COLUMN IF NOT EXISTS paid_at timestamptz;     -- when paid
ALTER TABLE seckill_order ADD COLUMN IF NOT EXISTS payment_ref text;        -- the payer's reference
ALTER TABLE seckill_order ADD COLUMN IF NOT EXISTS closed_at timestamptz;   -- cancelled or expired at
-- The "released in Redis" marker: set once the unit of a cancelled or expired order is
-- back in the Redis gate (release.lua, idempotent by order id). NULL on a closed order
-- means the PostgreSQL side committed and the Redis side is still owed: the release
-- sweep retries exactly those, so a crash between the two commits loses nothing.
ALTER TABLE seckill_order ADD COLUMN IF NOT EXISTS released_at timestamptz;

-- pay_by is set when the order row is written, by the database itself: the window
-- starts when the order is durable in PostgreSQL (the first moment it can be paid: an
-- order still queued answers 409 not_ready), so a lagging consumer never eats into the
-- buyer's window, and a replayed old message does not arrive already expired. The
-- consumer's batched insert computes it itself (a join with the events it has locked,
-- once per batch), because a row trigger doing that lookup cost the drain about a fifth
-- of its rate; the trigger stays for any other writer, and its WHEN clause keeps it from
-- even being called for rows that carry pay_by.
CREATE OR REPLACE FUNCTION seckill_order_set_pay_by() RETURNS trigger AS $$
BEGIN
    IF NEW.pay_by IS NULL AND NEW.status = 'created' THEN
        SELECT now() + make_interval(secs => e.payment_window_s)
          INTO NEW.pay_by FROM seckill_event e WHERE e.id = NEW.event_id;
    END IF;
    RETURN NEW;
END
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS seckill_order_pay_by ON seckill_order;
CREATE TRIGGER seckill_order_pay_by BEFORE INSERT ON seckill_order
    FOR EACH ROW WHEN (NEW.pay_by IS NULL AND NEW.status = 'created')
    EXECUTE FUNCTION seckill_order_set_pay_by();

-- Orders written before this migration get a full window from now (their events have
-- the default 900 s): none expires the moment the upgrade lands.
UPDATE seckill_order o SET pay_by = now() + make_interval(secs => e.payment_window_s)
  FROM seckill_event e WHERE e.id = o.event_id AND o.status = 'created' AND o.pay_by IS NULL;

-- The expiry's scan (status = 'created' AND pay_by <= now()) and the release sweep's
-- (closed, not yet released) read only these small partial indexes.
CREATE INDEX IF NOT EXISTS seckill_order_pay_by_idx ON seckill_order (pay_by)
    WHERE status = 'created';
CREATE INDEX IF NOT EXISTS seckill_order_unreleased_idx ON seckill_order (closed_at)
    WHERE status IN ('cancelled', 'expired') AND released_at IS NULL;

-- The transitions for seckill.order-events (issue 22), as a transactional outbox: a
-- trigger adds a row in the same transaction as every insert of an order and every
-- change of its status (created, rejected, paid, cancelled, expired), whoever wrote it
-- (the consumer's batch, a front's pay or cancel, the expiry). seckill-consumer's
-- publisher (consumer/consumer_events.c) produces the rows in id order and deletes them
-- once Kafka acknowledged them: at least once, never lost with a committed transition.
CREATE TABLE IF NOT EXISTS seckill_order_outbox (
    id       bigserial PRIMARY KEY,
    order_id bigint NOT NULL,
    event_id bigint NOT NULL,
    user_id  bigint NOT NULL,
    status   text NOT NULL,
    at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
-- Inserts (the consumer's batches: the drain) are copied by one statement per batch
-- from the statement's transition table, not by a plpgsql call per row; status changes
-- (pay, cancel, expiry, the consumer's rare rejects) by a row trigger that fires only
-- when the status really changed.
CREATE OR REPLACE FUNCTION seckill_order_outbox_add() RETURNS trigger AS $$
BEGIN
    INSERT INTO seckill_order_outbox (order_id, event_id, user_id, status)
        VALUES (NEW.order_id, NEW.event_id, NEW.user_id, NEW.status);
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
CREATE OR REPLACE FUNCTION seckill_order_outbox_add_rows() RETURNS trigger AS $$
BEGIN
    INSERT INTO seckill_order_outbox (order_id, event_id, user_id, status)
        SELECT order_id, event_id, user_id, status FROM new_rows ORDER BY order_id;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS seckill_order_outbox ON seckill_order;
DROP TRIGGER IF EXISTS seckill_order_outbox_ins ON seckill_order;
DROP TRIGGER IF EXISTS seckill_order_outbox_upd ON seckill_order;
CREATE TRIGGER seckill_order_outbox_ins AFTER INSERT ON seckill_order
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION seckill_order_outbox_add_rows();
CREATE TRIGGER seckill_order_outbox_upd AFTER UPDATE OF status ON seckill_order
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION seckill_order_outbox_add();
