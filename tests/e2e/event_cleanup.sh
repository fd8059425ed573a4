#!/usr/bin/env bash
# e2e: the clean-up after a sale (issue 32 item 5), with a short retention.
# One front (events.retention_s 1, a reconciler scan every 300 ms, order.index_ttl_s 2)
# and one consumer (order.index_ttl_s 2). An event on 2 segments, a 1 s payment window,
# a change (PATCH: a field in seckill:changed), three buyers, then a pause never resumed
# (a member of seckill:paused): one pays, one cancels, one lets the window pass. While
# the event runs its keys carry an expiry at ends_at + window + retention, and an end
# moved later (PATCH) moves it; after that moment:
#  - no key of the event is left (SCAN of seckill:{e<ID>}* and seckill:{e<ID>.*), its
#    orders' index entries are gone, and neither seckill:changed nor seckill:paused holds it;
#  - every read is still right, answered from PostgreSQL: the event's GET (on this front
#    and on a fresh front B), each order's GET (paid, cancelled, expired) and each
#    buyer's orders list of the event (GET /api/v1/orders?event_id=).
# The sweep runs over every event of the shared test stack: ended ones lose their keys too.
. "$(dirname "$0")/lib.sh"
e2e_require
command -v redis-cli >/dev/null || e2e_skip "redis-cli not installed"
export SECKILL_ORDER_INDEX_TTL_S=2 SECKILL_EXPIRY_INTERVAL_MS=200
e2e_start_kafka
e2e_start_consumer
SECKILL_EVENTS_RETENTION_S=1 SECKILL_RECONCILE_INTERVAL_MS=300 \
    SECKILL_RECONCILE_LOCK="seckill:reconciler:e2e-cleanup-$$" e2e_start_order
PORT=$E2E_HTTP_PORT

now_ms() { date +%s%3N; }
iso_ms() { date -u -d "@$(($1 / 1000)).$(printf %03d $(($1 % 1000)))" +%Y-%m-%dT%H:%M:%S.%3NZ; }
ADMIN=$(token 1 --admin)
# call METHOD PATH TOKEN [BODY] [PORT]: the status; the body in $E2E_TMP/resp
call() {
    local args=(-sS -o "$E2E_TMP/resp" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $3")
    [ -n "${4:-}" ] && args+=(-H 'Content-Type: application/json' -d "$4")
    curl "${args[@]}" "http://127.0.0.1:${5:-$PORT}$2"
}
expect() { # expect WANT STATUS WHAT
    [ "$2" = "$1" ] || e2e_fail "$3: HTTP $2 (want $1) $(cat "$E2E_TMP/resp")"
}
# get PATH TOKEN PORT: a GET, retried while it answers 503 (a list still loading: Retry-After)
get() {
    local st i
    for i in $(seq 50); do
        st=$(call GET "$1" "$2" "" "$3")
        [ "$st" = 503 ] || break
        sleep 0.1
    done
    echo "$st"
}
status_of() { sed -n 's/.*"status":"\([a-z_]*\)".*/\1/p' "$E2E_TMP/resp"; }

ENDS_MS=$(( $(now_ms) + 7000 ))
expect 201 "$(call POST /api/v1/events "$ADMIN" "{\"name\":\"e2e cleanup\",\"stock\":5,\"segments\":2,\
\"starts_at\":\"$(iso_ms $(( $(now_ms) - 60000 )))\",\"ends_at\":\"$(iso_ms "$ENDS_MS")\",\"payment_window_s\":1}")" "create"
EV=$(sed -n 's/.*"event_id":"\([0-9]*\)".*/\1/p' "$E2E_TMP/resp")
expect 200 "$(call PATCH "/api/v1/events/$EV" "$ADMIN" '{"name":"e2e cleanup (changed)"}')" "change"
[ -n "$(rcli HGET seckill:changed "$EV")" ] || e2e_fail "the change left no field in seckill:changed"

USER0=$(( $(date +%s) * 1000 + 900000 ))
mapfile -t T < <(token "$USER0" --count 3 --ttl 600)
OIDS=()
for i in 0 1 2; do
    expect 202 "$(call POST "/api/v1/events/$EV/orders" "${T[$i]}")" "order $i"
    OIDS+=("$(sed -n 's/.*"order_id":"\([0-9]*\)".*/\1/p' "$E2E_TMP/resp")")
done
in_pg() { [ "$(sql "select count(*) from seckill_order where event_id = $EV")" = 3 ]; }
e2e_wait 60 "the 3 orders in PostgreSQL" in_pg
# Paused and never resumed: the pause must not stay in seckill:paused for ever.
expect 200 "$(call POST "/api/v1/events/$EV/pause" "$ADMIN")" "pause"
[ "$(rcli SISMEMBER seckill:paused "$EV")" = 1 ] || e2e_fail "the pause is not in seckill:paused"
expect 200 "$(call POST "/api/v1/orders/${OIDS[0]}/pay" "${T[0]}" '{"payment_ref":"cleanup-1"}')" "pay"
expect 200 "$(call POST "/api/v1/orders/${OIDS[1]}/cancel" "${T[1]}")" "cancel"
# While the event lives, each of its keys carries the expiry (the sweep sets it within a
# scan, keys made after the load included: buyers, pending).
expiry_in_pg() { sql "select (extract(epoch from ends_at + make_interval(secs => payment_window_s + 1)) * 1000)::bigint from seckill_event where id = $EV"; }
want_at=$(expiry_in_pg)
keys_at() { # every key of the event and its expiry (the loader's lock and fence apart)
    { rcli --scan --pattern "seckill:{e$EV}*"; rcli --scan --pattern "seckill:{e$EV.*"; } |
        grep -v ':lock' | sort | while read -r k; do echo "$k=$(rcli PEXPIRETIME "$k")"; done
}
at_set() { ! keys_at | grep -qv "=$want_at\$"; }
e2e_wait 10 "the expiry on every key" at_set
[ "$(keys_at | grep -c buyers)" -ge 1 ] || e2e_fail "no buyers key: $(keys_at | tr '\n' ' ')"
e2e_log "$(keys_at | wc -l) keys expire at ends_at + window + retention ($want_at)"
# An end moved later moves the expiry (at the next sweep).
ENDS_MS=$((ENDS_MS + 2000))
expect 200 "$(call PATCH "/api/v1/events/$EV" "$ADMIN" "{\"ends_at\":\"$(iso_ms "$ENDS_MS")\"}")" "a later end"
old_at=$want_at
want_at=$(expiry_in_pg)
[ "$want_at" -eq $((old_at + 2000)) ] || e2e_fail "the later end: expiry $want_at, want $((old_at + 2000))"
e2e_wait 10 "the expiry moved with the end" at_set
e2e_log "the end moved 2 s later: every key's expiry too ($want_at)"

expired() { [ "$(sql "select status from seckill_order where order_id = ${OIDS[2]}")" = expired ]; }
e2e_wait 30 "the third order's window passed" expired

# The reads before the clean-up, to compare with those after it.
reads() { # reads PORT: the event's page (less its server time) and every order's status
    get "/api/v1/events/$EV" "${T[0]}" "$1" >"$E2E_TMP/st"
    [ "$(cat "$E2E_TMP/st")" = 200 ] || e2e_fail "event GET on $1: $(cat "$E2E_TMP/st") $(cat "$E2E_TMP/resp")"
    sed 's/"server_time":"[^"]*"//; s/"now":"[^"]*"//' "$E2E_TMP/resp"; echo
    for i in 0 1 2; do
        expect 200 "$(get "/api/v1/orders/${OIDS[$i]}" "${T[$i]}" "$1")" "order $i GET on $1"
        printf '%s ' "$(status_of)"
        expect 200 "$(get "/api/v1/orders?event_id=$EV" "${T[$i]}" "$1")" "orders list $i on $1"
        grep -q "\"order_id\":\"${OIDS[$i]}\"" "$E2E_TMP/resp" || e2e_fail "list $i on $1: $(cat "$E2E_TMP/resp")"
        printf '%s ' "$(status_of)"
    done
}
before=$(reads "$PORT")
case "$before" in *"paid paid cancelled cancelled expired expired"*) ;;
*) e2e_fail "the orders before the clean-up: $before" ;; esac
left() { # what is left of the event in Redis, one word per key or field
    rcli --scan --pattern "seckill:{e$EV}*" | grep -v ':lock$'
    rcli --scan --pattern "seckill:{e$EV.*"
    for o in "${OIDS[@]}"; do
        for f in "$o" "$o:o" "$o:s"; do
            [ "$(rcli HEXISTS "seckill:oidx:$((o >> 32))" "$f")" = 0 ] || echo "index:$f"
        done
    done
    [ -z "$(rcli HGET seckill:changed "$EV")" ] || echo "seckill:changed:$EV"
    [ "$(rcli SISMEMBER seckill:paused "$EV")" = 0 ] || echo "seckill:paused:$EV"
}
t0=$(now_ms)
while [ -n "$(left)" ]; do
    if [ $(($(now_ms) - t0)) -gt 60000 ]; then
        for o in "${OIDS[@]}"; do e2e_log "oidx:$((o >> 32)) ttl $(rcli PTTL "seckill:oidx:$((o >> 32))"): $(rcli HGETALL "seckill:oidx:$((o >> 32))" | tr '\n' ' ')"; done
        e2e_fail "left after 60 s: $(left | tr '\n' ' ')"
    fi
    sleep 0.2
