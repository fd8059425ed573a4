#!/usr/bin/env bash
# e2e: several units per order (issue 31) through two seckill-order instances on one
# Redis, one devkafka and one seckill-consumer. An event of 400 units, per_user_limit 4;
# seckill-bench sends 6,000 orders from 300 users over 64 connections spread over both
# fronts, each asking a random quantity of 1 to 4. Then:
#   - every answer is 202, 409 sold_out (nothing or fewer units left) or 409
#     limit_reached (the user's units would pass 4): nothing else;
#   - orders of several units were taken, and PostgreSQL holds at most the stock in units;
#   - seckill-check (in units): no oversell in PostgreSQL or Redis, no user over 4 units,
#     stock_left and the Redis balance agree, no lost order;
#   - a cancel of an order of q units gives back q units, in PostgreSQL and in Redis;
#   - the gate's keys lost, the reconciler's reload rebuilds the units per user from
#     PostgreSQL, and a user holding 4 units is refused (409 limit_reached);
#   - on an event of 3 segments, the same load: seckill-check clean in units.
. "$(dirname "$0")/lib.sh"
e2e_require
command -v psql >/dev/null && command -v redis-cli >/dev/null || e2e_skip "psql or redis-cli missing"
e2e_start_kafka
e2e_start_consumer
e2e_start_order
PORT_A=$E2E_HTTP_PORT
PORT_B=$(e2e_free_port)
SECKILL_HTTP_PORT=$PORT_B SECKILL_HTTP_BIND=127.0.0.1 SECKILL_KAFKA_BROKERS=$E2E_BROKERS SECKILL_GROUP_ID="seckill-e2e-$$" \
    SECKILL_JWT_SECRET=$E2E_SECRET "$BIN/seckill-order" >"$E2E_TMP/order_b.log" 2>&1 &
E2E_PIDS+=($!)
e2e_wait 60 "second seckill-order /readyz" curl -fsS "http://127.0.0.1:$PORT_B/readyz"

STOCK=400
e2e_bench --http "http://127.0.0.1:$PORT_A,http://127.0.0.1:$PORT_B" --stock $STOCK \
    --users 300 --requests 6000 --connections 64 --quantity 4 --drain.wait 90 \
    --event.name e2e-units || e2e_fail "seckill-bench failed"
cat "$E2E_TMP/out/summary.json" >&2
EV=$(cat "$E2E_TMP/out/event_id")

accepted=$(e2e_summary accepted)
answered=$(e2e_summary answered)
[ "$answered" -eq 6000 ] || e2e_fail "answered $answered of 6000"
sold_out=$(e2e_outcome "409 sold_out")
limit=$(e2e_outcome "409 limit_reached")
[ $((accepted + sold_out + limit)) -eq 6000 ] ||
    e2e_fail "$((6000 - accepted - sold_out - limit)) answers were neither 202 nor 409 sold_out/limit_reached"
[ "$limit" -gt 0 ] || e2e_fail "no 409 limit_reached: users were not held to 4 units"
[ "$sold_out" -gt 0 ] || e2e_fail "no 409 sold_out: the stock did not run out"
[ "$(sql "select per_user_limit from seckill_event where id = $EV")" = 4 ] ||
    e2e_fail "the event's per_user_limit is not 4"

e2e_check --wait 90 || e2e_fail "seckill-check found a violation"

units=$(sql "select coalesce(sum(quantity), 0) from seckill_order where event_id = $EV and status in ('created', 'paid')")
multi=$(sql "select count(*) from seckill_order where event_id = $EV and quantity > 1")
over=$(sql "select count(*) from (select user_id from seckill_order where event_id = $EV and status in ('created', 'paid') group by user_id having sum(quantity) > 4) u")
e2e_log "accepted $accepted orders holding $units units of $STOCK ($multi of several units)"
[ "$units" -le $STOCK ] || e2e_fail "oversold: $units units held of $STOCK"
[ "$multi" -gt 0 ] || e2e_fail "no order of several units was taken"
[ "$over" -eq 0 ] || e2e_fail "$over users hold more than 4 units"
[ "$units" -ge $((STOCK - 3)) ] ||
    e2e_fail "only $units of $STOCK units sold: more than a last order's worth went unsold"

# A cancel gives back the order's units, in PostgreSQL and in Redis (release.lua).
read -r OID OUSER Q < <(sql "select order_id, user_id, quantity from seckill_order where event_id = $EV and status = 'created' and quantity > 1 order by order_id limit 1" | tr '|' ' ')
left0=$(sql "select stock_left from seckill_event where id = $EV")
r0=$(rcli GET "seckill:{e$EV}:stock")
st=$(curl -sS -o "$E2E_TMP/resp" -w '%{http_code}' -X POST -H "Authorization: Bearer $(token "$OUSER")" \
    "http://127.0.0.1:$PORT_B/api/v1/orders/$OID/cancel")
