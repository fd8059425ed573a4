#!/usr/bin/env bash
# e2e: expiry with two consumers and two fronts, kill -9 of one of each in the middle,
# and payments racing the expiry (issue 22).
#   1. 120 buyers through both fronts on an event of 100 units with an 8 s window; all
#      100 orders in PostgreSQL. 20 are cancelled (front B).
#   2. Consumer B and front B are killed with SIGKILL while the windows run.
#   3. 40 orders are given one common end of window (pay_by moved 1.5 s ahead), and their
#      payments sent through front A from 300 ms before it, racing consumer A's expiry and
#      each other's; every other unpaid order must expire within its window + 5 s.
#   4. Exactly one outcome per order: each 200 paid is paid in PostgreSQL with its
#      reference, each 409 closed is expired; stock_left = stock_total - paid; every
#      closed order released once (released_at, the released set), and the gate holds
#      stock_left units with nothing pending.
#   5. A second wave of new buyers takes exactly the released units, then sold out;
#      seckill-check judges both waves (its issue-22 lines included).
. "$(dirname "$0")/lib.sh"
e2e_require
command -v redis-cli >/dev/null || e2e_skip "redis-cli not installed"
e2e_start_kafka
e2e_start_consumer
CONS_A=$E2E_CONSUMER_PID
E2E_CONSUMER_PORT=$(e2e_free_port) e2e_start_consumer
CONS_B=$E2E_CONSUMER_PID
e2e_start_order
PORT_A=$E2E_HTTP_PORT
PORT_B=$(e2e_free_port)
SECKILL_HTTP_PORT=$PORT_B SECKILL_HTTP_BIND=127.0.0.1 SECKILL_KAFKA_BROKERS=$E2E_BROKERS \
    SECKILL_JWT_SECRET=$E2E_SECRET "$BIN/seckill-order" >"$E2E_TMP/order_b.log" 2>&1 &
FRONT_B=$!
E2E_PIDS+=($FRONT_B)
e2e_wait 60 "second seckill-order /readyz" curl -fsS "http://127.0.0.1:$PORT_B/readyz"
e2e_warmup


STOCK=100 BUYERS=120 WINDOW=8
ADMIN=$(token 1 --admin)
starts=$(date -u -d '-1 minute' +%Y-%m-%dT%H:%M:%SZ)
ends=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
resp=$(curl -fsS -X POST -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
    -d "{\"name\":\"e2e expiry\",\"stock\":$STOCK,\"starts_at\":\"$starts\",\"ends_at\":\"$ends\",\"payment_window_s\":$WINDOW}" \
    "http://127.0.0.1:$PORT_A/api/v1/events") || e2e_fail "create event"
EV=$(printf '%s' "$resp" | sed -n 's/.*"event_id":"\([0-9]*\)".*/\1/p')
[ -n "$EV" ] || e2e_fail "no event id in $resp"
K="seckill:{e$EV}"
USER0=$(( $(date +%s) * 1000 + 700000 ))
mapfile -t TOKS < <(token "$USER0" --count $((BUYERS + STOCK + 10)) --ttl 600)

# 1. The first wave, both fronts, 8 at a time: w1/<i> the body, w1/<i>.st the status.
mkdir -p "$E2E_TMP/w1"
printf '%s\n' "${TOKS[@]}" >"$E2E_TMP/toks"
export E2E_TMP EV PORT_A PORT_B
seq 0 $((BUYERS - 1)) | xargs -P 8 -I{} bash -c '
    i={}; port=$PORT_A; [ $((i % 2)) -eq 1 ] && port=$PORT_B
    tok=$(sed -n "$((i + 1))p" "$E2E_TMP/toks")
    curl -sS -o "$E2E_TMP/w1/$i" -w "%{http_code}" -X POST -H "Authorization: Bearer $tok" \
        "http://127.0.0.1:$port/api/v1/events/$EV/orders" >"$E2E_TMP/w1/$i.st"'
