#!/usr/bin/env bash
# fault 3: Redis data lost during a sale (FLUSHALL mid-burst: the gate, the ID counters
# and the reconciler's lock all gone). The front must not sell from nothing: orders get
# 503 (not 404, not 202) until the reconciler has rebuilt the gate from PostgreSQL once
# the event's partition has drained (seckill_order_reconcile_reloaded_total), then the
# sale goes on: winners from before the loss get 409 duplicate (buyers reloaded), and
# seckill-check passes (no oversell, one order per user, every 202 in PostgreSQL: order
# ids stayed unique though their counters were flushed).
. "$(dirname "$0")/lib.sh"
fault_require
fault_up order
fault_warmup

FAULT_STOCK=2000
# 3,000 users trying twice each: many winners try again after the reload.
fault_bench_bg --stock $FAULT_STOCK --users 3000 --requests 6000 --rate 400 --connections 32 \
    --drain.wait 0 --stall 60 --event.name fault-redis-flush
e2e_wait 30 "400 units sold" fault_sold_at_least 400
fault_rcli FLUSHALL >/dev/null
flushed_at=$(fault_now_ms)
e2e_log "FLUSHALL"
gate_back() { [ -n "$(fault_stock)" ]; }
e2e_wait 30 "the gate rebuilt" gate_back
reloaded_at=$(fault_now_ms)
e2e_log "gate rebuilt $((reloaded_at - flushed_at)) ms after the flush, stock $(fault_stock)"
[ "$(fault_metric order seckill_order_reconcile_reloaded_total)" -ge 1 ] ||
    e2e_fail "the gate is back but the reconciler did not count a reload"

fault_bench_wait
n503=$(e2e_outcome "503 unavailable")
n404=$(e2e_outcome "404 not_found")
dup=$(e2e_outcome "409 duplicate")
e2e_log "503s: $n503, 404s: $n404, 409 duplicate: $dup"
[ "$n503" -gt 0 ] || e2e_fail "no 503 after the flush: the fault did not land mid-burst"
[ "$n404" -eq 0 ] || e2e_fail "$n404 orders answered 404 for a live event whose keys were lost"
[ "$(e2e_outcome "0 io")" -eq 0 ] || e2e_fail "requests got no answer"
[ "$(fault_timeline_sum r_503 "$((reloaded_at + 1000))" 99999999999999)" -eq 0 ] ||
    e2e_fail "503s went on after the gate was rebuilt"
after=$(fault_timeline_sum ok_202 "$reloaded_at" 99999999999999)
[ "$after" -gt 0 ] || e2e_fail "no 202 after the gate was rebuilt"
[ "$dup" -gt 0 ] || e2e_fail "no 409 duplicate: the buyers were not rebuilt, or no winner tried again"
e2e_log "$after 202s after the reload"
fault_check || e2e_fail "seckill-check found a violation"
e2e_log "PASS"
