#!/usr/bin/env bash
# fault 5: the Kafka broker down for 5 s during a burst (seckill-devkafka's control port:
# librdkafka's mock cluster disconnects it and refuses connections). The front may not
# answer 202 without Kafka's acknowledgement: no 202 is answered while the broker is down,
# and every 202 is in PostgreSQL at the end (seckill-check: lost 0). Orders waiting for
# Kafka are bounded (limits.kafka_inflight = 16 here): past the bound the 503s come at
# once; the ones that waited get theirs once librdkafka gives their messages up. After the reconciler
# has released what may never have reached Kafka, Redis stock + pending + created =
# stock_total with nothing pending.
. "$(dirname "$0")/lib.sh"
fault_require
fault_start_redis
fault_start_pg
e2e_start_kafka
fault_start_consumer consumer
fault_start_order order SECKILL_LIMITS_KAFKA_INFLIGHT=16
FAULT_URLS=http://127.0.0.1:$FAULT_PORT_order
fault_warmup

kafka_control() {
    local ans
    exec 3<>"/dev/tcp/${E2E_CONTROL%:*}/${E2E_CONTROL##*:}"
    printf '%s\n' "$1" >&3
    read -r ans <&3
    exec 3<&-
    [ "${ans%% *}" = ok ] || e2e_fail "devkafka control '$1': $ans"
}
E2E_CONTROL=$(cat "$E2E_TMP/kafka.control")

FAULT_STOCK=3000
DOWN_S=5
SLACK_MS=4000
# 64 connections at 400/s: more requests wait than the bound lets through.
fault_bench_bg --stock $FAULT_STOCK --users 6000 --requests 6000 --rate 400 --connections 64 \
    --drain.wait 0 --stall 60 --event.name fault-broker-down
e2e_wait 30 "400 units sold" fault_sold_at_least 400
kafka_control "broker down 1"
down_at=$(fault_now_ms)
e2e_log "broker down"
sleep $DOWN_S # the outage itself (the fault's length, not a synchronisation)
kafka_control "broker up 1"
up_at=$(fault_now_ms)
e2e_log "broker up after $((up_at - down_at)) ms"

fault_bench_wait
fault_broker_outage_verdict "$down_at" "$up_at"
p50=$(fault_lat 503 unavailable p50_ms)
max503=$(fault_lat 503 unavailable max_ms)
# Most 503s are the bound's, answered at once. The few orders that waited for Kafka get
# theirs when librdkafka times their messages out: measured, not within message.timeout.ms
# of the produce but within about that long after the broker is back (its idempotent
# producer holds a partition's queue while the connection is down), so the bound checked
# is the outage + message.timeout.ms + SLACK_MS: late, but never a hang.
awk -v m="$p50" 'BEGIN { exit !(m <= 100) }' || e2e_fail "the median 503 took $p50 ms: not answered at once"
bound=$((DOWN_S * 1000 + FAULT_MSG_TIMEOUT_MS + SLACK_MS))
awk -v m="$max503" -v t=$bound 'BEGIN { exit !(m <= t) }' ||
    e2e_fail "a 503 took $max503 ms, past the outage + message.timeout.ms + $SLACK_MS ms ($bound ms)"
fault_wait_pending_empty 30
fault_check || e2e_fail "seckill-check found a violation"
e2e_log "PASS"
