#!/usr/bin/env bash
# fault 4: PostgreSQL stopped for 10 s during a burst. The front does not need it to take
# an order (Redis decides, Kafka holds the backlog): it must keep answering 202 through
# the outage at the offered rate, with no 503 and no cut connection. The consumer pauses
# and retries; once PostgreSQL is back it catches up by itself and seckill-check passes
# (every 202 in PostgreSQL, exactly once).
. "$(dirname "$0")/lib.sh"
fault_require
# The fronts' Redis deadline at 3 s here, not the fault lib's 500 ms: on one machine the
# stopping PostgreSQL's shutdown checkpoint and Redis's appendfsync-always AOF share a disk,
# and an fsync that waits behind the checkpoint's writes once stalled Redis past 500 ms
# (CI: 84 immediate 503 "redis is unavailable" while the front reconnected). A Redis stall
# is not this case's fault; fault_redis_restart measures that deadline.
FAULT_REDIS_TIMEOUT_MS=3000
fault_up order
fault_warmup

FAULT_STOCK=6000
RATE=300
DOWN_S=10
# One try per user and enough stock for all: every answer must be a 202.
fault_bench_bg --stock $FAULT_STOCK --users 6000 --requests 6000 --rate $RATE --connections 32 \
    --drain.wait 0 --stall 60 --event.name fault-pg-down
e2e_wait 30 "300 units sold" fault_sold_at_least 300
fault_pg_down
down_at=$(fault_now_ms)
sold_at_down=$((FAULT_STOCK - $(fault_stock)))
sleep $DOWN_S # the outage itself (the fault's length, not a synchronisation)
sold_at_up=$((FAULT_STOCK - $(fault_stock)))
fault_pg_up
up_at=$(fault_now_ms)
e2e_log "PostgreSQL down $((up_at - down_at)) ms; $((sold_at_up - sold_at_down)) units reserved meanwhile"

fault_bench_wait
during=$(fault_timeline_sum ok_202 "$down_at" "$up_at")
e2e_log "202s answered during the outage: $during (offered about $((RATE * DOWN_S)))"
awk -v d="$during" -v t=$((RATE * DOWN_S)) 'BEGIN { exit !(d >= 0.75 * t) }' ||
    e2e_fail "only $during 202s while PostgreSQL was down, offered $((RATE * DOWN_S))"
[ "$(e2e_summary accepted)" -eq 6000 ] || e2e_fail "$(e2e_summary accepted) of 6000 requests got a 202"
[ "$(e2e_outcome "503 unavailable")" -eq 0 ] || e2e_fail "503s while PostgreSQL was down"
[ "$(e2e_outcome "0 io")" -eq 0 ] || e2e_fail "requests got no answer"
fault_check || e2e_fail "seckill-check found a violation after the catch-up"
e2e_log "PASS"
