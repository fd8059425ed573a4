#!/usr/bin/env bash
# e2e: an admin changes a live event and ends it (issue 32 items 1, 2 and part of 8), on
# two seckill-order fronts sharing Redis and PostgreSQL.
#  - bad input changes nothing: a buyer's token 403, an unknown field 400, an unknown
#    event 404; PostgreSQL's row and every segment's meta are as before;
#  - a change (PATCH on front A: the start moved to now, a new name, a user_rate) shows
#    on A's GET at once, in PostgreSQL and in every segment's meta; front B, which
#    answered 403 not_started from memory, sells within 1 s and shows the new name;
#  - what cannot be honoured is 409 with the reason: a start moved once orders were
#    taken, an end in the past;
#  - POST /end (the event paused first): orders are 403 ended on both fronts (B within
#    1 s; its time is logged), an order taken before is still cancelled, a change or an
#    end after the end is 409; seckill-check judges the sale;
#  - the record (GET .../audit, admins only, paginated): exactly the acts that happened,
#    create, change, change, pause, end, each with the actor, before and after (none of
#    the refused calls), in PostgreSQL's seckill_admin_audit;
#  - removal: the event with orders is archived (its orders readable, a second removal
#    409); an event without orders is 409 while on sale, then, ended, deleted: its row
#    and its gate's keys are gone, both fronts answer 404 (B within 1 s), its record
#    stays readable;
#  - a restock of the ended, the archived or the removed event (item 8): 409 or 404 naming
#    the reason, nothing changed in PostgreSQL (row, record) or Redis (every key of it).
. "$(dirname "$0")/lib.sh"
e2e_require
command -v redis-cli >/dev/null || e2e_skip "redis-cli not installed"
e2e_start_kafka
e2e_start_consumer
e2e_start_order
PORT_A=$E2E_HTTP_PORT
PORT_B=$(e2e_free_port)
SECKILL_HTTP_PORT=$PORT_B SECKILL_HTTP_BIND=127.0.0.1 SECKILL_KAFKA_BROKERS=$E2E_BROKERS \
    SECKILL_JWT_SECRET=$E2E_SECRET "$BIN/seckill-order" >"$E2E_TMP/order_b.log" 2>&1 &
E2E_PIDS+=($!)
e2e_wait 60 "second seckill-order /readyz" curl -fsS "http://127.0.0.1:$PORT_B/readyz"

