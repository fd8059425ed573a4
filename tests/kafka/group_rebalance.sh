#!/usr/bin/env bash
# kafka: a consumer group of two seckill-consumers on the shared Apache Kafka; one is
# stopped (SIGTERM: it leaves the group) mid-burst and started again. Both rebalances
# are real (the broker's group coordinator moves the partitions): the other member
# writes while it is away, and it writes again once back. Every 202 is in PostgreSQL
# exactly once (seckill-check: lost 0, duplicates 0, stock_left, Redis balance).
. "$(dirname "$0")/../fault/lib.sh"
. "$(dirname "$0")/lib.sh"
e2e_require
e2e_start_kafka
# On the stack's Redis and PostgreSQL (no fault_require: nothing of theirs is broken).
fault_start_consumer a
fault_start_consumer b
# The stack's Redis is shared with the rest of the suite (its AOF appendfsync always): on
# the busy CI machine it once stalled past the fault suite's 500 ms command timeout (CI
# 2026-11-28: 3 confirms failed, requests waited up to 524 ms, 119 orders were answered
# 503 and the stock was not sold out). Nothing of Redis is under test here, so this
# front waits as a deployment's would, and longer (the default is 1 s).
fault_start_order order SECKILL_REDIS_TIMEOUT_MS=5000
FAULT_URLS=http://127.0.0.1:$FAULT_PORT_order
fault_warmup

created() { local n; n=$(fault_metric "$1" seckill_consumer_orders_created_total); echo "${n%.*}"; }
created_at_least() { local n; n=$(created "$1"); [ -n "$n" ] && [ "$n" -ge "$2" ]; }
# A member holds partitions once its /metrics has their lag (one line a partition).
holds_partitions() {
    local port_var="FAULT_PORT_$1"
    curl -fsS "http://127.0.0.1:${!port_var}/metrics" 2>/dev/null | grep -q '^seckill_consumer_lag{'
}
e2e_wait 60 "consumer a holds partitions" holds_partitions a
e2e_wait 60 "consumer b holds partitions" holds_partitions b

# 300/s for 15 s, every request a different user: the whole stock sells over the burst.
fault_bench_bg --stock 4500 --users 4500 --requests 4500 --rate 300 --connections 32 \
    --drain.wait 0 --event.name kafka-group-rebalance
rows_at_least() { [ "$(e2e_rows)" -ge "$1" ]; }
e2e_wait 60 "800 rows written" rows_at_least 800
# The event's orders share a key, so one partition: the member holding it is the writer.
# warm-up order may have gone to either: the writer is the one that wrote during the burst.
if [ "$(created a)" -gt "$(created b)" ]; then w=a o=b; else w=b o=a; fi
e2e_log "consumer $w writes the event's partition ($(created $w) orders); stopping it"
kill -TERM "$(eval echo "\$FAULT_PID_$w")"
wait "$(eval echo "\$FAULT_PID_$w")" || e2e_fail "consumer $w did not stop cleanly on SIGTERM"
printf -v "FAULT_PORT_$w" %s ""
o_at_stop=$(created $o)
e2e_wait 60 "consumer $o takes the partition over (300 more orders)" created_at_least $o $((o_at_stop + 300))
e2e_log "consumer $o wrote $(($(created $o) - o_at_stop)) orders alone; starting $w again"
fault_start_consumer $w
e2e_wait 60 "consumer $w holds partitions again" holds_partitions $w
e2e_log "consumer $w rejoined the group and holds partitions"

fault_bench_wait
accepted=$(e2e_summary accepted)
[ "$accepted" -eq 4500 ] || e2e_fail "202s: $accepted, expected the whole stock (4500)"
fault_check || e2e_fail "seckill-check found a violation"
e2e_log "PASS"
