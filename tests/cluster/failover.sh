#!/usr/bin/env bash
# cluster: a master killed (SIGKILL) during the burst (issue 8). 3 events of 1,000 stock,
# one on each master, 2 fronts, 2 consumers, a rate-limited burst per event; when the
# first event has sold about 200, its master is killed. Its replica takes over (node
# timeout 1.5 s); the fronts answer 503 for that event during the gap, or hold its orders
# until the new master answers, and recover by themselves (no restart): a burst after
# the failover is answered without a 503.
# Afterwards seckill-check must be green for the other events; for the killed master's
# event it is green too unless Redis's asynchronous replication lost acknowledged
# writes, in which case the test reports what was lost (reservations the new master
# never saw, 202s the consumer had to record as 'rejected') and checks that PostgreSQL
# still holds no oversold and no doubled order. See tests/cluster/lib.sh.
#
# `failover.sh lose` (cluster_failover_lost) makes that loss certain instead of rare: the
# killed master's replica is stopped (SIGSTOP) and its replication link cut (CLIENT KILL
# TYPE replica) just before, the master acknowledges 50 more reservations that never
# leave it, then dies and the replica resumes and is promoted without them. There the
# loss must be reported, and PostgreSQL's guards must hold.
MODE=${1:-plain}
# With writes lost the drain never completes (some 202s never become rows): wait less.
DRAIN=90 VICTIM_WAIT=60
[ "$MODE" = lose ] && DRAIN=20 VICTIM_WAIT=10
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib.sh"
# A quick reconciler, so that reservations whose 202 never went out (503 answers in
# the gap) are given back within the test's wait.
cl_start_pipeline SECKILL_RECONCILE_INTERVAL_MS=1000 SECKILL_RECONCILE_MARGIN_MS=1000 \
    SECKILL_KAFKA_MESSAGE_TIMEOUT_MS=5000

STOCK=1000
cl_create_events_on_masters 3 $STOCK || e2e_fail "no event on every master"
cl_log_events
VICTIM_EV=${CL_EVENTS[0]}
VICTIM=${CL_EVENT_MASTER[$VICTIM_EV]}

# status_count DIR STATUS: answers of that HTTP status, every code summed.
status_count() {
    sed -n "s/^ *\"$2[^\"]*\": *\([0-9]*\).*/\1/p" "$1/summary.json" | awk '{ s += $1 } END { print s + 0 }'
}

pids=()
for ev in "${CL_EVENTS[@]}"; do
    SECKILL_JWT_SECRET=$E2E_SECRET "$BIN/seckill-bench" --http "$CL_HTTP" --pg "$SECKILL_PG" \
        --event "$ev" --users 2000 --requests 2400 --rate 150 --connections 8 --drain.wait $DRAIN \
        --progress false --out "$E2E_TMP/out-$ev" >"$E2E_TMP/bench-$ev.log" 2>&1 &
    pids+=($!)
done

sold() { echo $((STOCK - $(cl_cli "$VICTIM" get "seckill:{e$VICTIM_EV}:stock"))); }
sold_200() { [ "$(sold)" -ge 200 ]; }
e2e_wait 60 "event $VICTIM_EV selling its first 200" sold_200
victim_pid=$(cl_pid_of "$VICTIM")
if [ "$MODE" = lose ]; then
    rport=$(cl_cli "$VICTIM" info replication | sed -n 's/^slave0:.*port=\([0-9]*\).*/\1/p')
    rpid=$(cl_pid_of "$rport")
    [ -n "$rpid" ] || e2e_fail "no replica of the master at port $VICTIM"
    kill -STOP "$rpid"
    cl_cli "$VICTIM" client kill type replica >/dev/null
    s0=$(sold)
    sold_50_more() { [ "$(sold)" -ge $((s0 + 50)) ]; }
    e2e_wait 30 "50 reservations the replica never gets" sold_50_more
    e2e_log "replica at port $rport stopped and cut off while $(( $(sold) - s0 )) reservations were made"
fi
e2e_log "kill -9 of the master at port $VICTIM (pid $victim_pid), $(sold) sold so far"
kill -KILL "$victim_pid"
t_kill=$(date +%s%N)
[ "$MODE" = lose ] && kill -CONT "$rpid"

moved() { m=$(cl_master_of_event "$VICTIM_EV") && [ "$m" != "$VICTIM" ]; }
e2e_wait 30 "a replica taking over the slot of event $VICTIM_EV" moved
NEW=$(cl_master_of_event "$VICTIM_EV")
e2e_log "port $NEW took over after $(( ($(date +%s%N) - t_kill) / 1000000 )) ms"

for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || e2e_fail "seckill-bench of event ${CL_EVENTS[$i]} failed: $(tail -n 3 "$E2E_TMP/bench-${CL_EVENTS[$i]}.log")"
done
for ev in "${CL_EVENTS[@]}"; do
    e2e_log "event $ev: $(cl_summary "$E2E_TMP/out-$ev" answered) answered, $(cl_summary "$E2E_TMP/out-$ev" accepted) accepted, $(status_count "$E2E_TMP/out-$ev" 503) answered 503"