: >"$E2E_TMP/orders"
for i in $(seq 0 $((BUYERS - 1))); do
    st=$(cat "$E2E_TMP/w1/$i.st")
    if [ "$st" = 202 ]; then
        echo "$i $(sed -n 's/.*"order_id":"\([0-9]*\)".*/\1/p' "$E2E_TMP/w1/$i")" >>"$E2E_TMP/orders"
    fi
done
n202=$(wc -l <"$E2E_TMP/orders")
[ "$n202" -eq $STOCK ] || e2e_fail "first wave: $n202 accepted, expected $STOCK"
all_in_pg() { [ "$(sql "select count(*) from seckill_order where event_id = $EV")" -eq $STOCK ]; }
e2e_wait 60 "the first wave in PostgreSQL" all_in_pg
e2e_log "first wave: $STOCK orders in PostgreSQL"

# Cancel 20 through front B.
mapfile -t ROWS <"$E2E_TMP/orders"
for k in $(seq 0 19); do
    read -r i oid <<<"${ROWS[$k]}"
    st=$(curl -sS -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer ${TOKS[$i]}" \
        "http://127.0.0.1:$PORT_B/api/v1/orders/$oid/cancel")
    [ "$st" = 200 ] || e2e_fail "cancel $oid: HTTP $st"
done
e2e_log "20 cancelled"

# 2. kill -9 of consumer B and front B while the windows run.
kill -KILL "$CONS_B" "$FRONT_B"
wait "$CONS_B" "$FRONT_B" 2>/dev/null || true
e2e_log "consumer B and front B killed (SIGKILL)"

# 3. 40 payments racing the expiry at one common end of window.
race_ids=$(for k in $(seq 20 59); do read -r _ oid <<<"${ROWS[$k]}"; printf '%s,' "$oid"; done)
first_ms=$(sql "update seckill_order set pay_by = now() + interval '1500 milliseconds' where order_id in (${race_ids%,}) returning (extract(epoch from pay_by) * 1000)::bigint" | head -n 1)
near_end() { [ "$(date +%s%3N)" -ge $((first_ms - 300)) ]; }
e2e_wait 30 "the end of the race's window" near_end
mkdir -p "$E2E_TMP/pay"
PAYS=()
for k in $(seq 20 59); do
    read -r i oid <<<"${ROWS[$k]}"
    curl -sS -o "$E2E_TMP/pay/$oid" -w '%{http_code}' -X POST -H "Authorization: Bearer ${TOKS[$i]}" \
        -H 'Content-Type: application/json' -d "{\"payment_ref\":\"p-$oid\"}" \
        "http://127.0.0.1:$PORT_A/api/v1/orders/$oid/pay" >"$E2E_TMP/pay/$oid.st" &
    PAYS+=($!)
done
wait "${PAYS[@]}"
last_ms=$(sql "select (extract(epoch from max(pay_by)) * 1000)::bigint from seckill_order where event_id = $EV")
none_created() { [ "$(sql "select count(*) from seckill_order where event_id = $EV and status = 'created'")" = 0 ]; }
e2e_wait 30 "no created order left" none_created
done_ms=$(date +%s%3N)
[ $((done_ms - last_ms)) -le 5000 ] || e2e_fail "the last order expired $((done_ms - last_ms)) ms after its window"
e2e_log "every unpaid order expired, the last $((done_ms - last_ms)) ms after its window"

# 4. One outcome per order, and the payments' answers agree with it.
paid200=0 closed409=0
for k in $(seq 20 59); do
    read -r i oid <<<"${ROWS[$k]}"
    st=$(cat "$E2E_TMP/pay/$oid.st")
    row=$(sql "select status || ' ' || coalesce(payment_ref, '-') from seckill_order where order_id = $oid")
    case "$st" in
    200) [ "$row" = "paid p-$oid" ] || e2e_fail "pay of $oid said 200, the row says $row"; paid200=$((paid200 + 1)) ;;
    409) grep -q '"error":"closed"' "$E2E_TMP/pay/$oid" && [ "$row" = "expired -" ] ||
             e2e_fail "pay of $oid said 409 $(cat "$E2E_TMP/pay/$oid"), the row says $row"
         closed409=$((closed409 + 1)) ;;
    *) e2e_fail "pay of $oid: HTTP $st $(cat "$E2E_TMP/pay/$oid")" ;;
    esac
