#!/usr/bin/env bash
# fault 6: two seckill-order instances and two seckill-consumer members of one group; the
# load generator spreads its connections over both fronts. Mid-burst, SIGKILL of the
# front holding the reconciler lock and of one consumer. The reconciler role must move to
# the surviving front (its /metrics leader gauge turns 1 within the lock's watchdog
# timeout + a scan interval), the reservations the dead front left pending must be
# released within the README bound (+ the consumer group's failover: the dead member's
# 6 s session), the surviving front keeps selling, and seckill-check passes.
. "$(dirname "$0")/lib.sh"
fault_require
fault_start_redis
fault_start_pg
e2e_start_kafka
fault_start_consumer consumer
fault_start_consumer consumer2
fault_start_order order_a
e2e_wait 20 "order_a takes the reconciler lock" fault_metric_is order_a seckill_order_reconcile_leader 1
fault_start_order order_b
FAULT_URLS="http://127.0.0.1:$FAULT_PORT_order_a,http://127.0.0.1:$FAULT_PORT_order_b"
fault_warmup
fault_metric_is order_b seckill_order_reconcile_leader 0 || e2e_fail "order_b reconciles beside order_a"

FAULT_STOCK=3000
LAG_MS=20000
fault_bench_bg --stock $FAULT_STOCK --users 6000 --requests 6000 --rate 400 --connections 32 \
    --drain.wait 0 --stall 60 --event.name fault-two-fronts
e2e_wait 30 "600 units sold" fault_sold_at_least 600
fault_kill9 order_a
fault_kill9 consumer
killed_at=$(fault_now_ms)
mapfile -t orphans < <(fault_rcli HKEYS "$(fault_key pending)")
e2e_log "${#orphans[@]} reservations pending at the kill"

e2e_wait $(((FAULT_RECON_LOCK_MS + FAULT_RECON_INTERVAL_MS + 5000) / 1000)) \
    "order_b takes the reconciler role over" fault_metric_is order_b seckill_order_reconcile_leader 1
e2e_log "order_b reconciles $(($(fault_now_ms) - killed_at)) ms after the kill"
grep -q "event=reconciler_leader" "$E2E_TMP/order_b.log" || e2e_fail "order_b's log does not say it took the lock"

orphans_gone() {
    [ ${#orphans[@]} -eq 0 ] && return 0
    ! fault_rcli HMGET "$(fault_key pending)" "${orphans[@]}" | grep -q .
}
bound=$((FAULT_MSG_TIMEOUT_MS + FAULT_RECON_MARGIN_MS + FAULT_RECON_INTERVAL_MS + FAULT_RECON_LOCK_MS))
e2e_wait $(((bound + LAG_MS) / 1000 + 1)) "the orphaned reservations released" orphans_gone
released_ms=$(($(fault_now_ms) - killed_at))
e2e_log "orphans released ${released_ms} ms after the kill (bound ${bound} ms + consumer failover/lag ${LAG_MS} ms)"

fault_bench_wait
accepted=$(e2e_summary accepted)
io=$(e2e_outcome "0 io")
e2e_log "accepted $accepted, $io requests cut with the dead front"
# The kill landed mid-burst: 202s in the two seconds before it (timeline buckets are 1 s)
# and after it. Requests cut in flight ($io) are logged, not required: at 400 req/s over
# 32 connections a front often has none in flight at the instant of the kill.
[ "$(fault_timeline_sum ok_202 "$((killed_at - 2000))" "$killed_at")" -gt 0 ] ||
    e2e_fail "no 202 in the 2 s before the kill: the fault did not land mid-burst"
[ "$(fault_timeline_sum ok_202 "$((killed_at + 500))" 99999999999999)" -gt 0 ] || e2e_fail "no 202 after the kill"
fault_wait_pending_empty 30
fault_check || e2e_fail "seckill-check found a violation"
[ "$(fault_metric consumer2 seckill_consumer_orders_created_total)" -gt 0 ] || e2e_fail "the surviving consumer wrote nothing"
e2e_log "PASS"