now_ms() { date +%s%3N; }
iso() { date -u -d "$1" +%Y-%m-%dT%H:%M:%SZ; }
ADMIN=$(token 1 --admin)
BUYER=$(token 2)
# call PORT METHOD PATH [TOKEN [BODY]]: the status; the body in $E2E_TMP/resp
call() {
    local args=(-sS -o "$E2E_TMP/resp" -w '%{http_code}' -X "$2" -H "Authorization: Bearer ${4:-$ADMIN}")
    [ $# -ge 5 ] && args+=(-H 'Content-Type: application/json' -d "$5")
    curl "${args[@]}" "http://127.0.0.1:$1$3"
}
expect() { # expect WANT STATUS WHAT: the status and, for errors, the reason in the body
    [ "$2" = "$1" ] || e2e_fail "$3: HTTP $2 (want $1) $(cat "$E2E_TMP/resp")"
}

# An event in an hour, on 3 segments (the change goes to each segment's meta).
call "$PORT_A" POST /api/v1/events "$ADMIN" "{\"name\":\"e2e admin\",\"stock\":20,\"segments\":3,\
\"starts_at\":\"$(iso '+1 hour')\",\"ends_at\":\"$(iso '+2 hour')\"}" >"$E2E_TMP/st"
expect 201 "$(cat "$E2E_TMP/st")" "create event"
EV=$(sed -n 's/.*"event_id":"\([0-9]*\)".*/\1/p' "$E2E_TMP/resp")
mkdir -p "$E2E_TMP/out"
echo "$EV" >"$E2E_TMP/out/event_id"
: >"$E2E_TMP/out/accepted.txt"
META=("seckill:{e$EV}:meta" "seckill:{e$EV.1}:meta" "seckill:{e$EV.2}:meta")
state() { # the row and every segment's meta, as one line
    sql "select name, starts_at, ends_at, per_user_limit, coalesce(user_rate, 0) from seckill_event where id = $EV"
    for m in "${META[@]}"; do rcli HMGET "$m" starts_at_ms ends_at_ms user_rate | tr '\n' ' '; done
}

USER0=$(( $(date +%s) * 1000 + 300000 ))
mapfile -t TOKS < <(token "$USER0" --count 100 --ttl 600)
echo 0 >"$E2E_TMP/next"
place() { # place PORT: one order by a new user; the status; 202s' ids kept
    local i st
    i=$(cat "$E2E_TMP/next")
    echo $((i + 1)) >"$E2E_TMP/next"
    st=$(curl -sS -o "$E2E_TMP/oresp" -w '%{http_code}' -X POST -H "Authorization: Bearer ${TOKS[$i]}" \
        "http://127.0.0.1:$1/api/v1/events/$EV/orders")
    if [ "$st" = 202 ]; then
        echo "$(sed -n 's/.*"order_id":"\([0-9]*\)".*/\1/p' "$E2E_TMP/oresp")" >>"$E2E_TMP/out/accepted.txt"
        echo "$i" >>"$E2E_TMP/buyers"
    fi
    echo "$st"
}

# Front B learns the window (its page) and refuses from memory before the start.
expect 200 "$(call "$PORT_B" GET "/api/v1/events/$EV" "$BUYER")" "GET on B"
st=$(place "$PORT_B")
[ "$st" = 403 ] && grep -q not_started "$E2E_TMP/oresp" || e2e_fail "B before the start: $st $(cat "$E2E_TMP/oresp")"

# ---- bad input: nothing changes -------------------------------------------------------
before=$(state)
expect 403 "$(call "$PORT_A" PATCH "/api/v1/events/$EV" "$BUYER" '{"name":"x"}')" "a buyer's change"
grep -q admin "$E2E_TMP/resp" || e2e_fail "403 without the reason: $(cat "$E2E_TMP/resp")"
expect 400 "$(call "$PORT_A" PATCH "/api/v1/events/$EV" "$ADMIN" '{"name":"x","stock":5}')" "unknown field"
grep -q "stock: unknown field" "$E2E_TMP/resp" || e2e_fail "400 without the field: $(cat "$E2E_TMP/resp")"
expect 400 "$(call "$PORT_A" PATCH "/api/v1/events/$EV" "$ADMIN" '{}')" "empty change"
expect 404 "$(call "$PORT_A" PATCH "/api/v1/events/$((EV + 1))" "$ADMIN" '{"name":"x"}')" "unknown event"
expect 403 "$(call "$PORT_A" POST "/api/v1/events/$EV/end" "$BUYER")" "a buyer's end"
[ "$(state)" = "$before" ] || e2e_fail "bad input changed the event: $before -> $(state)"
e2e_log "bad input refused, nothing changed"

# ---- a change: A at once, B within 1 s ------------------------------------------------
start=$(iso '-1 minute')
start_ms=$(( $(date -u -d "$start" +%s) * 1000 ))
expect 200 "$(call "$PORT_A" PATCH "/api/v1/events/$EV" "$ADMIN" \
    "{\"starts_at\":\"$start\",\"name\":\"e2e admin (moved)\",\"limits\":{\"user_rate\":50}}")" "change"
t0=$(now_ms)
grep -q '"name":"e2e admin (moved)"' "$E2E_TMP/resp" || e2e_fail "change answer: $(cat "$E2E_TMP/resp")"
expect 200 "$(call "$PORT_A" GET "/api/v1/events/$EV" "$BUYER")" "GET on A"
grep -q '"name":"e2e admin (moved)"' "$E2E_TMP/resp" && grep -q "\"starts_at\":\"${start%Z}" "$E2E_TMP/resp" ||
    e2e_fail "A's GET right after the change: $(cat "$E2E_TMP/resp")"
sold=
while [ -z "$sold" ]; do
    el=$(($(now_ms) - t0))
    [ $el -le 1000 ] || e2e_fail "front B still refuses ${el} ms after the change (bound 1000 ms)"
    st=$(place "$PORT_B")
    case $st in 202) sold=$el ;; 403) ;; *) e2e_fail "B: $st $(cat "$E2E_TMP/oresp")" ;; esac
