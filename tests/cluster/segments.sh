#!/usr/bin/env bash
# cluster: segmented stock (issue 19, 分段库存) on the 3+3 cluster with 2 fronts and 2
# consumers. Events of K = 3 segments whose segments sit on the three masters (events are
# created until one's three hash tags {e<ID>}, {e<ID>.1}, {e<ID>.2} land on three
# masters), each check as in cluster_flashsale (seckill-check: exact stock, one order per
# user, every 202 in PostgreSQL, Redis balanced over the segments):
# 1. a burst of users spread over the segments: exactly the stock is sold;
# 2. every user homed on one segment (seckill-bench --home.segment 0 --home.of 3): the
#    other segments' stock is borrowed, the whole stock is sold, nothing more;
# 3. kill -9 of a segment's master mid-burst (as cluster_failover): its replica takes
#    over, the fronts answer 503 in the gap and recover; PostgreSQL: nothing oversold,
#    nobody with two orders, stock_left + created = stock; seckill-check green unless
#    asynchronous replication lost writes (then only lost/redis_balance may fail).
# The fronts' reconciler reads the consumers' group (SECKILL_RECONCILE_GROUP): without it
# no partition that had traffic ever counts as drained, and a lost segment is never
# reloaded. See tests/cluster/lib.sh.
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib.sh"
cl_start_pipeline SECKILL_RECONCILE_INTERVAL_MS=1000 SECKILL_RECONCILE_MARGIN_MS=1000 SECKILL_RECONCILE_GROUP="seckill-cluster-$$" \
    SECKILL_KAFKA_MESSAGE_TIMEOUT_MS=5000

K=3
# seg_master ID SEG: the port of the master of the segment's slot.
seg_master() { if [ "$2" -eq 0 ]; then cl_master_of_event "$1"; else cl_master_of_event "$1.$2"; fi; }
# create_spread NAME STOCK: an event of K segments on K masters; prints its id.
create_spread() {
    local try id n
    for try in $(seq 1 60); do
        id=$(cl_create_event "$1-$try" "$2" ",\"segments\":$K") && [ -n "$id" ] || return 1
        n=$(for ((k = 0; k < K; k++)); do seg_master "$id" $k; done | sort -u | wc -l)
        [ "$n" -eq $K ] && { echo "$id"; return 0; }
    done
    return 1
}
seg_stock() { if [ "$2" -eq 0 ]; then cl_cli "$(seg_master "$1" 0)" get "seckill:{e$1}:stock"; else cl_cli "$(seg_master "$1" "$2")" get "seckill:{e$1.$2}:stock"; fi; }
status_count() {
    sed -n "s/^ *\"$2[^\"]*\": *\([0-9]*\).*/\1/p" "$1/summary.json" | awk '{ s += $1 } END { print s + 0 }'
}
q() { psql "$SECKILL_PG" -tAc "$1"; }
# ev_left EV: stock_left of GET /api/v1/events/{id} (a user's token).
ev_left() {
    local tok
    tok=$(SECKILL_JWT_SECRET=$CL_SECRET "$BIN/seckill-order" token --sub 5 --ttl 600)
    curl -fsS -H "Authorization: Bearer $tok" "$CL_FRONT/api/v1/events/$1" | sed -n 's/.*"stock_left":\([0-9]*\).*/\1/p'
}
# pg_guards EV STOCK: nothing oversold, nobody twice, stock_left + created = stock.
pg_guards() {
    local created doubled left
    created=$(q "select count(*) from seckill_order where event_id = $1 and status = 'created'")
    doubled=$(q "select count(*) from (select user_id from seckill_order where event_id = $1 group by user_id having count(*) > 1) d")
    left=$(q "select stock_left from seckill_event where id = $1")
    [ "$created" -le "$2" ] || e2e_fail "event $1: PostgreSQL oversold: $created created of $2"
    [ "$doubled" -eq 0 ] || e2e_fail "event $1: $doubled users with two orders"
    [ $((created + left)) -eq "$2" ] || e2e_fail "event $1: stock_left $left + created $created != $2"
    [ "$(q "select segments from seckill_event where id = $1")" -eq $K ] || e2e_fail "event $1: segments column is not $K"
}
# sell EV OUT USERS REQUESTS [bench args...]: one seckill-bench over both fronts.
sell() {
    local ev=$1 out=$2 users=$3 reqs=$4
    shift 4
    SECKILL_JWT_SECRET=$E2E_SECRET "$BIN/seckill-bench" --http "$CL_HTTP" --pg "$SECKILL_PG" \
        --event "$ev" --users "$users" --requests "$reqs" --connections 8 --drain.wait 90 \
        --progress false --out "$out" "$@" >"$out.log" 2>&1
}
# exact EV OUT STOCK REQUESTS: the stock sold exactly, every other answer a 409.
exact() {
    local accepted answered refused k
    accepted=$(cl_summary "$2" accepted)
    answered=$(cl_summary "$2" answered)
    refused=$(($(cl_outcome "$2" "409 sold_out") + $(cl_outcome "$2" "409 duplicate")))
    e2e_log "event $1: $answered answered, $accepted accepted, $refused refused"
    [ "$accepted" -eq "$3" ] || e2e_fail "event $1: $accepted 202s, expected exactly the stock ($3)"
    [ "$answered" -eq "$4" ] || e2e_fail "event $1: answered $answered of $4"
    [ $((accepted + refused)) -eq "$4" ] || e2e_fail "event $1: $(($4 - accepted - refused)) answers were neither 202 nor 409"
    for ((k = 0; k < K; k++)); do
        [ "$(seg_stock "$1" $k)" = 0 ] || e2e_fail "event $1: segment $k still has stock $(seg_stock "$1" $k) after a sold-out burst"
    done
    cl_check "$1" "$2" --wait 90 >"$2.check" 2>&1 || { cat "$2.check" >&2; e2e_fail "seckill-check found a violation for event $1"; }
    sed "s/^/[event $1] /" "$2.check" >&2
    pg_guards "$1" "$3"
}

