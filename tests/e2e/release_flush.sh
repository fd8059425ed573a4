#!/usr/bin/env bash
# e2e: a FLUSHALL while releases are owed (issue 22, "a lost Redis during releases ends
# consistent after the reconciler's reload"), on a private redis-server (FLUSHALL must
# not reach the shared one).
#   - orders closed in PostgreSQL (cancelled: stock_left + 1, released_at NULL) whose
#     units Redis was never told about (the consumer's release sweep is off), then
#     FLUSHALL; the reconciler reloads the gate from stock_left, which counts those
#     units already; then the sweep runs: it must give nothing back a second time.
#     Redis stock + pending + held (created + paid) = stock_total exactly, and
#     seckill-check is green.
#   - the same on an event of 3 segments: each segment's released set is rebuilt with
#     the closed orders homed there (release.lua looks there), the sums stay exact.
. "$(dirname "$0")/lib.sh"
e2e_require
command -v redis-server >/dev/null || e2e_skip "redis-server not installed"
command -v redis-cli >/dev/null || e2e_skip "redis-cli not installed"

RPORT=$(e2e_free_port)
redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$E2E_TMP" \
    >"$E2E_TMP/redis.log" 2>&1 &
E2E_PIDS+=($!)
export SECKILL_REDIS_URL="redis://127.0.0.1:$RPORT"
rcli() { redis-cli -u "$SECKILL_REDIS_URL" --no-auth-warning "$@"; }
e2e_wait 20 "private redis-server" rcli PING
sql() { psql "$SECKILL_PG" -v ON_ERROR_STOP=1 -qtAc "$1"; }

e2e_start_kafka
# The sweep off: the releases stay owed until the consumer is restarted with it on.
SECKILL_EXPIRY_INTERVAL_MS=0 e2e_start_consumer
# A reconciler that scans often and trusts the drain soon (test_order_reconcile's values).
export SECKILL_RECONCILE_INTERVAL_MS=300 SECKILL_RECONCILE_MARGIN_MS=500 \
    SECKILL_KAFKA_MESSAGE_TIMEOUT_MS=2000 SECKILL_RECONCILE_LOCK_TIMEOUT_MS=2000
e2e_start_order
URL="http://127.0.0.1:$E2E_HTTP_PORT"
token() { SECKILL_JWT_SECRET=$E2E_SECRET "$BIN/seckill-order" token --sub "$@"; }
ADMIN=$(token 1 --admin)

# make_event STOCK SEGMENTS: prints the event id.
make_event() {
    local starts ends
    starts=$(date -u -d '-1 minute' +%Y-%m-%dT%H:%M:%SZ)
    ends=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
    curl -fsS -X POST -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
        -d "{\"name\":\"e2e flush\",\"stock\":$1,\"starts_at\":\"$starts\",\"ends_at\":\"$ends\",\"segments\":$2}" \
        "$URL/api/v1/events" | sed -n 's/.*"event_id":"\([0-9]*\)".*/\1/p'
}
# seg_keys EVENT K KIND: the KIND key of every segment.
seg_keys() {
    local k
    for ((k = 0; k < $2; k++)); do
        if [ "$k" = 0 ]; then echo "seckill:{e$1}:$3"; else echo "seckill:{e$1.$k}:$3"; fi
    done
}
redis_sum() { # redis_sum EVENT K: stock + pending units over the segments
    local s=0 key v
    for key in $(seg_keys "$1" "$2" stock); do v=$(rcli GET "$key"); s=$((s + ${v:-0})); done
    for key in $(seg_keys "$1" "$2" pending); do v=$(rcli HLEN "$key"); s=$((s + v)); done
    echo "$s"
}
released_sum() {
    local s=0 key
    for key in $(seg_keys "$1" "$2" released); do s=$((s + $(rcli SCARD "$key"))); done
    echo "$s"
}
loaded() { # every segment's stock key exists
    local key
    for key in $(seg_keys "$1" "$2" stock); do [ "$(rcli EXISTS "$key")" = 1 ] || return 1; done
}
held() { sql "select count(*) from seckill_order where event_id = $1 and status in ('created', 'paid')"; }