done
[ "$(( $(now_ms) + 100 ))" -ge "$want_at" ] || e2e_fail "the keys went before their expiry ($want_at)"
e2e_log "no key of event $EV left after ends_at + window + retention"

after=$(reads "$PORT")
[ "$after" = "$before" ] || e2e_fail "the reads changed with the clean-up: $before -> $after"
case "$after" in *"paid paid cancelled cancelled expired expired"*) ;;
*) e2e_fail "the orders after the clean-up: $after" ;; esac
# 5 units: one paid, the cancelled and the expired ones' back
[ "$(sql "select stock_left from seckill_event where id = $EV")" = 4 ] || e2e_fail "stock_left in PostgreSQL"
grep -q '"name":"e2e cleanup (changed)"' <<<"$after" && grep -q '"stock_left":4' <<<"$after" ||
    e2e_fail "the event's page after the clean-up: $after"

# A fresh front reads it all from PostgreSQL.
PORT_B=$(e2e_free_port)
SECKILL_HTTP_PORT=$PORT_B SECKILL_HTTP_BIND=127.0.0.1 SECKILL_KAFKA_BROKERS=$E2E_BROKERS \
    SECKILL_RECONCILE_INTERVAL_MS=0 SECKILL_JWT_SECRET=$E2E_SECRET "$BIN/seckill-order" >"$E2E_TMP/order_b.log" 2>&1 &
E2E_PIDS+=($!)
e2e_wait 60 "front B /readyz" curl -fsS "http://127.0.0.1:$PORT_B/readyz"
fresh=$(reads "$PORT_B")
[ "$fresh" = "$after" ] || e2e_fail "a fresh front reads otherwise: $fresh (front A: $after)"
e2e_log "every read still right after the clean-up: $(tail -n 1 <<<"$after")"
[ -z "$(left)" ] || e2e_fail "the reads made keys again: $(left | tr '\n' ' ')"
e2e_log "PASS"
