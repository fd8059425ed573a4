#!/usr/bin/env bash
# bench-expiry.sh: how fast unpaid orders expire and their units come back (issue 22),
# beside the consumer's drain rate on the same stack.
#
# N orders (default 100,000) of one sold-out event are written straight into a private
# database as `created`, all with the same pay_by a few seconds ahead; the gate in Redis
# holds 0 units. One seckill-consumer (its expiry thread: expiry.interval_ms,
# expiry.batch; its events publisher runs too, as in production) then expires them and
# gives every unit back. Timed from the common pay_by to the moment every row is
# expired and released (released_at), and checked: the gate holds N units, stock_left
# is N. Then bench-consumer.sh's drain (COPY_REF=0) of the same N orders runs on the
# same stack, and the ratio expiry rate / drain rate is printed (target >= 0.5).
# Needs `deploy/local.sh up` and .run/env sourced; $SECKILL_BIN_DIR (Release for
# meaningful figures; BIN=... to override). Knobs: N, BATCH (expiry.batch), DRAIN=0
# (skip the drain run). The machine may be shared: run it twice and compare.
set -euo pipefail
# shellcheck source=deploy/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib.sh"

N=${N:-100000}
BATCH=${BATCH:-1000}
DRAIN=${DRAIN:-1}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=${BIN:-${SECKILL_BIN_DIR:?source .run/env first}}
: "${SECKILL_PG:?source .run/env first}" "${SECKILL_PG_ADMIN:?source .run/env first}"
: "${SECKILL_REDIS_URL:?source .run/env first}"
for b in seckill-consumer seckill-devkafka; do
    [ -x "$BIN/$b" ] || { echo "bench-expiry: $BIN/$b is not built" >&2; exit 1; }
done
DB=sk_bench_expiry
EV=$((9100000000 + RANDOM))
K="seckill:{e$EV}"
work=$(mktemp -d /tmp/bench-expiry.XXXXXX)
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    redis-cli -u "$SECKILL_REDIS_URL" --no-auth-warning DEL "$K:stock" "$K:meta" "$K:buyers" "$K:pending" "$K:released" >/dev/null 2>&1 || true
    psql "$SECKILL_PG_ADMIN" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
pg() { psql "$SECKILL_PG dbname=$DB" -qAtX -v ON_ERROR_STOP=1 "$@"; }
rcli() { redis-cli -u "$SECKILL_REDIS_URL" --no-auth-warning "$@"; }
now_ms() { date +%s%3N; }

psql "$SECKILL_PG_ADMIN" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null
psql "$SECKILL_PG_ADMIN" -qc "CREATE DATABASE $DB OWNER seckill" >/dev/null
SECKILL_PG="$SECKILL_PG dbname=$DB" "$BIN/seckill-consumer" migrate 2>/dev/null

# The sold-out event and its N unpaid orders, all due at one moment (LEAD ms ahead,
# long enough for the consumer to start first).
LEAD=8000
pg -c "INSERT INTO seckill_event (id, name, stock_total, stock_left, starts_at, ends_at)
       VALUES ($EV, 'bench expiry', $N, 0, now() - interval '1 hour', now() + interval '1 hour')"
due_ms=$(pg -c "SELECT (extract(epoch from now() + interval '$LEAD milliseconds') * 1000)::bigint")
pg -c "INSERT INTO seckill_order (order_id, event_id, user_id, status, pay_by)
       SELECT $EV * 1000000 + g, $EV, g, 'created', to_timestamp($due_ms / 1000.0)
       FROM generate_series(1, $N) g" -c "VACUUM ANALYZE seckill_order"
rcli SET "$K:stock" 0 >/dev/null
rcli HSET "$K:meta" starts_at_ms 0 ends_at_ms 9999999999999 per_user_limit 1 >/dev/null

"$BIN/seckill-devkafka" --bootstrap-file "$work/bootstrap" >/dev/null 2>"$work/devkafka.log" &
pids+=($!)
sk_wait 30 test -s "$work/bootstrap" || { echo "bench-expiry: seckill-devkafka did not start" >&2; exit 1; }
SECKILL_PG="$SECKILL_PG dbname=$DB" SECKILL_KAFKA_BROKERS="$(cat "$work/bootstrap")" SECKILL_HTTP_PORT=0 \
    SECKILL_GROUP_ID="bench-expiry-$$" SECKILL_EXPIRY_BATCH="$BATCH" SECKILL_LOG_LEVEL=warn \
    "$BIN/seckill-consumer" 2>"$work/consumer.log" &
pids+=($!)

[ "$(now_ms)" -lt "$due_ms" ] || { echo "bench-expiry: the setup took longer than $LEAD ms; raise LEAD" >&2; exit 1; }
expired_ms=0
while :; do
    left=$(pg -c "SELECT count(*) FILTER (WHERE status = 'created'), count(*) FILTER (WHERE released_at IS NULL) FROM seckill_order")
    read -r created unreleased <<<"${left//|/ }"
    [ "$expired_ms" -eq 0 ] && [ "$created" -eq 0 ] && expired_ms=$(now_ms)
    [ "$unreleased" -eq 0 ] && break
    [ $(( $(now_ms) - due_ms )) -lt 600000 ] || { echo "bench-expiry: not done in 10 minutes" >&2; exit 1; }
    sleep 0.1
done
done_ms=$(now_ms)
gate=$(rcli GET "$K:stock")
stock_left=$(pg -c "SELECT stock_left FROM seckill_event WHERE id = $EV")
[ "$gate" = "$N" ] && [ "$stock_left" = "$N" ] ||
    { echo "bench-expiry: gate $gate, stock_left $stock_left, expected $N" >&2; exit 1; }
expire_s=$(awk -v a="$expired_ms" -v b="$due_ms" 'BEGIN { printf "%.3f", (a - b) / 1000 }')
total_s=$(awk -v a="$done_ms" -v b="$due_ms" 'BEGIN { printf "%.3f", (a - b) / 1000 }')
rate=$(awk -v n="$N" -v s="$total_s" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')
printf 'bench-expiry: %d orders due at one moment: all expired after %s s, all units back in the gate after %s s = %s orders/s\n' \
    "$N" "$expire_s" "$total_s" "$rate"

drain_rate=0
if [ "$DRAIN" = 1 ]; then
    N=$N COPY_REF=0 BIN=$BIN "$here/bench-consumer.sh" >"$work/drain.txt" 2>&1 ||
        { cat "$work/drain.txt" >&2; exit 1; }
    drain_rate=$(sed -n 's/.*"drain_rate":\([0-9]*\).*/\1/p' "$work/drain.txt" | tail -n 1)
    printf 'bench-expiry: consumer drain of %d orders on the same stack: %s orders/s\n' "$N" "$drain_rate"
fi
ratio=$(awk -v a="$rate" -v b="${drain_rate:-0}" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')
printf 'bench-expiry: expiry / drain = %s (target >= 0.5)\n' "$ratio"
printf '{"bench":"expiry","orders":%d,"expiry_batch":%d,"expired_s":%s,"released_s":%s,"expiry_rate":%s,"drain_rate":%s,"ratio":%s,"loadavg":"%s"}\n' \
    "$N" "$BATCH" "$expire_s" "$total_s" "$rate" "${drain_rate:-0}" "$ratio" "$(cut -d' ' -f1-3 /proc/loadavg)"
