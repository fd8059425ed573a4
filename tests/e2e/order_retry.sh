#!/usr/bin/env bash
# e2e (issue 31): retries that find their order, through one front and one consumer.
#   1. The train case without a key: the order is sent on a socket cut before the 202 is
#      read; the retry is 409 duplicate naming the order the gate holds (order_id and
#      status), GET /api/v1/orders lists it, the buyer pays it; a later retry names it
#      paid.
#   2. The train case with an Idempotency-Key: the retry with the key is the first 202
#      again (same order id, Idempotent-Replayed), or 409 in_progress while undecided;
#      the key for another request is 422 key_reused; pay with a key twice is the same
#      200, and the key reused for cancel is 422; the order is paid.
#   3. Bad keys (empty, over 255 characters, a control character) and quantities (0,
#      negative, not an integer, over the bound or the event's limit): 400 naming the
#      header or the field, nothing reserved.
#   4. The list: one event or all, paginated, another user's orders never shown.
. "$(dirname "$0")/lib.sh"
e2e_require
command -v redis-cli >/dev/null || e2e_skip "redis-cli not installed"
e2e_start_kafka
e2e_start_consumer
e2e_start_order
URL="http://127.0.0.1:$E2E_HTTP_PORT"

# call METHOD PATH TOKEN [BODY [KEY]]: prints the status; the body lands in $E2E_TMP/resp,
# the head in $E2E_TMP/head.
call() {
    local args=(-sS -D "$E2E_TMP/head" -o "$E2E_TMP/resp" -w '%{http_code}' -X "$1")
    [ -n "$3" ] && args+=(-H "Authorization: Bearer $3")
    [ $# -ge 4 ] && args+=(-H 'Content-Type: application/json' -d "$4")
    if [ $# -ge 5 ]; then # (curl sends an empty header given as "Name;")
        if [ -n "$5" ]; then args+=(-H "Idempotency-Key: $5"); else args+=(-H "Idempotency-Key;"); fi
    fi
    curl "${args[@]}" "$URL$2"
}
body() { cat "$E2E_TMP/resp"; }
field() { sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p" "$E2E_TMP/resp"; }
# cut TOKEN PATH BODY [KEY]: sends a POST and closes the socket without reading a byte.
cut() {
    local key=
    [ -n "${4:-}" ] && key="Idempotency-Key: $4"$'\r\n'
    exec 3<>"/dev/tcp/127.0.0.1/$E2E_HTTP_PORT"
    printf 'POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s' \
        "$2" "$1" "$key" "${#3}" "$3" >&3
    exec 3>&-
}

ADMIN=$(token 1 --admin)
make_event() { # make_event STOCK: prints the event id
    local starts ends resp
    starts=$(date -u -d '-1 minute' +%Y-%m-%dT%H:%M:%SZ)
    ends=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
    resp=$(curl -fsS -X POST -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
        -d "{\"name\":\"e2e retry\",\"stock\":$1,\"starts_at\":\"$starts\",\"ends_at\":\"$ends\",\"payment_window_s\":900}" \
        "$URL/api/v1/events") || e2e_fail "create event"
    printf '%s' "$resp" | sed -n 's/.*"event_id":"\([0-9]*\)".*/\1/p'
}
held() { rcli HGET "seckill:{e$1}:buyers" "$2"; } # held EVENT USER: the order the gate holds
has_held() { [ -n "$(held "$1" "$2")" ]; }
in_pg() { [ "$(sql "select status from seckill_order where order_id = $1")" = created ]; }
stock() { rcli GET "seckill:{e$1}:stock"; }

USER0=$(( $(date +%s) * 1000 + 700000 ))
mapfile -t T < <(token "$USER0" --count 6 --ttl 600)
EV=$(make_event 4)
EV2=$(make_event 4)
[ -n "$EV" ] && [ -n "$EV2" ] || e2e_fail "no event id"
P="/api/v1/events/$EV/orders"

# ---- 1. the train case without a key ---------------------------------------------
cut "${T[0]}" "$P" '{}'
e2e_wait 20 "the cut order reached the gate" has_held "$EV" "$USER0"
O1=$(held "$EV" "$USER0")
st=$(call POST "$P" "${T[0]}" '{}')
[ "$st" = 409 ] || e2e_fail "retry without a key: HTTP $st, expected 409: $(body)"
[ "$(field error)" = duplicate ] || e2e_fail "retry: not a duplicate: $(body)"
[ "$(field order_id)" = "$O1" ] || e2e_fail "retry names $(field order_id), the gate holds $O1: $(body)"
case "$(field status)" in queued | created) ;; *) e2e_fail "retry: status $(field status): $(body)" ;; esac
e2e_wait 60 "order $O1 in PostgreSQL" in_pg "$O1"
st=$(call GET "/api/v1/orders?event_id=$EV" "${T[0]}")
[ "$st" = 200 ] || e2e_fail "list: HTTP $st $(body)"
grep -q "\"order_id\":\"$O1\",\"event_id\":\"$EV\"" "$E2E_TMP/resp" || e2e_fail "list without $O1: $(body)"
st=$(call POST "/api/v1/orders/$O1/pay" "${T[0]}" '{"payment_ref":"train-1"}')
[ "$st" = 200 ] || e2e_fail "pay $O1: HTTP $st $(body)"
st=$(call POST "$P" "${T[0]}" '{}')
[ "$st" = 409 ] && [ "$(field order_id)" = "$O1" ] && [ "$(field status)" = paid ] ||
    e2e_fail "a retry after the payment: HTTP $st $(body)"
e2e_log "train case without a key: 409 names $O1, paid"

# ---- 2. the train case with a key --------------------------------------------------
U1=$((USER0 + 1))
KEY="train-$USER0-a"
cut "${T[1]}" "$P" '{}' "$KEY"
e2e_wait 20 "the keyed cut order reached the gate" has_held "$EV" "$U1"
O2=$(held "$EV" "$U1")
replayed() {
    st=$(call POST "$P" "${T[1]}" '{}' "$KEY")
    [ "$st" = 202 ] && return 0
    [ "$st" = 409 ] && [ "$(field error)" = in_progress ] && return 1
    e2e_fail "retry with the key: HTTP $st $(body)"
}
e2e_wait 20 "the key's first answer" replayed
[ "$(field order_id)" = "$O2" ] || e2e_fail "the replay names $(field order_id), the gate holds $O2"
grep -qi '^Idempotent-Replayed: true' "$E2E_TMP/head" || e2e_fail "no Idempotent-Replayed header"
st=$(call POST "$P" "${T[1]}" '{}' "$KEY") # and again: the same first answer
[ "$st" = 202 ] && [ "$(field order_id)" = "$O2" ] || e2e_fail "second replay: HTTP $st $(body)"
# the key for another request (another event): refused, nothing reserved there
s0=$(stock "$EV2")
st=$(call POST "/api/v1/events/$EV2/orders" "${T[1]}" '{}' "$KEY")
[ "$st" = 422 ] && [ "$(field error)" = key_reused ] || e2e_fail "key reused: HTTP $st $(body)"
[ "$(stock "$EV2")" = "$s0" ] || e2e_fail "a refused key took stock"
e2e_wait 60 "order $O2 in PostgreSQL" in_pg "$O2"
PK="pay-$USER0"
st=$(call POST "/api/v1/orders/$O2/pay" "${T[1]}" '{"payment_ref":"train-2"}' "$PK")
[ "$st" = 200 ] && [ "$(field status)" = paid ] || e2e_fail "keyed pay: HTTP $st $(body)"
st=$(call POST "/api/v1/orders/$O2/pay" "${T[1]}" '{"payment_ref":"train-2"}' "$PK")
[ "$st" = 200 ] && grep -qi '^Idempotent-Replayed: true' "$E2E_TMP/head" || e2e_fail "pay replay: HTTP $st $(body)"
st=$(call POST "/api/v1/orders/$O2/cancel" "${T[1]}" '{}' "$PK")
[ "$st" = 422 ] || e2e_fail "the pay key reused for cancel: HTTP $st $(body)"
[ "$(sql "select status from seckill_order where order_id = $O2")" = paid ] || e2e_fail "$O2 not paid"
e2e_log "train case with a key: 202 replayed for $O2, 422 for another request, paid"

# ---- 3. bad keys: 400 naming the header, nothing reserved --------------------------
U2=$((USER0 + 2))
s0=$(stock "$EV")
long=$(printf 'k%.0s' $(seq 256))
for k in "" "$long" $'a\tb'; do
    st=$(call POST "$P" "${T[2]}" '{}' "$k")
    [ "$st" = 400 ] && grep -q 'Idempotency-Key' "$E2E_TMP/resp" || e2e_fail "bad key (${#k} chars): HTTP $st $(body)"
done
# other control characters never reach the route: the header parser refuses them (400)
st=$(call POST "$P" "${T[2]}" '{}' $'a\x01b')
[ "$st" = 400 ] || e2e_fail "a key with a \\x01: HTTP $st $(body)"
# bad quantities: 0, negative, not an integer, past the bound, over the event's limit (1)
for q in 0 -1 1.5 '"2"' 101 2; do
    st=$(call POST "$P" "${T[2]}" "{\"quantity\":$q}")
    [ "$st" = 400 ] && grep -q 'quantity' "$E2E_TMP/resp" || e2e_fail "quantity $q: HTTP $st $(body)"
done
[ "$(stock "$EV")" = "$s0" ] && ! has_held "$EV" "$U2" || e2e_fail "a bad key or quantity reserved something"

# ---- 4. the list: all events, pages, only the token's -------------------------------
st=$(call POST "/api/v1/events/$EV2/orders" "${T[0]}" '{}')
[ "$st" = 202 ] || e2e_fail "second event: HTTP $st $(body)"
O3=$(field order_id)
listed() {
    st=$(call GET "/api/v1/orders" "${T[0]}")
    [ "$st" = 200 ] && return 0
    [ "$st" = 503 ] && return 1 # the event list loading
    e2e_fail "list all: HTTP $st $(body)"
}
e2e_wait 10 "the list of all events" listed
grep -q "\"order_id\":\"$O1\"" "$E2E_TMP/resp" && grep -q "\"order_id\":\"$O3\"" "$E2E_TMP/resp" ||
    e2e_fail "list all without $O1 and $O3: $(body)"
grep -q "\"order_id\":\"$O2\"" "$E2E_TMP/resp" && e2e_fail "another user's order listed: $(body)"
st=$(call GET "/api/v1/orders?limit=1" "${T[0]}")
[ "$st" = 200 ] && [ "$(grep -o '"order_id"' "$E2E_TMP/resp" | wc -l)" = 1 ] &&
    grep -q '"next_offset":1' "$E2E_TMP/resp" || e2e_fail "page of 1: HTTP $st $(body)"
st=$(call GET "/api/v1/orders?offset=1&limit=1" "${T[0]}")
[ "$st" = 200 ] && grep -q '"next_offset":null' "$E2E_TMP/resp" || e2e_fail "page 2: HTTP $st $(body)"
for q in "event_id=x" "limit=0" "offset=-1" "limit=101"; do
    st=$(call GET "/api/v1/orders?$q" "${T[0]}")
    [ "$st" = 400 ] || e2e_fail "list ?$q: HTTP $st, expected 400"
done
st=$(call GET "/api/v1/orders?event_id=$EV" "${T[3]}")
[ "$st" = 200 ] && grep -q '"orders":\[\]' "$E2E_TMP/resp" || e2e_fail "a user without orders: HTTP $st $(body)"
e2e_log "list: one event, all, pages, 400s"
e2e_log "PASS"
