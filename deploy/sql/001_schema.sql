-- 001: the schema of docs/design.md. Applied in order by `seckill-consumer migrate` (and at
-- consumer start), each file once, recorded in seckill_schema_version. Idempotent on
-- its own too (IF NOT EXISTS), so a half-applied run can be repeated.
CREATE TABLE IF NOT EXISTS seckill_event (
    id             bigint PRIMARY KEY,
    name           text NOT NULL,
    stock_total    int NOT NULL CHECK (stock_total >= 0),
    stock_left     int NOT NULL CHECK (stock_left >= 0),
    starts_at      timestamptz NOT NULL,
    ends_at        timestamptz NOT NULL,
    per_user_limit int NOT NULL DEFAULT 1,
    created_at     timestamptz NOT NULL DEFAULT now(),
    CHECK (ends_at > starts_at)
);

CREATE TABLE IF NOT EXISTS seckill_order (
    order_id        bigint PRIMARY KEY,
    event_id        bigint NOT NULL REFERENCES seckill_event (id),
    user_id         bigint NOT NULL,
    status          text NOT NULL CHECK (status IN ('created', 'rejected')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    kafka_partition int,
    kafka_offset    bigint,
    UNIQUE (event_id, user_id)
);