# phase N: whether phase N runs (SEG_PHASES="1 4" for a quicker look; all by default).
phase() { [[ " ${SEG_PHASES:-1 2 3 4} " == *" $1 "* ]]; }

# 1. users spread over the segments
if phase 1; then
STOCK=900
EV1=$(create_spread spread $STOCK) || e2e_fail "no event with its $K segments on $K masters"
e2e_log "event $EV1: segments on masters $(for ((k = 0; k < K; k++)); do printf '%s ' "$(seg_master "$EV1" $k)"; done)"
sell "$EV1" "$E2E_TMP/out1" 1500 3000 || e2e_fail "seckill-bench failed: $(tail -n 3 "$E2E_TMP/out1.log")"
exact "$EV1" "$E2E_TMP/out1" $STOCK 3000
left1=$(ev_left "$EV1")
[ "$left1" = 0 ] || e2e_fail "GET event $EV1: stock_left '$left1' after the sale"
e2e_log "PASS 1: spread"
fi

# 2. every user homed on segment 0: 100 there, 200 borrowed
if phase 2; then
STOCK2=300
EV2=$(create_spread skew $STOCK2) || e2e_fail "no second event on $K masters"
left2=$(ev_left "$EV2")
[ "$left2" = $STOCK2 ] || e2e_fail "GET event $EV2: stock_left '$left2', not the sum of the segments ($STOCK2)"
sell "$EV2" "$E2E_TMP/out2" 1000 2000 --home.segment 0 --home.of $K ||
    e2e_fail "seckill-bench (skewed) failed: $(tail -n 3 "$E2E_TMP/out2.log")"
exact "$EV2" "$E2E_TMP/out2" $STOCK2 2000
n1=$(cl_cli "$(seg_master "$EV2" 1)" hlen "seckill:{e$EV2.1}:buyers")
[ "$n1" -eq 0 ] || e2e_fail "event $EV2: segment 1 has $n1 buyers although every user is homed on 0"
e2e_log "PASS 2: every user homed on segment 0, all $STOCK2 sold"
fi

# 3. kill -9 of segment 1's master mid-burst (rate-limited, as cluster_failover)
if phase 3; then
STOCK3=1500
EV3=$(create_spread failover $STOCK3) || e2e_fail "no third event on $K masters"
VICTIM=$(seg_master "$EV3" 1)
SECKILL_JWT_SECRET=$E2E_SECRET "$BIN/seckill-bench" --http "$CL_HTTP" --pg "$SECKILL_PG" \
    --event "$EV3" --users 3000 --requests 3000 --rate 150 --connections 8 --drain.wait 90 \
    --progress false --out "$E2E_TMP/out3" >"$E2E_TMP/out3.log" 2>&1 &
bpid=$!
sold1() { echo $((STOCK3 / K - $(cl_cli "$VICTIM" get "seckill:{e$EV3.1}:stock"))); }
sold1_100() { [ "$(sold1)" -ge 100 ]; }
e2e_wait 60 "segment 1 of event $EV3 selling 100" sold1_100
vpid=$(cl_pid_of "$VICTIM")
e2e_log "kill -9 of segment 1's master at port $VICTIM (pid $vpid), $(sold1) sold there"
kill -KILL "$vpid"
moved() { m=$(seg_master "$EV3" 1) && [ "$m" != "$VICTIM" ]; }
e2e_wait 30 "a replica taking over segment 1" moved
wait $bpid || e2e_fail "seckill-bench (failover) failed: $(tail -n 3 "$E2E_TMP/out3.log")"
e2e_log "event $EV3: $(cl_summary "$E2E_TMP/out3" answered) answered, $(cl_summary "$E2E_TMP/out3" accepted) accepted, $(status_count "$E2E_TMP/out3" 503) answered 503"
# recovered by themselves: a burst after the failover is answered without a 503
SECKILL_JWT_SECRET=$E2E_SECRET "$BIN/seckill-bench" --http "$CL_HTTP" --event "$EV3" \
    --users 300 --requests 300 --connections 4 --drain.wait 0 --progress false --seed 7 \
    --out "$E2E_TMP/after3" >"$E2E_TMP/after3.log" 2>&1 || e2e_fail "the burst after the failover failed"
