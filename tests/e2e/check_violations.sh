#!/usr/bin/env bash
# seckill-check against real Redis and PostgreSQL, on a sale staged by hand: it must
# pass a healthy one and name each violation of a broken one, with exit status 1.
# Needs only the shared Redis and PostgreSQL (no front, no consumer, no Kafka: dlq=false).
# The staged event has an id of its own (from 9e18 up, far from libidgen's ids) and is
# removed at the end.
. "$(dirname "$0")/lib.sh"
[ -n "${SECKILL_REDIS_URL:-}" ] && [ -n "${SECKILL_PG:-}" ] || e2e_skip "no stack (SECKILL_REDIS_URL, SECKILL_PG)"
[ -x "$BIN/seckill-check" ] || e2e_skip "$BIN/seckill-check is not built"
command -v psql >/dev/null && command -v redis-cli >/dev/null || e2e_skip "psql or redis-cli missing"
psql "$SECKILL_PG" -tAc "select 1 from seckill_order limit 0" >/dev/null 2>&1 ||
    e2e_skip "no seckill_order table yet (the consumer applies the schema)"

EV=$((9000000000000000000 + ($$ % 100000) * 100000 + RANDOM))
url=${SECKILL_REDIS_URL#redis://}
hp=${url%%/*}
rcli() { redis-cli -h "${hp%%:*}" -p "${hp##*:}" "$@"; }
K="seckill:{e$EV}"
unstage() {
    sql "delete from seckill_order where event_id = $EV; delete from seckill_event where id = $EV" || true
    rcli UNLINK "$K:stock" "$K:buyers" "$K:pending" "$K:meta" >/dev/null || true
}
trap 'rc=$?; unstage; e2e_cleanup $rc' EXIT

# A healthy sale: 3 stock, 3 created orders of 3 users, Redis drained.
sql "insert into seckill_event (id, name, stock_total, stock_left, starts_at, ends_at)
     values ($EV, 'check-test', 3, 0, now(), now() + interval '1 hour')"
for i in 1 2 3; do
    sql "insert into seckill_order (order_id, event_id, user_id, status) values ($EV + $i, $EV, $i, 'created')"
    echo $((EV + i)) >>"$E2E_TMP/accepted.txt"
done
rcli SET "$K:stock" 0 >/dev/null
rcli HSET "$K:buyers" 1 11 2 12 3 13 >/dev/null

check() { "$BIN/seckill-check" --dlq false --wait 2 --settle 1 --redis.url "$SECKILL_REDIS_URL" --pg "$SECKILL_PG" "$EV" "$E2E_TMP/accepted.txt"; }

out=$(check) || e2e_fail "a healthy sale was judged broken: $out"
echo "$out" | grep -q "^ok   lost           0 " || e2e_fail "no 'lost 0' line: $out"

# Lost: a 202 whose order never reached PostgreSQL.
echo $((EV + 9)) >>"$E2E_TMP/accepted.txt"
rc=0
out=$(check) || rc=$?
[ $rc -eq 1 ] || e2e_fail "a lost order: exit $rc, expected 1: $out"
echo "$out" | grep -q "^FAIL lost           1 " || e2e_fail "the lost order is not named: $out"

# Leaked stock in Redis, a row rejected, and PostgreSQL's stock_left off by one.
sed -i '$d' "$E2E_TMP/accepted.txt"
rcli SET "$K:stock" 1 >/dev/null
sql "update seckill_order set status = 'rejected' where order_id = $EV + 3"
rc=0
out=$(check) || rc=$?
[ $rc -eq 1 ] || e2e_fail "broken sale: exit $rc, expected 1: $out"
for name in lost stock_left; do
    echo "$out" | grep -q "^FAIL $name " || e2e_fail "$name is not named: $out"
done
echo "$out" | grep -q "^ok   redis_balance  0 " || e2e_fail "1 in stock + 2 created = 3 should balance: $out"

# Oversold: a fourth created order on a stock of 3.
sql "update seckill_order set status = 'created' where order_id = $EV + 3"
rcli SET "$K:stock" 0 >/dev/null
sql "insert into seckill_order (order_id, event_id, user_id, status) values ($EV + 4, $EV, 4, 'created')"
rc=0
out=$(check) || rc=$?
[ $rc -eq 1 ] || e2e_fail "oversold sale: exit $rc, expected 1: $out"
echo "$out" | grep -q "^FAIL oversold       1 " || e2e_fail "oversell is not named: $out"

# An unknown event cannot pass.
rc=0
out=$("$BIN/seckill-check" --dlq false --wait 1 --settle 1 --redis.url "$SECKILL_REDIS_URL" --pg "$SECKILL_PG" 1 "$E2E_TMP/accepted.txt") || rc=$?
[ $rc -eq 1 ] || e2e_fail "an unknown event: exit $rc, expected 1"
e2e_log "PASS"