USER0=$(( $(date +%s) * 1000 + 700000 ))
mapfile -t T < <(token "$USER0" --count 40 --ttl 600)
STOCK=10
run_case() { # run_case K: one event of K segments through the whole story
    local k=$1 ev i st oid n=6 closed
    ev=$(make_event "$STOCK" "$k")
    [ -n "$ev" ] || e2e_fail "no event id"
    : >"$E2E_TMP/accepted_$ev.txt"
    local ids=()
    for ((i = 0; i < n; i++)); do
        st=$(curl -sS -o "$E2E_TMP/resp" -w '%{http_code}' -X POST \
            -H "Authorization: Bearer ${T[$((k * 10 + i))]}" "$URL/api/v1/events/$ev/orders")
        [ "$st" = 202 ] || e2e_fail "order $i on $ev: HTTP $st $(cat "$E2E_TMP/resp")"
        oid=$(sed -n 's/.*"order_id":"\([0-9]*\)".*/\1/p' "$E2E_TMP/resp")
        ids+=("$oid")
        echo "$oid" >>"$E2E_TMP/accepted_$ev.txt"
    done
    all_in() { [ "$(sql "select count(*) from seckill_order where event_id = $ev")" = "$n" ]; }
    e2e_wait 60 "the $n orders in PostgreSQL" all_in
    # Three releases owed: closed in PostgreSQL as a front's cancel commits them, Redis
    # not told (a front killed right after its COMMIT; the sweep is off).
    closed="${ids[0]},${ids[2]},${ids[4]}"
    sql "begin; update seckill_order set status = 'cancelled', closed_at = now() where order_id in ($closed); update seckill_event set stock_left = stock_left + 3 where id = $ev; commit"
    [ "$(redis_sum "$ev" "$k")" = $((STOCK - n)) ] || e2e_fail "K=$k before the flush: Redis holds $(redis_sum "$ev" "$k")"
    rcli FLUSHALL >/dev/null
    e2e_wait 30 "K=$k: the reconciler reloaded every segment" loaded "$ev" "$k"
    # The reload counts stock_left (10 - 6 + 3) and names the three closed orders.
    [ "$(redis_sum "$ev" "$k")" = $((STOCK - n + 3)) ] || e2e_fail "K=$k after the reload: $(redis_sum "$ev" "$k")"
    [ "$(released_sum "$ev" "$k")" = 3 ] || e2e_fail "K=$k released sets after the reload: $(released_sum "$ev" "$k")"
    echo "$ev" >>"$E2E_TMP/events"
}
run_case 1
run_case 3
e2e_log "reloaded after FLUSHALL with three releases owed (K = 1 and K = 3)"

# The sweep on: the owed releases are settled, and none gives a unit twice.
e2e_stop_consumer
e2e_start_consumer
swept() { [ "$(sql "select count(*) from seckill_order where event_id = $1 and status = 'cancelled' and released_at is null")" = 0 ]; }
ks=(1 3)
i=0
while read -r ev; do
    k=${ks[$i]}
    i=$((i + 1))
    e2e_wait 30 "K=$k: the sweep settled the owed releases" swept "$ev"
    total=$(( $(redis_sum "$ev" "$k") + $(held "$ev") ))
    [ "$total" = "$STOCK" ] ||
        e2e_fail "K=$k: Redis stock + pending $(redis_sum "$ev" "$k") + held $(held "$ev") = $total, not $STOCK (a unit given twice?)"
    [ "$(sql "select stock_left from seckill_event where id = $ev")" = $((STOCK - 3)) ] || e2e_fail "K=$k stock_left"
    mkdir -p "$E2E_TMP/out"
    echo "$ev" >"$E2E_TMP/out/event_id"
    cp "$E2E_TMP/accepted_$ev.txt" "$E2E_TMP/out/accepted.txt"
    e2e_check >"$E2E_TMP/check_$ev.txt" 2>&1 || { cat "$E2E_TMP/check_$ev.txt" >&2; e2e_fail "K=$k: seckill-check failed"; }
    e2e_log "K=$k: after the sweep stock + pending + held = $total = stock_total; seckill-check green"
done <"$E2E_TMP/events"
e2e_log "PASS"
