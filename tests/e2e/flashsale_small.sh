#!/usr/bin/env bash
# e2e: the demo's flash sale at a small size (1,000 stock, 5,000 users, 20,000 requests)
# through a private devkafka + seckill-order + seckill-consumer on the shared Redis and
# PostgreSQL; seckill-check is the assertion. See tests/e2e/lib.sh for the isolation.
. "$(dirname "$0")/lib.sh"
e2e_require
e2e_start_kafka
e2e_start_consumer
e2e_start_order

e2e_bench --stock 1000 --users 5000 --requests 20000 --connections 32 --drain.wait 90 \
    --event.name e2e-small || e2e_fail "seckill-bench failed"
cat "$E2E_TMP/out/summary.json" >&2

accepted=$(e2e_summary accepted)
answered=$(e2e_summary answered)
[ "$accepted" -eq 1000 ] || e2e_fail "202s: $accepted, expected exactly the stock (1000)"
[ "$answered" -eq 20000 ] || e2e_fail "answered $answered of 20000"
# Every other answer is a clean refusal: sold out or a repeat try of a winner.
refused=$(( $(e2e_outcome "409 sold_out") + $(e2e_outcome "409 duplicate") ))
[ $((accepted + refused)) -eq 20000 ] ||
    e2e_fail "$((20000 - accepted - refused)) answers were neither 202 nor 409 sold_out/duplicate"
[ "$(e2e_outcome "409 duplicate")" -gt 0 ] || e2e_fail "no 409 duplicate: repeat tries of winners were not refused as such"
# latency.prom (the services' Prometheus writer): each outcome's _count is its answers
prom_count() { sed -n "s/^seckill_bench_response_seconds_count{status=\"$1\",code=\"$2\"} //p" "$E2E_TMP/out/latency.prom"; }
[ "$(prom_count 202 "")" = "$accepted" ] || e2e_fail "latency.prom: 202 count $(prom_count 202 "") != $accepted"
[ "$(prom_count 409 sold_out)" = "$(e2e_outcome "409 sold_out")" ] || e2e_fail "latency.prom: 409 sold_out count differs"

e2e_check --wait 90 || e2e_fail "seckill-check found a violation"
e2e_log "PASS"
