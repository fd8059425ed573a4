#!/usr/bin/env bash
# fault 1: kill -9 of seckill-order in the middle of a burst, then a restart on the same
# port. Every 202 must be in PostgreSQL (seckill-check: lost 0); the reservations left
# pending by the dead front (reserved, never answered) must be released, confirmed or
# cancelled, within the README bound: message.timeout.ms + reconcile.margin_ms + one
# reconcile.interval_ms + reconcile.lock_timeout_ms (the dead front held the reconciler
# lock) + the consumer's lag and the restart (LAG_MS); and Redis stock + pending +
# created = stock_total.
. "$(dirname "$0")/lib.sh"
fault_require
fault_up order
fault_warmup

FAULT_STOCK=3000
LAG_MS=10000
fault_bench_bg --stock $FAULT_STOCK --users 6000 --requests 6000 --rate 400 --connections 32 \
    --drain.wait 0 --stall 60 --event.name fault-front-kill
e2e_wait 30 "600 units sold" fault_sold_at_least 600
fault_kill9 order
killed_at=$(fault_now_ms)
# What the dead front left in pending: reserved, and its answer never sent.
mapfile -t orphans < <(fault_rcli HKEYS "$(fault_key pending)")
e2e_log "${#orphans[@]} reservations pending at the kill"
fault_start_order order
e2e_log "order restarted $(($(fault_now_ms) - killed_at)) ms after the kill"

orphans_gone() {
    [ ${#orphans[@]} -eq 0 ] && return 0
    ! fault_rcli HMGET "$(fault_key pending)" "${orphans[@]}" | grep -q .
}
bound=$((FAULT_MSG_TIMEOUT_MS + FAULT_RECON_MARGIN_MS + FAULT_RECON_INTERVAL_MS + FAULT_RECON_LOCK_MS))
e2e_wait $(((bound + LAG_MS) / 1000 + 1)) "the orphaned reservations released" orphans_gone
released_ms=$(($(fault_now_ms) - killed_at))
e2e_log "orphans released ${released_ms} ms after the kill (bound ${bound} ms + lag/restart ${LAG_MS} ms)"
[ $released_ms -le $((bound + LAG_MS)) ] || e2e_fail "orphans released after ${released_ms} ms"

fault_bench_wait
accepted=$(e2e_summary accepted)
io=$(e2e_outcome "0 io")
e2e_log "accepted $accepted, $io requests lost with the connection to the dead front"
[ "$io" -gt 0 ] || e2e_fail "no request was cut by the kill: the fault did not land mid-burst"
[ "$accepted" -gt 600 ] || e2e_fail "only $accepted 202s: the restarted front did not sell"
# The restarted front sold too (202s answered after the restart).
[ "$(fault_timeline_sum ok_202 "$killed_at" 99999999999999)" -gt 0 ] || e2e_fail "no 202 after the restart"
fault_wait_pending_empty 30
fault_check || e2e_fail "seckill-check found a violation"
e2e_log "PASS"