[ "$(status_count "$E2E_TMP/after3" 503)" -eq 0 ] || e2e_fail "503s after the failover: the fronts did not recover"
mkdir -p "$E2E_TMP/v3"
cat "$E2E_TMP/out3/accepted.txt" "$E2E_TMP/after3/accepted.txt" >"$E2E_TMP/v3/accepted.txt"
rc=0
cl_check "$EV3" "$E2E_TMP/v3" --wait 60 >"$E2E_TMP/check3.txt" 2>&1 || rc=$?
sed "s/^/[event $EV3] /" "$E2E_TMP/check3.txt" >&2
pg_guards "$EV3" $STOCK3
if [ $rc -ne 0 ]; then
    bad=$(awk '$1 == "FAIL" { print $2 }' "$E2E_TMP/check3.txt" | grep -v -x -e lost -e redis_balance || true)
    [ -z "$bad" ] || e2e_fail "event $EV3: seckill-check failed beyond what lost replication explains: $bad"
    e2e_log "REPORT event $EV3: asynchronous replication lost acknowledged writes (seckill-check: lost/redis_balance)"
fi
e2e_log "PASS 3: a segment's master killed mid-burst"
fi

# 4. FLUSHALL of one segment's master after half the stock is sold: the reconciler
# rebuilds the segment (stock = stock_left - the other segments' stock and pending units,
# buyers = PostgreSQL's buyers homed there) and the rest of the stock sells exactly,
# nobody twice.
if phase 4; then
STOCK4=600
EV4=$(create_spread flush $STOCK4) || e2e_fail "no fourth event on $K masters"
sell "$EV4" "$E2E_TMP/out4a" 300 300 || e2e_fail "seckill-bench (before the flush) failed: $(tail -n 3 "$E2E_TMP/out4a.log")"
[ "$(cl_summary "$E2E_TMP/out4a" accepted)" -eq 300 ] || e2e_fail "event $EV4: not 300 sold before the flush"
M2=$(seg_master "$EV4" 2)
before2=$(seg_stock "$EV4" 2)
e2e_log "FLUSHALL of segment 2's master at port $M2 (its stock $before2)"
cl_cli "$M2" flushall >/dev/null
reloaded() { [ -n "$(seg_stock "$EV4" 2)" ]; }
e2e_wait 40 "the reconciler reloading segment 2 of event $EV4" reloaded
after2=$(seg_stock "$EV4" 2)
e2e_log "segment 2 reloaded with stock $after2 (it had $before2)"
[ "$after2" -eq "$before2" ] || e2e_fail "event $EV4: segment 2 reloaded with $after2, it had $before2"
# users 1..300 bought already (duplicates now, also those homed on the flushed segment)
sell "$EV4" "$E2E_TMP/out4b" 1200 1200 || e2e_fail "seckill-bench (after the flush) failed: $(tail -n 3 "$E2E_TMP/out4b.log")"
# exactly the rest of the stock, none to a first buyer (PostgreSQL: nobody twice, below)
acc=$(cl_summary "$E2E_TMP/out4b" accepted)
[ "$acc" -eq $((STOCK4 - 300)) ] || e2e_fail "event $EV4: $acc sold after the reload, expected $((STOCK4 - 300))"
e2e_log "after the reload: $acc sold, $(cl_outcome "$E2E_TMP/out4b" "409 duplicate") duplicates"
mkdir -p "$E2E_TMP/v4"
cat "$E2E_TMP/out4a/accepted.txt" "$E2E_TMP/out4b/accepted.txt" >"$E2E_TMP/v4/accepted.txt"
[ "$(wc -l <"$E2E_TMP/v4/accepted.txt")" -eq $STOCK4 ] || e2e_fail "event $EV4: $(wc -l <"$E2E_TMP/v4/accepted.txt") 202s in all, expected $STOCK4"
cl_check "$EV4" "$E2E_TMP/v4" --wait 90 >"$E2E_TMP/check4.txt" 2>&1 || { cat "$E2E_TMP/check4.txt" >&2; e2e_fail "seckill-check found a violation for event $EV4"; }
sed "s/^/[event $EV4] /" "$E2E_TMP/check4.txt" >&2
pg_guards "$EV4" $STOCK4
e2e_log "PASS 4: FLUSHALL of a segment's master and the reload"
fi
e2e_log "PASS"
