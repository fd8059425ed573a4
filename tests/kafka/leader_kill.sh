#!/usr/bin/env bash
# kafka: a 3-node Apache Kafka cluster (replication factor 3, min.insync.replicas 2);
# kill -9 of the leader of the partition the burst writes to, mid-burst, not restarted.
# The producer and the consumer follow the new leader (the controller elects one from
# the ISR once the dead node is fenced): 202s go on after the kill, the consumer writes
# them, and every 202 is in PostgreSQL exactly once (seckill-check).
# The dead node stays down to the end: the reservations pending at the kill must be
# resolved without it (seckill-order's reconciler once blocked for minutes in
# rd_kafka_query_watermark_offsets while a dead node was still the leader of record,
# librdkafka #2588; it now asks for the high watermarks with rd_kafka_offsets_for_times,
# which keeps its timeout), and the front must stop on SIGTERM at the end.
. "$(dirname "$0")/../fault/lib.sh"
. "$(dirname "$0")/lib.sh"
fault_require
export SECKILL_KAFKA_RECONNECT_BACKOFF_MAX_MS=1000 # see broker_kill.sh
fault_start_redis
fault_start_pg
kafka_start_private 3
fault_start_consumer consumer
fault_start_order order
FAULT_URLS=http://127.0.0.1:$FAULT_PORT_order
fault_warmup

FAULT_STOCK=6000
fault_bench_bg --stock $FAULT_STOCK --users 12000 --requests 12000 --rate 400 --connections 64 \
    --drain.wait 0 --stall 90 --event.name kafka-leader-kill
e2e_wait 30 "400 units sold" fault_sold_at_least 400
has_rows() { [ "$(e2e_rows)" -gt 0 ]; }
e2e_wait 30 "the burst's first rows" has_rows
# One event, one key: its orders go to one partition, whose leader dies.
part=$(fault_psql "select kafka_partition from seckill_order where event_id = $FAULT_EVENT limit 1")
leader=$(kafka_leader "$part")
[ -n "$leader" ] || e2e_fail "no leader found for partition $part"
sold_at_kill=$((FAULT_STOCK - $(fault_stock)))
killed_at=$(fault_now_ms)
kafka_kill9 "$leader"
e2e_log "killed node $leader, leader of partition $part, at $sold_at_kill units sold"
e2e_wait 60 "1000 more units sold after the kill" fault_sold_at_least $((sold_at_kill + 1000))
rows_at_least() { [ "$(e2e_rows)" -ge "$1" ]; }
e2e_wait 60 "the consumer writes past the kill" rows_at_least $((sold_at_kill + 500))
new=$(kafka_leader "$part")
[ -n "$new" ] && [ "$new" != "$leader" ] && [ "$new" != -1 ] || e2e_fail "partition $part has leader '$new' after the kill of $leader"
e2e_log "partition $part now led by node $new"

fault_bench_wait
after=$(fault_timeline_sum ok_202 "$killed_at" 99999999999999)
[ "$after" -gt 0 ] || e2e_fail "no 202 after the leader's kill"
[ "$(e2e_outcome "0 io")" -eq 0 ] || e2e_fail "requests got no answer"
e2e_log "$after 202s after the kill; 503s: $(e2e_outcome "503 unavailable")"
fault_wait_pending_empty 60
fault_check || e2e_fail "seckill-check found a violation"
e2e_log "PASS"