done
# The gap was seen: a 503 for the event, or an answer held through it (a front whose
# cluster client already knows the node is down waits for the new slot map, up to
# redis.timeout_ms per try, instead of failing; which of the two a request meets depends
# on whether it reached the dead connection first: at 150 req/s, often none does).
gap503=$(status_count "$E2E_TMP/out-$VICTIM_EV" 503)
gapmax=$(cl_summary "$E2E_TMP/out-$VICTIM_EV" max)
e2e_log "event $VICTIM_EV: $gap503 answered 503, the slowest answer took $gapmax ms"
awk -v n="$gap503" -v m="$gapmax" 'BEGIN { exit !(n > 0 || m >= 1000) }' ||
    e2e_fail "no 503 and no answer held for event $VICTIM_EV: the gap was not seen (or answered wrongly)"

# Recovered by themselves: a second burst on the event, through both fronts, no 503.
SECKILL_JWT_SECRET=$E2E_SECRET "$BIN/seckill-bench" --http "$CL_HTTP" --event "$VICTIM_EV" \
    --users 500 --requests 500 --connections 4 --drain.wait 0 --progress false \
    --out "$E2E_TMP/after" >"$E2E_TMP/after.log" 2>&1 || e2e_fail "the burst after the failover failed"
after503=$(status_count "$E2E_TMP/after" 503)
[ "$after503" -eq 0 ] || e2e_fail "$after503 answers 503 after the failover: the fronts did not recover"
[ "$(cl_summary "$E2E_TMP/after" answered)" -eq 500 ] || e2e_fail "the burst after the failover was not answered in full"
e2e_log "after the failover: 500 answered, no 503"

# The other events: every guarantee holds.
for ev in "${CL_EVENTS[@]:1}"; do
    cl_check "$ev" "$E2E_TMP/out-$ev" --wait 90 >"$E2E_TMP/check-$ev.txt" 2>&1 ||
        { cat "$E2E_TMP/check-$ev.txt" >&2; e2e_fail "seckill-check found a violation for event $ev"; }
done
e2e_log "seckill-check green for the events on the other masters"

# The killed master's event: green, or the loss reported and the database's guards held.
rc=0
mkdir -p "$E2E_TMP/victim"
cat "$E2E_TMP/out-$VICTIM_EV/accepted.txt" "$E2E_TMP/after/accepted.txt" >"$E2E_TMP/victim/accepted.txt"
cl_check "$VICTIM_EV" "$E2E_TMP/victim" --wait $VICTIM_WAIT >"$E2E_TMP/check-victim.txt" 2>&1 || rc=$?
sed "s/^/[event $VICTIM_EV] /" "$E2E_TMP/check-victim.txt" >&2
q() { psql "$SECKILL_PG" -tAc "$1"; }
created=$(q "select count(*) from seckill_order where event_id = $VICTIM_EV and status = 'created'")
rejected=$(q "select count(*) from seckill_order where event_id = $VICTIM_EV and status <> 'created'")
doubled=$(q "select count(*) from (select user_id from seckill_order where event_id = $VICTIM_EV group by user_id having count(*) > 1) d")
left=$(q "select stock_left from seckill_event where id = $VICTIM_EV")
[ "$created" -le $STOCK ] || e2e_fail "PostgreSQL oversold: $created created of $STOCK"
[ "$doubled" -eq 0 ] || e2e_fail "PostgreSQL holds $doubled users with two orders for event $VICTIM_EV"
[ $((created + left)) -eq $STOCK ] || e2e_fail "stock_left $left + created $created != $STOCK"
if [ $rc -eq 0 ]; then
    [ "$MODE" != lose ] || e2e_fail "seckill-check green although the replica missed 50 reservations"
    e2e_log "seckill-check green for event $VICTIM_EV too: no acknowledged write was lost"
else
    # Only what lost replication explains may fail: a 202 whose reservation the new master
    # never saw sold a unit twice in Redis, and the consumer recorded the excess as
    # 'rejected' (lost), or Redis's counts no longer add up (redis_balance).
    bad=$(awk '$1 == "FAIL" { print $2 }' "$E2E_TMP/check-victim.txt" | grep -v -x -e lost -e redis_balance || true)
    [ -z "$bad" ] || e2e_fail "event $VICTIM_EV: seckill-check failed beyond what lost replication explains: $bad"
    # Buyers PostgreSQL holds that the new master does not know: reservations lost.
    lost=$(comm -23 <(q "select user_id from seckill_order where event_id = $VICTIM_EV" | sort) \
        <(cl_cli "$NEW" hkeys "seckill:{e$VICTIM_EV}:buyers" | sort) | wc -l)
    [ "$lost" -gt 0 ] || e2e_fail "seckill-check failed but no reservation is missing from the new master"
    # A buyer the new master forgot may buy again: the consumer's unique key drops that
    # second order, so its 202 has no row (seckill-check's "missing").
    missing=$(awk '$2 == "lost" { for (i = 1; i < NF; i++) if ($i == "missing") print $(i + 1) + 0 }' "$E2E_TMP/check-victim.txt")
    e2e_log "REPORT event $VICTIM_EV: asynchronous replication lost acknowledged writes:" \
        "$lost reservations unknown to the new master; $rejected 202s recorded as rejected" \
        "(no stock left in PostgreSQL for them), ${missing:-0} 202s without a row (a second" \
        "order of a forgotten buyer, refused by the unique key); $created created of $STOCK;" \
        "no oversold, no doubled order"
fi
e2e_log "PASS"
