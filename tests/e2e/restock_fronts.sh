#!/usr/bin/env bash
# e2e: the sold-out flag and the restock rule across two seckill-order instances (issue 8,
# "several fronts"; the one-instance case is test_order_http). Two fronts on the same
# Redis, one event: both answer 409 sold_out from their own in-process flag once the gate
# is empty; stock given back by cancel.lua (as after a failed delivery or the reconciler)
# must be sold again through EACH front within 1 s (the flag lives soldout.ttl_ms, 500 ms).
# The reservations given back are made and cancelled with the real lua/ scripts through
# redis-cli; at the end seckill-check judges the event with the 202s of both fronts.
# Then (issue 22) a durable order cancelled through front A's API: front B sells the
# released unit within 1 s of the cancel's 200.
. "$(dirname "$0")/lib.sh"
e2e_require
: "${SECKILL_SOURCE_DIR:?SECKILL_SOURCE_DIR is not set (ctest sets it)}"
command -v redis-cli >/dev/null || e2e_skip "redis-cli not installed"
e2e_start_kafka
e2e_start_consumer
e2e_start_order
PORT_A=$E2E_HTTP_PORT

# The second front: same Redis, Kafka and secret, its own port and flags.
PORT_B=$(e2e_free_port)
SECKILL_HTTP_PORT=$PORT_B SECKILL_HTTP_BIND=127.0.0.1 SECKILL_KAFKA_BROKERS=$E2E_BROKERS \
    SECKILL_JWT_SECRET=$E2E_SECRET "$BIN/seckill-order" >"$E2E_TMP/order_b.log" 2>&1 &
E2E_PIDS+=($!)
e2e_wait 60 "second seckill-order /readyz" curl -fsS "http://127.0.0.1:$PORT_B/readyz"
e2e_log "second front up (port $PORT_B)"

now_ms() { date +%s%3N; }
metric() { # metric PORT NAME: the sample's value (0 when absent)
    curl -fsS "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n { v = $2 } END { print v + 0 }'
}

# An event with 3 units, on sale now.
ADMIN=$(token 1 --admin)
starts=$(date -u -d '-1 minute' +%Y-%m-%dT%H:%M:%SZ)
ends=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
resp=$(curl -fsS -X POST -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
    -d "{\"name\":\"e2e restock\",\"stock\":3,\"starts_at\":\"$starts\",\"ends_at\":\"$ends\"}" \
    "http://127.0.0.1:$PORT_A/api/v1/events") || e2e_fail "create event"
EV=$(printf '%s' "$resp" | sed -n 's/.*"event_id":"\([0-9]*\)".*/\1/p')
[ -n "$EV" ] || e2e_fail "no event id in $resp"
mkdir -p "$E2E_TMP/out"
echo "$EV" >"$E2E_TMP/out/event_id"
: >"$E2E_TMP/out/accepted.txt"
K="seckill:{e$EV}"