done
e2e_log "front B sells ${sold} ms after the change of the start (bound 1000 ms)"
seen=
while [ -z "$seen" ]; do
    el=$(($(now_ms) - t0))
    [ $el -le 1000 ] || e2e_fail "B's GET shows the old event ${el} ms after the change"
    call "$PORT_B" GET "/api/v1/events/$EV" "$BUYER" >/dev/null
    grep -q '"name":"e2e admin (moved)"' "$E2E_TMP/resp" && seen=$el
done
e2e_log "front B's page shows the change after ${seen} ms (bound 1000 ms)"
[ "$(sql "select name, coalesce(user_rate, 0) from seckill_event where id = $EV")" = "e2e admin (moved)|50" ] ||
    e2e_fail "PostgreSQL after the change: $(sql "select * from seckill_event where id = $EV")"
for m in "${META[@]}"; do
    [ "$(rcli HGET "$m" starts_at_ms)" = "$start_ms" ] || e2e_fail "$m starts_at_ms: $(rcli HGET "$m" starts_at_ms), want $start_ms"
    [ "$(rcli HGET "$m" user_rate)" = 50 ] || e2e_fail "$m user_rate: $(rcli HGET "$m" user_rate)"
done
for _ in 1 2 3; do expect 202 "$(place "$PORT_A")" "an order on A"; done

# ---- what cannot be honoured: 409 with the reason -------------------------------------
before=$(state)
expect 409 "$(call "$PORT_A" PATCH "/api/v1/events/$EV" "$ADMIN" "{\"starts_at\":\"$(iso '+10 minute')\"}")" "start moved after orders"
grep -q '"error":"conflict"' "$E2E_TMP/resp" && grep -q "starts_at can no longer move" "$E2E_TMP/resp" ||
    e2e_fail "409 without the reason: $(cat "$E2E_TMP/resp")"
expect 409 "$(call "$PORT_B" PATCH "/api/v1/events/$EV" "$ADMIN" "{\"ends_at\":\"$(iso '-1 minute')\"}")" "end in the past"
grep -q "ends_at must be in the future" "$E2E_TMP/resp" || e2e_fail "409 without the reason: $(cat "$E2E_TMP/resp")"
[ "$(state)" = "$before" ] || e2e_fail "a refused change changed the event: $before -> $(state)"
expect 200 "$(call "$PORT_B" PATCH "/api/v1/events/$EV" "$ADMIN" "{\"ends_at\":\"$(iso '+3 hour')\"}")" "a later end"

# ---- end now (the event paused first: an ended sale is 403 ended, not 503 paused) -----
expect 200 "$(call "$PORT_A" POST "/api/v1/events/$EV/pause")" "pause"
paused_b() { [ "$(place "$PORT_B")" = 503 ]; }
e2e_wait 5 "front B paused" paused_b
expect 200 "$(call "$PORT_A" POST "/api/v1/events/$EV/end")" "end"
t0=$(now_ms)
st=$(place "$PORT_A")
[ "$st" = 403 ] && grep -q '"error":"ended"' "$E2E_TMP/oresp" || e2e_fail "A right after the end: $st $(cat "$E2E_TMP/oresp")"
ended=
while [ -z "$ended" ]; do
    el=$(($(now_ms) - t0))
    [ $el -le 1000 ] || e2e_fail "front B does not answer ended ${el} ms after the end"
    st=$(place "$PORT_B")
    if [ "$st" = 403 ] && grep -q '"error":"ended"' "$E2E_TMP/oresp"; then ended=$el; fi
    [ "$st" = 202 ] && e2e_fail "front B sold after the end"
done
e2e_log "front B answers 403 ended ${ended} ms after the end (target 250 ms)"
[ "$(rcli SISMEMBER seckill:paused "$EV")" = 0 ] || e2e_fail "the end left the event paused"
for m in "${META[@]}"; do
    e=$(rcli HGET "$m" ends_at_ms)
    [ "$e" -le "$(now_ms)" ] || e2e_fail "$m ends_at_ms $e is not past"
done
[ "$(sql "select ends_at <= now() from seckill_event where id = $EV")" = t ] || e2e_fail "PostgreSQL's ends_at is not past"
expect 409 "$(call "$PORT_A" PATCH "/api/v1/events/$EV" "$ADMIN" '{"name":"late"}')" "change after the end"
grep -q "has ended" "$E2E_TMP/resp" || e2e_fail "409 without the reason: $(cat "$E2E_TMP/resp")"
expect 409 "$(call "$PORT_B" POST "/api/v1/events/$EV/end")" "end twice"

