-- 008: the record of every admin act on an event (issue 32): create, change, restock,
-- pause, resume, end. Written by seckill-order in the same transaction as the act where
-- the act has one (create, change, restock, end), right after it otherwise (pause and
-- resume live in Redis only); read by GET /api/v1/events/{id}/audit. No foreign key: the
-- record of an event outlives the event. before/after: the event's fields the act
-- touched, as they were and as they became (JSON, order/README.md).
CREATE TABLE IF NOT EXISTS seckill_admin_audit (
    id       bigserial PRIMARY KEY,
    event_id bigint NOT NULL,
    actor    bigint NOT NULL,
    act      text NOT NULL CHECK (act IN ('create', 'change', 'restock', 'pause', 'resume',
                                          'end', 'delete', 'archive')),
    at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    before   jsonb,
    after    jsonb
);
CREATE INDEX IF NOT EXISTS seckill_admin_audit_event ON seckill_admin_audit (event_id, id);