[ "$st" = 200 ] || e2e_fail "cancel of order $OID: HTTP $st $(cat "$E2E_TMP/resp")"
left1=$(sql "select stock_left from seckill_event where id = $EV")
[ "$left1" -eq $((left0 + Q)) ] || e2e_fail "stock_left $left0 -> $left1 after cancelling $Q units"
e2e_wait 10 "the $Q units back in Redis" \
    bash -c "[ \"\$(redis-cli -u '$SECKILL_REDIS_URL' --no-auth-warning GET 'seckill:{e$EV}:stock')\" = $((r0 + Q)) ]"
e2e_log "cancel of $Q units: stock_left $left0 -> $left1, Redis $r0 -> $((r0 + Q))"

# The gate lost (its keys deleted): the reconciler rebuilds it from PostgreSQL, the units
# hash included (a closed order's units stay counted: the event keeps its buyers out).
K="seckill:{e$EV}"
rcli DEL "$K:stock" "$K:buyers" "$K:meta" "$K:pending" "$K:released" "$K:units" >/dev/null
e2e_wait 60 "the gate rebuilt by the reconciler" \
    bash -c "[ \"\$(redis-cli -u '$SECKILL_REDIS_URL' --no-auth-warning EXISTS '$K:stock')\" = 1 ]"
want=$(sql "select string_agg(user_id || ':' || s, ' ' order by user_id) from (select user_id, sum(quantity) s from seckill_order where event_id = $EV and status <> 'rejected' group by user_id) t")
got=$(rcli HGETALL "$K:units" | paste -d: - - | sort -n | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "$want" ] || e2e_fail "units hash after the reload: [$got], PostgreSQL says [$want]"
[ "$(rcli GET "$K:stock")" = "$left1" ] || e2e_fail "stock after the reload $(rcli GET "$K:stock"), stock_left $left1"
FULL=$(sql "select user_id from seckill_order where event_id = $EV and status <> 'rejected' group by user_id having sum(quantity) = 4 limit 1")
if [ -n "$FULL" ]; then
    st=$(curl -sS -o "$E2E_TMP/resp" -w '%{http_code}' -X POST -H "Authorization: Bearer $(token "$FULL")" \
        -H 'Content-Type: application/json' -d '{"quantity":1}' "http://127.0.0.1:$PORT_A/api/v1/events/$EV/orders")
    [ "$st" = 409 ] && grep -q '"limit_reached"' "$E2E_TMP/resp" && grep -q '"held":4' "$E2E_TMP/resp" ||
        e2e_fail "user $FULL (4 units) after the reload: HTTP $st $(cat "$E2E_TMP/resp")"
fi
e2e_log "reload: the units hash rebuilt from PostgreSQL ($(rcli HLEN "$K:units") users), a full user refused"

# Segmented stock (issue 19): an order's units come from its home segment or all from one
# other segment (borrow.lua). 90 units over 3 segments, 1,500 orders of 1 to 4 units.
ADMIN=$(token 1 --admin)
starts=$(date -u -d '-1 minute' +%Y-%m-%dT%H:%M:%SZ)
ends=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
EVS=$(curl -fsS -X POST -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
    -d "{\"name\":\"e2e units K3\",\"stock\":90,\"starts_at\":\"$starts\",\"ends_at\":\"$ends\",\"segments\":3,\"per_user_limit\":4}" \
    "http://127.0.0.1:$PORT_A/api/v1/events" | sed -n 's/.*"event_id":"\([0-9]*\)".*/\1/p')
[ -n "$EVS" ] || e2e_fail "the segmented event was not created"
e2e_bench --http "http://127.0.0.1:$PORT_A,http://127.0.0.1:$PORT_B" --event "$EVS" \
    --users 100 --requests 1500 --connections 64 --quantity 4 --drain.wait 90 \
    --out "$E2E_TMP/out3" || e2e_fail "seckill-bench (segments) failed"
others=$(( 1500 - $(sk_json_num "$E2E_TMP/out3/summary.json" accepted) \
    - $(sk_json_count "$E2E_TMP/out3/summary.json" "409 sold_out") \
    - $(sk_json_count "$E2E_TMP/out3/summary.json" "409 limit_reached") ))
[ "$others" -eq 0 ] || e2e_fail "segments: $others answers were neither 202 nor 409 sold_out/limit_reached"
SECKILL_KAFKA_BROKERS=$E2E_BROKERS "$BIN/seckill-check" --redis.url "$SECKILL_REDIS_URL" \
    --pg "$SECKILL_PG" --wait 90 "$EVS" "$E2E_TMP/out3/accepted.txt" ||
    e2e_fail "seckill-check found a violation on the segmented event"
units=$(sql "select coalesce(sum(quantity), 0) from seckill_order where event_id = $EVS and status in ('created', 'paid')")
e2e_log "segments: $units of 90 units sold, seckill-check clean"
e2e_log "PASS"
