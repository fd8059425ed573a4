#!/usr/bin/env bash
# e2e: after the 202 (issue 22) through one front and one consumer: pay, cancel, the
# late payment, and the unit given back and sold again.
#   - pay twice with one reference: 200 paid both times; another reference: 409
#     already_paid; cancel of a paid order: 409; nothing changed by the refusals.
#   - cancel: 200 cancelled, twice; pay after cancel: 409 closed; stock_left + 1 in
#     PostgreSQL and the unit back in the Redis gate exactly once (released set,
#     released_at); GET says cancelled.
#   - an order whose window passed: pay is 409 closed with the status expired, the unit
#     comes back (the late payment can never make two holders of one unit).
#   - the released unit is bought by another user on a sold-out event; the cancelled
#     buyer stays a buyer (rebuy_after_release false: 409 duplicate), and may buy again
#     on an event with rebuy_after_release true.
#   - bad ids and bodies: 400 / 404 / 401 / 403, and nothing changed.
#   - the consumer's expiry within the window + 5 s, and its release sweep after a
#     crash between the PostgreSQL commit and Redis (release.lua once per order id).
. "$(dirname "$0")/lib.sh"
e2e_require
: "${SECKILL_SOURCE_DIR:?SECKILL_SOURCE_DIR is not set (ctest sets it)}"
command -v redis-cli >/dev/null || e2e_skip "redis-cli not installed"
e2e_start_kafka
e2e_start_consumer
e2e_start_order
URL="http://127.0.0.1:$E2E_HTTP_PORT"