# Users nobody else has, their tokens minted up front (no process start in the timed loop).
USER0=$(( $(date +%s) * 1000 + 100000 ))
mapfile -t TOKS < <(token "$USER0" --count 400 --ttl 600)
[ ${#TOKS[@]} -eq 400 ] || e2e_fail "minted ${#TOKS[@]} tokens, expected 400"
# place PORT: one order by a new user; prints the HTTP status, keeps 202s' order ids.
# (Called as $(place ...): a subshell, so the user index lives in a file.)
echo 0 >"$E2E_TMP/next"
place() {
    local i st
    i=$(cat "$E2E_TMP/next")
    [ "$i" -lt ${#TOKS[@]} ] || e2e_fail "out of tokens"
    echo $((i + 1)) >"$E2E_TMP/next"
    st=$(curl -sS -o "$E2E_TMP/resp" -w '%{http_code}' -X POST -H "Authorization: Bearer ${TOKS[$i]}" \
        "http://127.0.0.1:$1/api/v1/events/$EV/orders")
    if [ "$st" = 202 ]; then
        # (the body has no final newline, so sed's output would not end the line)
        echo "$(sed -n 's/.*"order_id":"\([0-9]*\)".*/\1/p' "$E2E_TMP/resp")" >>"$E2E_TMP/out/accepted.txt"
    fi
    echo "$st"
}

[ "$(place "$PORT_A")" = 202 ] || e2e_fail "the first order was not accepted"
# Two reservations that will be given back: reserve.lua, as a front would run it.
RESERVE=$(cat "$SECKILL_SOURCE_DIR/lua/reserve.lua")
CANCEL=$(cat "$SECKILL_SOURCE_DIR/lua/cancel.lua")
for f in 1 2; do
    rc=$(rcli EVAL "$RESERVE" 4 "$K:stock" "$K:buyers" "$K:meta" "$K:pending" "$(now_ms)" "9$USER0$f" "7$USER0$f")
    [ "$rc" = 0 ] || e2e_fail "reserve.lua for the reservation to give back answered $rc"
done
[ "$(rcli GET "$K:stock")" = 0 ] || e2e_fail "the gate is not empty"

# Both fronts learn the event is sold out and then answer from their flag.
for port in "$PORT_A" "$PORT_B"; do
    hits0=$(metric "$port" seckill_order_soldout_flag_hits_total)
    for _ in 1 2 3 4 5 6; do
        st=$(place "$port")
        [ "$st" = 409 ] || e2e_fail "front $port answered $st on an empty gate, expected 409"
        grep -q '"sold_out"' "$E2E_TMP/resp" || e2e_fail "front $port: $(cat "$E2E_TMP/resp")"
    done
    hits=$(metric "$port" seckill_order_soldout_flag_hits_total)
    [ "${hits%.*}" -gt "${hits0%.*}" ] || e2e_fail "front $port never answered from its sold-out flag"
done
e2e_log "both fronts answer sold_out from their flag"

# Give both units back, then each front must sell one within 1 s.
t0=$(now_ms)
for f in 1 2; do
    rc=$(rcli EVAL "$CANCEL" 3 "$K:stock" "$K:buyers" "$K:pending" "7$USER0$f" "9$USER0$f")
    [ "$rc" = 1 ] || e2e_fail "cancel.lua answered $rc"
done
sold_a= sold_b=
while [ -z "$sold_a" ] || [ -z "$sold_b" ]; do
    el=$(($(now_ms) - t0))
    [ $el -le 1000 ] || e2e_fail "after ${el} ms: front A sold at ${sold_a:-never}, front B at ${sold_b:-never} (bound 1000 ms)"
    if [ -z "$sold_a" ] && [ "$(place "$PORT_A")" = 202 ]; then sold_a=$(($(now_ms) - t0)); fi
    if [ -z "$sold_b" ] && [ "$(place "$PORT_B")" = 202 ]; then sold_b=$(($(now_ms) - t0)); fi
done
e2e_log "stock given back sold again through front A after ${sold_a} ms, front B after ${sold_b} ms"
[ "$(rcli GET "$K:stock")" = 0 ] || e2e_fail "stock left after both sales: $(rcli GET "$K:stock")"
[ "$(wc -l <"$E2E_TMP/out/accepted.txt")" -eq 3 ] || e2e_fail "202s: $(wc -l <"$E2E_TMP/out/accepted.txt"), expected 3"

e2e_check --wait 60 || e2e_fail "seckill-check found a violation"

# ---- issue 22: a unit released by a cancel through front A sells through front B ----
# A durable order (in PostgreSQL) cancelled with POST /orders/{id}/cancel on front A;
# front B, whose flag says sold out, must accept a new buyer within 1 s of the 200.
resp=$(curl -fsS -X POST -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
    -d "{\"name\":\"e2e release fronts\",\"stock\":1,\"starts_at\":\"$starts\",\"ends_at\":\"$ends\"}" \
    "http://127.0.0.1:$PORT_A/api/v1/events") || e2e_fail "create event"
EV=$(printf '%s' "$resp" | sed -n 's/.*"event_id":"\([0-9]*\)".*/\1/p')
echo "$EV" >"$E2E_TMP/out/event_id"
: >"$E2E_TMP/out/accepted.txt"
i0=$(cat "$E2E_TMP/next")
[ "$(place "$PORT_A")" = 202 ] || e2e_fail "the release event's first order was not accepted"
OID=$(tail -n 1 "$E2E_TMP/out/accepted.txt")
in_pg() { [ "$(psql "$SECKILL_PG" -qtAc "select status from seckill_order where order_id = $OID")" = created ]; }
e2e_wait 60 "order $OID created in PostgreSQL" in_pg
for port in "$PORT_A" "$PORT_B"; do
    for _ in 1 2 3; do
        st=$(place "$port")
        [ "$st" = 409 ] || e2e_fail "front $port answered $st on a sold-out event, expected 409"
    done
done
st=$(curl -sS -o "$E2E_TMP/resp" -w '%{http_code}' -X POST -H "Authorization: Bearer ${TOKS[$i0]}" \
    "http://127.0.0.1:$PORT_A/api/v1/orders/$OID/cancel")
t0=$(now_ms)
[ "$st" = 200 ] || e2e_fail "cancel through front A: HTTP $st $(cat "$E2E_TMP/resp")"
sold_b=
while [ -z "$sold_b" ]; do
    el=$(($(now_ms) - t0))
    [ $el -le 1000 ] || e2e_fail "front B did not sell the released unit within 1000 ms of the cancel's 200"
    if [ "$(place "$PORT_B")" = 202 ]; then sold_b=$(($(now_ms) - t0)); fi
done
e2e_log "a unit released by a cancel on front A sold through front B after ${sold_b} ms (bound 1000 ms)"
[ "$(rcli GET "seckill:{e$EV}:stock")" = 0 ] || e2e_fail "stock after the resale: $(rcli GET "seckill:{e$EV}:stock")"
e2e_check --wait 60 || e2e_fail "seckill-check found a violation after the release"
e2e_log "PASS"