# Orders taken before the end go on: the first one is cancelled by its buyer.
OID=$(head -n 1 "$E2E_TMP/out/accepted.txt")
I0=$(head -n 1 "$E2E_TMP/buyers")
in_pg() { [ "$(sql "select status from seckill_order where order_id = $OID")" = created ]; }
e2e_wait 60 "order $OID in PostgreSQL" in_pg
expect 200 "$(call "$PORT_B" POST "/api/v1/orders/$OID/cancel" "${TOKS[$I0]}")" "cancel after the end"
grep -q '"status":"cancelled"' "$E2E_TMP/resp" || e2e_fail "cancel: $(cat "$E2E_TMP/resp")"
grep -q "actor=1 " "$E2E_TMP/order.log" || e2e_fail "no log line names the actor"

e2e_check --wait 60 || e2e_fail "seckill-check found a violation"

# ---- the record ------------------------------------------------------------------------
field() { grep -o "\"$1\" *: *\"[^\"]*\"" "$E2E_TMP/resp" | sed 's/.*: *"\(.*\)"/\1/' | tr '\n' ' '; }
expect 403 "$(call "$PORT_A" GET "/api/v1/events/$EV/audit" "$BUYER")" "a buyer reads the record"
expect 200 "$(call "$PORT_B" GET "/api/v1/events/$EV/audit?limit=100")" "the record"
[ "$(field act)" = "create change change pause end " ] || e2e_fail "acts recorded: $(field act) ($(cat "$E2E_TMP/resp"))"
[ "$(field actor)" = "1 1 1 1 1 " ] || e2e_fail "actors recorded: $(field actor)"
[ "$(sql "select count(*) from seckill_admin_audit where event_id = $EV")" = 5 ] || e2e_fail "rows in seckill_admin_audit"
[ "$(sql "select before->>'name', after->>'name', after->>'starts_at' < before->>'starts_at' from seckill_admin_audit where event_id = $EV and act = 'change' order by id limit 1")" = "e2e admin|e2e admin (moved)|t" ] ||
    e2e_fail "the change's before and after: $(sql "select before, after from seckill_admin_audit where event_id = $EV and act = 'change'")"
expect 200 "$(call "$PORT_A" GET "/api/v1/events/$EV/audit?limit=2")" "the record's first page"
[ "$(field act)" = "create change " ] && grep -q '"next_offset":2' "$E2E_TMP/resp" || e2e_fail "page 1: $(cat "$E2E_TMP/resp")"
expect 200 "$(call "$PORT_A" GET "/api/v1/events/$EV/audit?offset=4&limit=2")" "the record's last page"
[ "$(field act)" = "end " ] && grep -q '"next_offset":null' "$E2E_TMP/resp" || e2e_fail "last page: $(cat "$E2E_TMP/resp")"
expect 400 "$(call "$PORT_A" GET "/api/v1/events/$EV/audit?limit=0")" "a bad page"
e2e_log "the record holds the 5 acts, none of the refused calls"