# call METHOD PATH TOKEN [BODY]: prints the status; the body lands in $E2E_TMP/resp.
call() {
    local args=(-sS -o "$E2E_TMP/resp" -w '%{http_code}' -X "$1")
    [ -n "$3" ] && args+=(-H "Authorization: Bearer $3")
    [ $# -ge 4 ] && args+=(-H 'Content-Type: application/json' -d "$4")
    curl "${args[@]}" "$URL$2"
}
body() { cat "$E2E_TMP/resp"; }
expect() { # expect STATUS ERROR-or-STATUS-field METHOD PATH TOKEN [BODY]
    local want=$1 field=$2 st
    shift 2
    st=$(call "$@")
    [ "$st" = "$want" ] || e2e_fail "$1 $2: HTTP $st, expected $want: $(body)"
    if [ -n "$field" ]; then
        grep -q "\"\\(error\\|status\\)\":\"$field\"" "$E2E_TMP/resp" ||
            e2e_fail "$1 $2: expected $field in $(body)"
    fi
}

ADMIN=$(token 1 --admin)
# make_event STOCK WINDOW_S REBUY [SEGMENTS]: prints the event id.
make_event() {
    local starts ends resp
    starts=$(date -u -d '-1 minute' +%Y-%m-%dT%H:%M:%SZ)
    ends=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
    resp=$(curl -fsS -X POST -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
        -d "{\"name\":\"e2e pay\",\"stock\":$1,\"starts_at\":\"$starts\",\"ends_at\":\"$ends\",\"payment_window_s\":$2,\"rebuy_after_release\":$3,\"segments\":${4:-1}}" \
        "$URL/api/v1/events") || e2e_fail "create event"
    printf '%s' "$resp" | sed -n 's/.*"event_id":"\([0-9]*\)".*/\1/p'
}
in_pg() { [ -n "$(sql "select 1 from seckill_order where order_id = $1")" ]; }
# buy EVENT TOKEN: places an order, waits until PostgreSQL has it; prints the order id.
buy() {
    local st oid
    st=$(call POST "/api/v1/events/$1/orders" "$2")
    [ "$st" = 202 ] || e2e_fail "order on $1: HTTP $st $(body)"
    oid=$(sed -n 's/.*"order_id":"\([0-9]*\)".*/\1/p' "$E2E_TMP/resp")
    e2e_wait 60 "order $oid in PostgreSQL" in_pg "$oid"
    echo "$oid"
}
stock_left() { sql "select stock_left from seckill_event where id = $1"; }
gate() { rcli GET "seckill:{e$1}:stock"; }

USER0=$(( $(date +%s) * 1000 + 500000 ))
mapfile -t T < <(token "$USER0" --count 20 --ttl 600)

# ---- pay: idempotent, another reference 409, cancel of paid 409 --------------------
EV=$(make_event 3 900 false)
[ -n "$EV" ] || e2e_fail "no event id"
[ "$(sql "select payment_window_s || ' ' || rebuy_after_release from seckill_event where id = $EV")" = "900 false" ] ||
    e2e_fail "event settings not stored"
O1=$(buy "$EV" "${T[0]}")
[ "$(sql "select pay_by - created_at between interval '900 seconds' and interval '960 seconds' from seckill_order where order_id = $O1")" = t ] ||
    e2e_fail "pay_by is not the insert's time + payment_window_s"
expect 200 created GET "/api/v1/orders/$O1" "${T[0]}"
# pay_by from the order index (the consumer's created entry carries PostgreSQL's value)
pay_by() { sed -n 's/.*"pay_by":"\([^"]*\)".*/\1/p' "$E2E_TMP/resp"; }
PB=$(pay_by)
[ -n "$PB" ] || e2e_fail "GET of a created order answered from the index has no pay_by: $(body)"
idx=$(rcli HGET "seckill:oidx:$((O1 >> 32))" "$O1:o")
[ "${idx##*:}" = "$(sql "select (extract(epoch from pay_by) * 1000)::bigint from seckill_order where order_id = $O1")" ] ||
    e2e_fail "the index entry $idx does not carry PostgreSQL's pay_by"
expect 403 forbidden POST "/api/v1/orders/$O1/pay" "${T[1]}" '{"payment_ref":"x"}'
expect 200 paid POST "/api/v1/orders/$O1/pay" "${T[0]}" '{"payment_ref":"ref-1"}'
grep -q '"pay_by":"' "$E2E_TMP/resp" || e2e_fail "no pay_by in $(body)"
[ "$(pay_by)" = "$PB" ] || e2e_fail "pay_by from PostgreSQL $(pay_by), from the index $PB"
expect 200 paid POST "/api/v1/orders/$O1/pay" "${T[0]}" '{"payment_ref":"ref-1"}'
expect 409 already_paid POST "/api/v1/orders/$O1/pay" "${T[0]}" '{"payment_ref":"ref-2"}'
expect 409 already_paid POST "/api/v1/orders/$O1/cancel" "${T[0]}"
expect 200 paid GET "/api/v1/orders/$O1" "${T[0]}"
[ "$(pay_by)" = "$PB" ] || e2e_fail "GET of a paid order: pay_by $(pay_by), expected $PB"
[ "$(sql "select status || ' ' || payment_ref || ' ' || (paid_at is not null) from seckill_order where order_id = $O1")" = "paid ref-1 true" ] ||
    e2e_fail "the paid row: $(sql "select status, payment_ref, paid_at from seckill_order where order_id = $O1")"
[ "$(stock_left "$EV")" = 2 ] || e2e_fail "stock_left after a payment: $(stock_left "$EV")"
e2e_log "pay: idempotent, 409 on another reference and on cancel"

# ---- bad ids and bodies: nothing changes ----------------------------------------
O2=$(buy "$EV" "${T[1]}")
expect 400 bad_request POST "/api/v1/orders/$O2/pay" "${T[1]}" '{"payment_ref":""}'
expect 400 bad_request POST "/api/v1/orders/$O2/pay" "${T[1]}" 'not json'
expect 400 bad_request POST "/api/v1/orders/$O2/pay" "${T[1]}" '{"payment_ref":7}'
expect 400 bad_request POST "/api/v1/orders/$O2/cancel" "${T[1]}" '[1]'
expect 400 bad_request POST "/api/v1/orders/0x12/pay" "${T[1]}" '{"payment_ref":"a"}'
expect 400 bad_request POST "/api/v1/orders/00012/cancel" "${T[1]}"
expect 404 not_found POST "/api/v1/orders/12345/pay" "${T[1]}" '{"payment_ref":"a"}'
# An id of this second that neither PostgreSQL nor the index holds may be an order another
# worker has just accepted, its index entry not in Redis yet: not ready, not 404
# (ORDER_INDEX_ENTRY_GRACE_S, order_msg.h); one 10 s old is unknown. (Sequence 2^32 - 16:
# far past any this test issues.)
YOUNG=$(( (($(date +%s) - 1704067200) << 32) | 4294967280 ))
expect 409 not_ready POST "/api/v1/orders/$YOUNG/cancel" "${T[1]}"
OLD=$(( (($(date +%s) - 10 - 1704067200) << 32) | 4294967280 ))
expect 404 not_found POST "/api/v1/orders/$OLD/cancel" "${T[1]}"
expect 404 not_found POST "/api/v1/orders/$O2/refund" "${T[1]}"
expect 405 method_not_allowed GET "/api/v1/orders/$O2/pay" "${T[1]}"
expect 401 unauthorized POST "/api/v1/orders/$O2/cancel" ""
[ "$(sql "select status from seckill_order where order_id = $O2")" = created ] || e2e_fail "a bad call changed $O2"
[ "$(stock_left "$EV")" = 1 ] || e2e_fail "stock_left after bad calls: $(stock_left "$EV")"
e2e_log "bad ids and bodies: 400/401/404/405, nothing changed"

# ---- cancel: the unit back once, then sold to another user ------------------------
O3=$(buy "$EV" "${T[2]}")
expect 409 sold_out POST "/api/v1/events/$EV/orders" "${T[3]}"
[ "$(gate "$EV")" = 0 ] || e2e_fail "gate not empty: $(gate "$EV")"
expect 200 cancelled POST "/api/v1/orders/$O2/cancel" "${T[1]}"
expect 200 cancelled POST "/api/v1/orders/$O2/cancel" "${T[1]}"
expect 409 closed POST "/api/v1/orders/$O2/pay" "${T[1]}" '{"payment_ref":"late"}'
expect 200 cancelled GET "/api/v1/orders/$O2" "${T[1]}"
[ "$(gate "$EV")" = 1 ] || e2e_fail "gate after cancel twice: $(gate "$EV"), expected 1"
[ "$(stock_left "$EV")" = 1 ] || e2e_fail "stock_left after cancel: $(stock_left "$EV")"
[ "$(sql "select (closed_at is not null) || ' ' || (released_at is not null) from seckill_order where order_id = $O2")" = "true true" ] ||
    e2e_fail "closed_at / released_at not set on $O2"
[ "$(rcli SISMEMBER "seckill:{e$EV}:released" "$O2")" = 1 ] || e2e_fail "no release marker for $O2"
# The cancelled buyer stays a buyer here (rebuy_after_release false).
expect 409 duplicate POST "/api/v1/events/$EV/orders" "${T[1]}"
# Another user gets the released unit (this front's sold-out flag was lifted).
O4=$(buy "$EV" "${T[3]}")
[ "$(gate "$EV")" = 0 ] || e2e_fail "gate after the resale: $(gate "$EV")"
e2e_log "cancel: unit back once ($O2), sold again to another user ($O4)"

# ---- the late payment: the window passed, pay is refused, the unit comes back -----
sql "update seckill_order set pay_by = now() - interval '1 second' where order_id = $O3"
expect 409 closed POST "/api/v1/orders/$O3/pay" "${T[2]}" '{"payment_ref":"too-late"}'
grep -q 'expired' "$E2E_TMP/resp" || e2e_fail "the late payer is not told expired: $(body)"
expect 200 expired GET "/api/v1/orders/$O3" "${T[2]}"
expect 409 closed POST "/api/v1/orders/$O3/cancel" "${T[2]}"
[ "$(gate "$EV")" = 1 ] || e2e_fail "gate after the expiry: $(gate "$EV")"
[ "$(stock_left "$EV")" = 1 ] || e2e_fail "stock_left after the expiry: $(stock_left "$EV")"
[ "$(sql "select count(*) from seckill_order where event_id = $EV and status in ('created','paid')")" = 2 ] ||
    e2e_fail "held orders of $EV"
e2e_log "late payment: 409 closed (expired), unit back"

# ---- rebuy_after_release true: the same buyer may buy again -----------------------
EV2=$(make_event 1 900 true)
O5=$(buy "$EV2" "${T[4]}")
expect 200 cancelled POST "/api/v1/orders/$O5/cancel" "$ADMIN"
O6=$(buy "$EV2" "${T[4]}")
[ "$O6" != "$O5" ] || e2e_fail "same order id"
e2e_log "rebuy_after_release: the buyer bought again ($O6)"
# ---- expiry by the consumer: within payment_window_s + 5 s, unit back once ---------
EV3=$(make_event 1 2 false)
O7=$(buy "$EV3" "${T[5]}")
t0=$SECONDS
expired() { [ "$(sql "select status || ' ' || (released_at is not null) from seckill_order where order_id = $O7")" = 'expired true' ]; }
e2e_wait 7 "order $O7 expired and released within the 2 s window + 5 s" expired
e2e_log "expired after $((SECONDS - t0)) s"
[ "$(gate "$EV3")" = 1 ] || e2e_fail "gate after the expiry: $(gate "$EV3")"
[ "$(stock_left "$EV3")" = 1 ] || e2e_fail "stock_left after the expiry: $(stock_left "$EV3")"
expect 200 expired GET "/api/v1/orders/$O7" "${T[5]}"
expect 409 closed POST "/api/v1/orders/$O7/pay" "${T[5]}" '{"payment_ref":"late"}'
O8=$(buy "$EV3" "${T[6]}")
e2e_log "expiry: $O7 expired by the consumer, the unit sold again ($O8)"

# ---- a crash between the PostgreSQL commit and the Redis release -----------------
# What a front killed right after its cancel's COMMIT leaves: the order cancelled and
# stock_left + 1 in PostgreSQL, released_at NULL, nothing given back in Redis. The
# consumer's release sweep must give the unit back exactly once.
EV4=$(make_event 1 900 false)
O9=$(buy "$EV4" "${T[7]}")
sql "begin; update seckill_order set status = 'cancelled', closed_at = now() where order_id = $O9; update seckill_event set stock_left = stock_left + 1 where id = $EV4; commit"
swept() { [ "$(sql "select released_at is not null from seckill_order where order_id = $O9")" = t ]; }
e2e_wait 10 "the sweep released $O9" swept
[ "$(gate "$EV4")" = 1 ] || e2e_fail "gate after the sweep: $(gate "$EV4")"
# A second release of the same order (a retry after a lost answer) changes nothing.
[ "$(rcli EVAL "$(cat "$SECKILL_SOURCE_DIR/lua/release.lua")" 3 "seckill:{e$EV4}:stock" "seckill:{e$EV4}:buyers" "seckill:{e$EV4}:released" "$O9" 1 0)" = 0 ] ||
    e2e_fail "release.lua released $O9 twice"
[ "$(gate "$EV4")" = 1 ] || e2e_fail "gate after a repeated release: $(gate "$EV4")"
expect 200 cancelled GET "/api/v1/orders/$O9" "${T[7]}"
e2e_log "sweep: a release owed after a crash came back once ($O9)"

# ---- segments (K = 3): the unit goes back to the buyer's home segment -------------
# The home is the segment whose buyers hash holds the user (order_seg_home); the
# released set is there too. rebuy false keeps the buyer there, true lets it buy again.
seg_key() { if [ "$2" = 0 ]; then echo "seckill:{e$1}:$3"; else echo "seckill:{e$1.$2}:$3"; fi; }
user_of() { sql "select user_id from seckill_order where order_id = $1"; }
home_of() { # home_of EVENT USER: the segment whose buyers hash holds the user
    local k
    for k in 0 1 2; do
        [ "$(rcli HEXISTS "$(seg_key "$1" "$k" buyers)" "$2")" = 1 ] && { echo "$k"; return; }
    done
    echo none
}
seg_sum() { # stock + pending units over the 3 segments, plus held in PostgreSQL
    local s=0 k v
    for k in 0 1 2; do
        v=$(rcli GET "$(seg_key "$1" "$k" stock)"); s=$((s + ${v:-0}))
        s=$((s + $(rcli HLEN "$(seg_key "$1" "$k" pending)")))
    done
    echo $((s + $(sql "select count(*) from seckill_order where event_id = $1 and status in ('created', 'paid')")))
}
for rebuy in false true; do
    EVS=$(make_event 3 900 "$rebuy" 3)
    [ "$(sql "select segments from seckill_event where id = $EVS")" = 3 ] || e2e_fail "segments not stored"
    if [ "$rebuy" = false ]; then t0=8; else t0=12; fi
    OS1=$(buy "$EVS" "${T[$t0]}")
    buy "$EVS" "${T[$((t0 + 1))]}" >/dev/null
    buy "$EVS" "${T[$((t0 + 2))]}" >/dev/null
    expect 409 sold_out POST "/api/v1/events/$EVS/orders" "${T[$((t0 + 3))]}"
    U1=$(user_of "$OS1")
    H=$(home_of "$EVS" "$U1")
    [ "$H" != none ] || e2e_fail "K=3: buyer $U1 in no segment's buyers hash"
    stock_h() { rcli GET "$(seg_key "$EVS" "$H" stock)"; }
    [ "$(stock_h)" = 0 ] || e2e_fail "K=3: home segment $H not empty: $(stock_h)"
    expect 200 cancelled POST "/api/v1/orders/$OS1/cancel" "${T[$t0]}"
    [ "$(stock_h)" = 1 ] || e2e_fail "K=3: the unit is not back in home segment $H: $(stock_h)"
    [ "$(rcli SISMEMBER "$(seg_key "$EVS" "$H" released)" "$OS1")" = 1 ] ||
        e2e_fail "K=3: no release marker for $OS1 in segment $H"
    [ "$(seg_sum "$EVS")" = 3 ] || e2e_fail "K=3 rebuy=$rebuy: sums after the cancel: $(seg_sum "$EVS")"
    if [ "$rebuy" = false ]; then
        [ "$(home_of "$EVS" "$U1")" = "$H" ] || e2e_fail "K=3: the buyer left the buyers hash without rebuy"
        expect 409 duplicate POST "/api/v1/events/$EVS/orders" "${T[$t0]}"
        # another user buys the released unit (from its home, or borrowed from $H)
        buy "$EVS" "${T[$((t0 + 3))]}" >/dev/null
    else
        [ "$(home_of "$EVS" "$U1")" = none ] || e2e_fail "K=3: rebuy on, the buyer is still in a buyers hash"
        buy "$EVS" "${T[$t0]}" >/dev/null
    fi
    expect 409 sold_out POST "/api/v1/events/$EVS/orders" "${T[18]}"
    [ "$(seg_sum "$EVS")" = 3 ] || e2e_fail "K=3 rebuy=$rebuy: sums after the resale: $(seg_sum "$EVS")"
    [ "$(stock_left "$EVS")" = 0 ] || e2e_fail "K=3: stock_left $(stock_left "$EVS")"
    e2e_log "K=3 rebuy=$rebuy: the unit went back to home segment $H and sold again; sums exact"
done

# ---- not_ready: a 202'd order still queued (the consumer is stopped) ------------
e2e_stop_consumer
EVN=$(make_event 1 900 false)
st=$(call POST "/api/v1/events/$EVN/orders" "${T[16]}")
[ "$st" = 202 ] || e2e_fail "order on $EVN: HTTP $st $(body)"
ON=$(sed -n 's/.*"order_id":"\([0-9]*\)".*/\1/p' "$E2E_TMP/resp")
in_pg "$ON" && e2e_fail "$ON reached PostgreSQL with the consumer stopped"
hdr=$(curl -sS -D - -o "$E2E_TMP/resp" -X POST -H "Authorization: Bearer ${T[16]}" \
    -H 'Content-Type: application/json' -d '{"payment_ref":"early"}' "$URL/api/v1/orders/$ON/pay")
printf '%s' "$hdr" | head -n 1 | grep -q ' 409' || e2e_fail "pay of a queued order: $(printf '%s' "$hdr" | head -n 1) $(body)"
grep -q '"error":"not_ready"' "$E2E_TMP/resp" || e2e_fail "pay of a queued order: $(body)"
printf '%s' "$hdr" | grep -qi '^Retry-After: [0-9]' || e2e_fail "no Retry-After on not_ready: $hdr"
expect 409 not_ready POST "/api/v1/orders/$ON/cancel" "${T[16]}"
expect 403 forbidden POST "/api/v1/orders/$ON/pay" "${T[17]}" '{"payment_ref":"x"}'
e2e_start_consumer
e2e_wait 60 "order $ON in PostgreSQL" in_pg "$ON"
[ "$(sql "select status || ' ' || coalesce(payment_ref, '-') || ' ' || (closed_at is null) from seckill_order where order_id = $ON")" = "created - true" ] ||
    e2e_fail "the not_ready calls changed $ON: $(sql "select status, payment_ref, closed_at from seckill_order where order_id = $ON")"
[ "$(stock_left "$EVN")" = 0 ] || e2e_fail "stock_left of $EVN: $(stock_left "$EVN")"
expect 200 paid POST "/api/v1/orders/$ON/pay" "${T[16]}" '{"payment_ref":"early"}'
e2e_log "not_ready: 409 with Retry-After while queued, nothing changed; paid once in PostgreSQL"
e2e_log "PASS"
