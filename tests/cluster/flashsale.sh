#!/usr/bin/env bash
# cluster: the flash sale on a Redis Cluster (issue 8): 4 events of 1,000 stock spread
# over the 3 masters, 2 fronts, 2 consumers, one seckill-bench per event at once with its
# connections spread over both fronts; every event sells exactly its stock and
# seckill-check is green for every event. See tests/cluster/lib.sh.
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib.sh"
cl_start_pipeline

STOCK=1000
cl_create_events_on_masters 4 $STOCK || e2e_fail "no events on every master"
cl_log_events
[ "$(printf '%s\n' "${CL_EVENT_MASTER[@]}" | sort -u | wc -l)" -eq 3 ] ||
    e2e_fail "the events do not cover the 3 masters"

# One bench per event, all at once: 4 x 4,000 requests of 2,000 users over 8 connections
# each (4 on each front).
pids=()
for ev in "${CL_EVENTS[@]}"; do
    SECKILL_JWT_SECRET=$E2E_SECRET "$BIN/seckill-bench" --http "$CL_HTTP" --pg "$SECKILL_PG" \
        --event "$ev" --users 2000 --requests 4000 --connections 8 --drain.wait 90 \
        --progress false --out "$E2E_TMP/out-$ev" >"$E2E_TMP/bench-$ev.log" 2>&1 &
    pids+=($!)
done
for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || e2e_fail "seckill-bench of event ${CL_EVENTS[$i]} failed: $(tail -n 3 "$E2E_TMP/bench-${CL_EVENTS[$i]}.log")"
done

for ev in "${CL_EVENTS[@]}"; do
    out=$E2E_TMP/out-$ev
    accepted=$(cl_summary "$out" accepted)
    answered=$(cl_summary "$out" answered)
    refused=$(($(cl_outcome "$out" "409 sold_out") + $(cl_outcome "$out" "409 duplicate")))
    e2e_log "event $ev (master $(cl_master_of_event "$ev")): $answered answered, $accepted accepted, $refused refused"
    [ "$accepted" -eq $STOCK ] || e2e_fail "event $ev: $accepted 202s, expected exactly the stock ($STOCK)"
    [ "$answered" -eq 4000 ] || e2e_fail "event $ev: answered $answered of 4000"
    [ $((accepted + refused)) -eq 4000 ] ||
        e2e_fail "event $ev: $((4000 - accepted - refused)) answers were neither 202 nor 409 sold_out/duplicate"
done
for ev in "${CL_EVENTS[@]}"; do
    cl_check "$ev" "$E2E_TMP/out-$ev" --wait 90 >"$E2E_TMP/check-$ev.txt" 2>&1 ||
        { cat "$E2E_TMP/check-$ev.txt" >&2; e2e_fail "seckill-check found a violation for event $ev"; }
    sed "s/^/[event $ev] /" "$E2E_TMP/check-$ev.txt" >&2
done
# Both fronts served: every front took orders (the benches spread their connections).
for f in "${CL_FRONTS[@]}"; do
    n=$(curl -fsS "$f/metrics" | awk '/^seckill_order_requests_total/ { s += $2 } END { print s + 0 }')
    e2e_log "front $f: $n requests"
    [ "${n%.*}" -gt 0 ] || e2e_fail "front $f answered no request"
done
e2e_log "PASS"
