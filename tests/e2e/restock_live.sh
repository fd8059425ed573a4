#!/usr/bin/env bash
# e2e: restock up and down while 64 connections buy (issue 32 item 3), on 1 and on 3
# segments. seckill-bench buys from an event created here while this script adds and
# takes out units (POST /api/v1/events/{id}/stock, "add" and "total"); then every 202
# must be in PostgreSQL, stock_total must be the first stock plus every applied change,
# and seckill-check must find the gate, the pending hashes and the rows exact with that
# total. A removal past the unsold units is 409 and changes nothing. Then the K = 3
# event, restocked once more, loses every Redis key: the reconciler's reload reads the
# new total (the gate sums to PostgreSQL's stock_left, the 37 units added after the
# sale), and seckill-check is green again. A restock of an ended event is 409; bad
# bodies are 400.
. "$(dirname "$0")/lib.sh"
e2e_require
command -v redis-cli >/dev/null || e2e_skip "redis-cli not installed"
e2e_start_kafka
e2e_start_consumer
# A reconciler that scans often and trusts the drain soon (release_flush.sh's values),
# leading on its own lock (the stack's front leads the shared one, with another Kafka).
export SECKILL_RECONCILE_INTERVAL_MS=300 SECKILL_RECONCILE_MARGIN_MS=500 \
    SECKILL_KAFKA_MESSAGE_TIMEOUT_MS=2000 SECKILL_RECONCILE_LOCK_TIMEOUT_MS=2000 \
    SECKILL_RECONCILE_LOCK="seckill:reconciler:e2e-restock-$$"
e2e_start_order
PORT=$E2E_HTTP_PORT
ADMIN=$(token 1 --admin)
iso() { date -u -d "$1" +%Y-%m-%dT%H:%M:%SZ; }
call() { # call METHOD PATH [BODY]: the status; the body in $E2E_TMP/resp
    local args=(-sS -o "$E2E_TMP/resp" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $ADMIN")
    [ $# -ge 3 ] && args+=(-H 'Content-Type: application/json' -d "$3")
    curl "${args[@]}" "http://127.0.0.1:$PORT$2"
}
total_of() { sed -n 's/.*"stock_total":\([0-9]*\).*/\1/p' "$E2E_TMP/resp"; }
gate() { # the units in the gate, every segment
    local s=0 k v
    for ((k = 0; k < $1; k++)); do
        if [ $k = 0 ]; then v=$(rcli GET "seckill:{e$EV}:stock"); else v=$(rcli GET "seckill:{e$EV.$k}:stock"); fi
        s=$((s + v))
    done
    echo $s
}
e2e_warmup

for K in 1 3; do
    st=$(call POST /api/v1/events "{\"name\":\"e2e restock K=$K\",\"stock\":100,\"segments\":$K,\
\"starts_at\":\"$(iso '-1 minute')\",\"ends_at\":\"$(iso '+1 hour')\"}")
    [ "$st" = 201 ] || e2e_fail "create: $st $(cat "$E2E_TMP/resp")"
    EV=$(sed -n 's/.*"event_id":"\([0-9]*\)".*/\1/p' "$E2E_TMP/resp")
    rm -rf "$E2E_TMP/out"
    e2e_bench --event "$EV" --connections 64 --users 1500 --requests 1500 --rate 200 \
        --seed "$K" --drain.wait 90 >"$E2E_TMP/bench_$K.log" 2>&1 &
    BENCH=$!
    E2E_PIDS+=("$BENCH")
    expect_total=100 applied=0 refused=0 removed=0
    # add, take out, set the total, while the bench buys; each 200 moves the expectation
    for body in '{"add":200}' '{"add":-50}' 'TOTAL+30' '{"add":-10}' '{"add":150}' '{"add":-5}'; do
        sleep 0.3
        [ "$body" = TOTAL+30 ] && body="{\"total\":$((expect_total + 30))}"
        st=$(call POST "/api/v1/events/$EV/stock" "$body")
        case $st in
        200)
            expect_total=$(total_of)
            applied=$((applied + 1))
            case $body in *-*) removed=$((removed + 1)) ;; esac
            ;;
        409)
            grep -q "units are unsold" "$E2E_TMP/resp" || e2e_fail "409 without the reason: $(cat "$E2E_TMP/resp")"
            refused=$((refused + 1))
            ;;
        *) e2e_fail "restock $body: $st $(cat "$E2E_TMP/resp")" ;;
        esac
        e2e_log "K=$K restock $body: $st, stock_total $expect_total"
    done
    wait "$BENCH" || e2e_fail "seckill-bench failed: $(tail -n 5 "$E2E_TMP/bench_$K.log")"
    [ $applied -ge 3 ] && [ $removed -ge 1 ] ||
        e2e_fail "$applied restocks applied, $removed of them removals (want the adds and one removal at least)"
    grep -q '"drained": true' "$E2E_TMP/out/summary.json" || e2e_fail "the 202s did not all reach PostgreSQL"
    got=$(sql "select stock_total from seckill_event where id = $EV")
    [ "$got" = "$expect_total" ] || e2e_fail "K=$K: stock_total $got, expected $expect_total"
    accepted=$(wc -l <"$E2E_TMP/out/accepted.txt")
    e2e_log "K=$K: $accepted orders accepted, stock_total $expect_total ($applied restocks applied, $refused refused)"
    e2e_check --wait 60 || e2e_fail "K=$K: seckill-check found a violation"

    # A removal past the unsold units: 409, nothing changed in PostgreSQL or the gate.
    before="$(sql "select stock_total, stock_left from seckill_event where id = $EV") $(gate "$K")"
    st=$(call POST "/api/v1/events/$EV/stock" '{"add":-1000000}')
    [ "$st" = 409 ] && grep -q "units are unsold" "$E2E_TMP/resp" || e2e_fail "removal past the unsold: $st $(cat "$E2E_TMP/resp")"
    after="$(sql "select stock_total, stock_left from seckill_event where id = $EV") $(gate "$K")"
    [ "$after" = "$before" ] || e2e_fail "a refused removal changed the event: $before -> $after"