done
e2e_log "the race: $paid200 paid, $closed409 refused as expired (each agrees with PostgreSQL)"
counts=$(sql "select count(*) filter (where status = 'paid') || ' ' || count(*) filter (where status = 'cancelled') || ' ' || count(*) filter (where status = 'expired') || ' ' || count(*) from seckill_order where event_id = $EV")
read -r np nc ne nall <<<"$counts"
[ "$nc" = 20 ] && [ "$np" = "$paid200" ] && [ $((np + nc + ne)) = "$nall" ] && [ "$nall" = $STOCK ] ||
    e2e_fail "outcomes: paid $np cancelled $nc expired $ne of $nall"
left=$(sql "select stock_left from seckill_event where id = $EV")
[ "$left" = $((STOCK - np)) ] || e2e_fail "stock_left $left, expected $((STOCK - np))"
all_released() { [ "$(sql "select count(*) from seckill_order where event_id = $EV and status in ('cancelled','expired') and released_at is null")" = 0 ]; }
e2e_wait 15 "every closed order released" all_released
[ "$(rcli SCARD "$K:released")" = $((nc + ne)) ] || e2e_fail "released set: $(rcli SCARD "$K:released"), expected $((nc + ne))"
[ "$(rcli HLEN "$K:pending")" = 0 ] || e2e_fail "pending reservations left"
[ "$(rcli GET "$K:stock")" = "$left" ] || e2e_fail "gate $(rcli GET "$K:stock"), stock_left $left"
e2e_log "held $np + stock_left $left = $STOCK; gate $left; $((nc + ne)) released once each"

# 5. The second wave takes exactly the released units.
sold=0
mkdir -p "$E2E_TMP/out"
echo "$EV" >"$E2E_TMP/out/event_id"
cut -d' ' -f2 "$E2E_TMP/orders" >"$E2E_TMP/out/accepted.txt"
for j in $(seq $BUYERS $((BUYERS + left + 4))); do
    st=$(curl -sS -o "$E2E_TMP/w2" -w '%{http_code}' -X POST -H "Authorization: Bearer ${TOKS[$j]}" \
        "http://127.0.0.1:$PORT_A/api/v1/events/$EV/orders")
    case "$st" in
    202) sold=$((sold + 1)) # (the body has no final newline: sed would not add one)
         printf '%s\n' "$(sed -n 's/.*"order_id":"\([0-9]*\)".*/\1/p' "$E2E_TMP/w2")" >>"$E2E_TMP/out/accepted.txt" ;;
    409) ;;
    *) e2e_fail "second wave: HTTP $st" ;;
    esac
done
[ "$sold" = "$left" ] || e2e_fail "second wave sold $sold, expected $left"
held() { [ "$(sql "select count(*) from seckill_order where event_id = $EV and status in ('created','paid')")" = $STOCK ]; }
e2e_wait 60 "the second wave in PostgreSQL" held
[ "$(sql "select stock_left from seckill_event where id = $EV")" = 0 ] || e2e_fail "stock_left after the second wave"
e2e_log "second wave: $sold released units sold again, stock 0 everywhere"
# seckill-check judges the whole sale, both waves: held + stock_left = stock_total in
# PostgreSQL, Redis stock + pending + held = stock_total, every release once.
e2e_check >"$E2E_TMP/check.txt" 2>&1 || e2e_fail "seckill-check: $(cat "$E2E_TMP/check.txt")"
grep -q '^ok   releases' "$E2E_TMP/check.txt" || e2e_fail "no releases line: $(cat "$E2E_TMP/check.txt")"
e2e_log "seckill-check: $(tail -n 1 "$E2E_TMP/check.txt")"
e2e_log "PASS"
