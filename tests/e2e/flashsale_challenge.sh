#!/usr/bin/env bash
# e2e: a small flash sale whose event has a proof-of-work challenge (issue 31): the event
# is created with "challenge" {"kind":"pow","difficulty":8} through the front, every
# user gets and solves its challenge before the clock (seckill-bench --challenge), and
# the sale then ends as without one: exactly the stock sold, every other answer a 409,
# no 403 (each solution is its user's, accepted), and seckill-check finds nothing.
. "$(dirname "$0")/lib.sh"
e2e_require
e2e_start_kafka
e2e_start_consumer
e2e_start_order

e2e_bench --stock 300 --users 1500 --requests 6000 --connections 16 --drain.wait 90 \
    --challenge 8 --event.name e2e-challenge || e2e_fail "seckill-bench failed"
cat "$E2E_TMP/out/summary.json" >&2

accepted=$(e2e_summary accepted)
answered=$(e2e_summary answered)
[ "$accepted" -eq 300 ] || e2e_fail "202s: $accepted, expected exactly the stock (300)"
[ "$answered" -eq 6000 ] || e2e_fail "answered $answered of 6000"
refused=$(( $(e2e_outcome "409 sold_out") + $(e2e_outcome "409 duplicate") ))
[ $((accepted + refused)) -eq 6000 ] ||
    e2e_fail "$((6000 - accepted - refused)) answers were neither 202 nor 409 (a refused challenge?)"
python3 - "$E2E_TMP/out/summary.json" <<'PY' || e2e_fail "summary.json has no challenge figures"
import json, sys
c = json.load(open(sys.argv[1]))["challenge"]
assert c["difficulty"] == 8 and c["hashes"] >= 1500 and c["solve_cpu_s"] > 0, c
PY
e2e_check --wait 90 || e2e_fail "seckill-check found a violation"
e2e_log "PASS"