done

# The K = 3 event restocked after its sale, then every key of it lost: the reload reads
# the row the restock moved.
st=$(call POST "/api/v1/events/$EV/stock" '{"add":37}')
[ "$st" = 200 ] || e2e_fail "restock after the sale: $st $(cat "$E2E_TMP/resp")"
[ "$(gate 3)" = 37 ] || e2e_fail "the gate after +37: $(gate 3)"
for k in 0 1 2; do
    tag="e$EV"; [ $k = 0 ] || tag="e$EV.$k"
    rcli DEL "seckill:{$tag}:stock" "seckill:{$tag}:meta" "seckill:{$tag}:buyers" \
        "seckill:{$tag}:pending" "seckill:{$tag}:released" >/dev/null
done
loaded() { for k in "" .1 .2; do [ "$(rcli EXISTS "seckill:{e$EV$k}:stock")" = 1 ] || return 1; done; }
e2e_wait 30 "the reconciler reloaded the restocked event" loaded
left=$(sql "select stock_left from seckill_event where id = $EV")
[ "$left" = 37 ] && [ "$(gate 3)" = 37 ] || e2e_fail "after the reload: stock_left $left, gate $(gate 3) (want 37 and 37)"
e2e_check --wait 60 || e2e_fail "seckill-check after the reload found a violation"
e2e_log "the reload read the restocked total: 37 units in the gate"
audit() { sql "select count(*) from seckill_admin_audit where event_id = $EV and act = 'restock'"; }
[ "$(audit)" = $((applied + 1)) ] || e2e_fail "restocks recorded: $(audit), applied $((applied + 1))"
[ "$(sql "select (after->>'stock_total')::int - (before->>'stock_total')::int from seckill_admin_audit where event_id = $EV and act = 'restock' order by id desc limit 1")" = 37 ] ||
    e2e_fail "the last restock's record is not +37"

# Bad bodies and an ended event: 4xx with the reason, nothing changed.
before="$(sql "select stock_total, stock_left from seckill_event where id = $EV") $(gate 3)"
st=$(call POST "/api/v1/events/$EV/stock" '{"total":-1}')
[ "$st" = 400 ] && grep -q "total:" "$E2E_TMP/resp" || e2e_fail "negative total: $st $(cat "$E2E_TMP/resp")"
st=$(call POST "/api/v1/events/$EV/stock" '{"add":5,"why":"x"}')
[ "$st" = 400 ] || e2e_fail "unknown field: $st $(cat "$E2E_TMP/resp")"
st=$(curl -sS -o "$E2E_TMP/resp" -w '%{http_code}' -X POST -H "Authorization: Bearer $(token 7)" \
    -H 'Content-Type: application/json' -d '{"add":5}' "http://127.0.0.1:$PORT/api/v1/events/$EV/stock")
[ "$st" = 403 ] || e2e_fail "a buyer's restock: $st"
[ "$(call POST "/api/v1/events/$EV/end")" = 200 ] || e2e_fail "end: $(cat "$E2E_TMP/resp")"
st=$(call POST "/api/v1/events/$EV/stock" '{"add":5}')
[ "$st" = 409 ] && grep -q "has ended" "$E2E_TMP/resp" || e2e_fail "restock after the end: $st $(cat "$E2E_TMP/resp")"
after="$(sql "select stock_total, stock_left from seckill_event where id = $EV") $(gate 3)"
[ "$after" = "$before" ] || e2e_fail "refused restocks changed the event: $before -> $after"
[ "$(audit)" = $((applied + 1)) ] || e2e_fail "a refused restock was recorded"
e2e_log "PASS"