# ---- removal ---------------------------------------------------------------------------
expect 200 "$(call "$PORT_A" DELETE "/api/v1/events/$EV")" "remove the event with orders"
grep -q '"removed":"archived"' "$E2E_TMP/resp" || e2e_fail "not archived: $(cat "$E2E_TMP/resp")"
[ "$(sql "select archived_at is not null from seckill_event where id = $EV")" = t ] || e2e_fail "archived_at not set"
expect 200 "$(call "$PORT_B" GET "/api/v1/orders/$OID")" "an archived event's order"
expect 409 "$(call "$PORT_B" DELETE "/api/v1/events/$EV")" "archive twice"
# A restock of the archived (ended) event: 409 naming the end, nothing changed.
ev_state() { # the row, every segment's gate and the record's length, as one line
    sql "select stock_total, stock_left, ends_at, archived_at is not null from seckill_event where id = $1"
    sql "select count(*) from seckill_admin_audit where event_id = $1"
    rcli --scan --pattern "seckill:{e$1[.}]*" | grep -v ':lock' | sort | while read -r k; do
        printf '%s=%s ' "$k" "$(rcli TYPE "$k")"
        [ "$(rcli TYPE "$k")" = string ] && rcli GET "$k"
    done
}
before=$(ev_state "$EV")
expect 409 "$(call "$PORT_A" POST "/api/v1/events/$EV/stock" "$ADMIN" '{"add":5}')" "restock of the archived event"
grep -q "has ended" "$E2E_TMP/resp" || e2e_fail "409 without the reason: $(cat "$E2E_TMP/resp")"
[ "$(ev_state "$EV")" = "$before" ] || e2e_fail "a refused restock changed the archived event: $before -> $(ev_state "$EV")"
expect 201 "$(call "$PORT_A" POST /api/v1/events "$ADMIN" "{\"name\":\"e2e remove\",\"stock\":5,\"segments\":2,\
\"starts_at\":\"$(iso '+1 hour')\",\"ends_at\":\"$(iso '+2 hour')\"}")" "create the event to remove"
E2=$(sed -n 's/.*"event_id":"\([0-9]*\)".*/\1/p' "$E2E_TMP/resp")
expect 200 "$(call "$PORT_B" GET "/api/v1/events/$E2" "$BUYER")" "B reads it"
expect 403 "$(call "$PORT_B" DELETE "/api/v1/events/$E2" "$BUYER")" "a buyer's removal"
expect 409 "$(call "$PORT_B" DELETE "/api/v1/events/$E2")" "remove while on sale"
grep -q "end it first" "$E2E_TMP/resp" || e2e_fail "409 without the reason: $(cat "$E2E_TMP/resp")"
expect 200 "$(call "$PORT_A" POST "/api/v1/events/$E2/end")" "end the event to remove"
before=$(ev_state "$E2")
expect 409 "$(call "$PORT_B" POST "/api/v1/events/$E2/stock" "$ADMIN" '{"total":50}')" "restock of the ended event"
grep -q "has ended" "$E2E_TMP/resp" || e2e_fail "409 without the reason: $(cat "$E2E_TMP/resp")"
[ "$(ev_state "$E2")" = "$before" ] || e2e_fail "a refused restock changed the ended event: $before -> $(ev_state "$E2")"
expect 200 "$(call "$PORT_A" DELETE "/api/v1/events/$E2")" "remove the event without orders"
t0=$(now_ms)
grep -q '"removed":"deleted"' "$E2E_TMP/resp" || e2e_fail "not deleted: $(cat "$E2E_TMP/resp")"
gone=
while [ -z "$gone" ]; do
    el=$(($(now_ms) - t0))
    [ $el -le 1000 ] || e2e_fail "front B still shows the deleted event ${el} ms after"
    [ "$(call "$PORT_B" GET "/api/v1/events/$E2" "$BUYER")" = 404 ] && gone=$el
done
e2e_log "front B answers 404 for the deleted event after ${gone} ms (bound 1000 ms)"
expect 404 "$(call "$PORT_A" GET "/api/v1/events/$E2" "$BUYER")" "A's page of the deleted event"
[ "$(sql "select count(*) from seckill_event where id = $E2")" = 0 ] || e2e_fail "the row is still there"
left=$(rcli --scan --pattern "seckill:{e$E2*" | grep -v ':lock' || true)
[ -z "$left" ] || e2e_fail "keys left in Redis: $left"
# A restock of the removed event: 404 naming it, no row and no key made again.
for port in "$PORT_A" "$PORT_B"; do
    expect 404 "$(call "$port" POST "/api/v1/events/$E2/stock" "$ADMIN" '{"add":5}')" "restock of the removed event"
    grep -q '"error":"not_found"' "$E2E_TMP/resp" || e2e_fail "404 without the reason: $(cat "$E2E_TMP/resp")"
done
[ "$(sql "select count(*) from seckill_event where id = $E2")" = 0 ] || e2e_fail "a restock made the row again"
left=$(rcli --scan --pattern "seckill:{e$E2*" | grep -v ':lock' || true)
[ -z "$left" ] || e2e_fail "a restock of the removed event left keys in Redis: $left"
expect 200 "$(call "$PORT_B" GET "/api/v1/events/$E2/audit")" "the deleted event's record"
[ "$(field act)" = "create end delete " ] || e2e_fail "the deleted event's record: $(field act)"
e2e_log "PASS"
