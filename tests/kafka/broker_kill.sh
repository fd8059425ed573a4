#!/usr/bin/env bash
# kafka: kill -9 of the (single) Apache Kafka broker mid-burst, restarted on its log.
# The front may not answer 202 without Kafka's acknowledgement: no 202 while the broker
# is down, 503s instead (limits.kafka_inflight = 16: past the bound at once, the others
# once message.timeout.ms gives their messages up), and after the restart every 202 is in
# PostgreSQL exactly once (seckill-check: lost 0, stock + pending + created = total): an
# acknowledged message was in the broker's log, which outlives the process.
. "$(dirname "$0")/../fault/lib.sh"
. "$(dirname "$0")/lib.sh"
fault_require
# librdkafka backs off reconnecting up to 10 s by default: after a 10 s outage the
# services would sit out most of the burst. 1 s, as deploy/kafka/README.md advises.
export SECKILL_KAFKA_RECONNECT_BACKOFF_MAX_MS=1000
fault_start_redis
fault_start_pg
kafka_start_private 1
fault_start_consumer consumer
fault_start_order order SECKILL_LIMITS_KAFKA_INFLIGHT=16
FAULT_URLS=http://127.0.0.1:$FAULT_PORT_order
fault_warmup

FAULT_STOCK=5000
# 400/s for 25 s: the broker's restart (a JVM start, ~10 s here) fits inside the burst.
fault_bench_bg --stock $FAULT_STOCK --users 10000 --requests 10000 --rate 400 --connections 64 \
    --drain.wait 0 --stall 90 --event.name kafka-broker-kill
e2e_wait 30 "400 units sold" fault_sold_at_least 400
killed_at=$(fault_now_ms)
kafka_kill9 1
kafka_restart 1
up_at=$(fault_now_ms)
e2e_log "broker back after $((up_at - killed_at)) ms"

fault_bench_wait
fault_broker_outage_verdict "$killed_at" "$up_at"
fault_wait_pending_empty 60
fault_check || e2e_fail "seckill-check found a violation"
e2e_log "PASS"
