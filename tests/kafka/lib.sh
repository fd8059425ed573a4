# shellcheck shell=bash
# tests/kafka/lib.sh: Apache Kafka for the `kafka` tests (label kafka, tests/kafka.cmake),
# sourced after tests/e2e/lib.sh (or tests/fault/lib.sh, which sources it).
#
# Two kinds of broker, both run by deploy/kafka/kafka.sh (the stack's own settings):
# - the label's shared single-node broker (a ctest fixture, tests/kafka/fixture.sh), in
#   E2E_REAL_KAFKA: kafka_attach gives the test topics of its own on it (the services
#   and seckill-check read SECKILL_TOPIC / SECKILL_DLQ_TOPIC) and E2E_BROKERS; the
#   consumer group is the test's own already (tests/e2e/lib.sh, tests/fault/lib.sh);
# - a private cluster (kafka_start_private N) for a test that kills or cuts off brokers,
#   in $E2E_TMP/kafka on free ports, stopped by the EXIT trap after the services.
[ -n "${KAFKA_LIB_SOURCED:-}" ] && return 0
KAFKA_LIB_SOURCED=1
KAFKA_SH=${SECKILL_SOURCE_DIR:?SECKILL_SOURCE_DIR is not set (ctest sets it)}/deploy/kafka/kafka.sh
KAFKA_DIR=""

# Called by e2e_cleanup (tests/e2e/lib.sh) after the services are stopped, before
# tests/fault/lib.sh's PostgreSQL: the private cluster stops, its logs shown on failure.
kafka_after_stop() {
    [ -n "$KAFKA_DIR" ] || return 0
    if [ "$1" -ne 0 ] && [ "$1" -ne "$E2E_SKIP" ]; then
        local f
        for f in "$KAFKA_DIR"/node-*.log; do
            echo "---- last lines of kafka $(basename "$f")" >&2
            tail -n 15 "$f" >&2
        done
    fi
    "$KAFKA_SH" stop "$KAFKA_DIR" 2>/dev/null || true
}

kafka_require() {
    command -v java >/dev/null || e2e_skip "java not installed (deploy/local.sh deps)"
    [ -f "$SECKILL_SOURCE_DIR/deploy/kafka/lib/.fetched" ] || e2e_skip "the Kafka jars are not fetched (deploy/local.sh deps)"
}

# kafka_topics: the test's topics on the broker in E2E_BROKERS, for every service started after.
kafka_topics() {
    local dir=$1 base=$2
    SECKILL_TOPIC=$base SECKILL_DLQ_TOPIC=$base.dlq SECKILL_EVENTS_TOPIC=$base.events
    "$KAFKA_SH" topic "$dir" "$SECKILL_TOPIC" 6 && "$KAFKA_SH" topic "$dir" "$SECKILL_DLQ_TOPIC" 6 &&
        "$KAFKA_SH" topic "$dir" "$SECKILL_EVENTS_TOPIC" 6 ||
        e2e_fail "the topics $base(.dlq, .events) could not be created"
    export SECKILL_TOPIC SECKILL_DLQ_TOPIC SECKILL_EVENTS_TOPIC
    e2e_log "topics $SECKILL_TOPIC and $SECKILL_DLQ_TOPIC on $E2E_BROKERS"
}

# kafka_attach: the label's shared broker (the fixture), with topics of the test's own.
kafka_attach() {
    kafka_require
    [ -f "$E2E_REAL_KAFKA/bootstrap" ] ||
        e2e_skip "no shared Kafka: $(cat "$E2E_REAL_KAFKA/skip" 2>/dev/null || echo "the fixture kafka_broker_up did not run")"
    E2E_BROKERS=$(cat "$E2E_REAL_KAFKA/bootstrap")
    kafka_topics "$E2E_REAL_KAFKA" "seckill.orders.t$$"
}

# kafka_free_base N: a port P with P .. P+N-1 all free.
kafka_free_base() { sk_free_ports "$1" || e2e_fail "no $1 free consecutive ports"; }

# kafka_start_private NODES: a cluster of the test's own with the deployment's topics
# (seckill.orders, seckill.orders.dlq: replication factor 3 and min.insync.replicas 2
# on 3 nodes). 256 MB of heap a node: three of them fit beside the rest.
kafka_start_private() {
    kafka_require
    KAFKA_DIR=$E2E_TMP/kafka
    local t0=$SECONDS
    SECKILL_BROKER_HEAP=${SECKILL_BROKER_HEAP:-256m} "$KAFKA_SH" start "$KAFKA_DIR" \
        "$(kafka_free_base $((2 * $1)))" "$1" 2>>"$E2E_TMP/kafka.log" ||
        e2e_fail "kafka did not start: $(tail -n 3 "$E2E_TMP/kafka.log")"
    E2E_BROKERS=$(cat "$KAFKA_DIR/bootstrap")
    kafka_topics "$KAFKA_DIR" seckill.orders
    e2e_log "kafka: $1 node(s) on $E2E_BROKERS, ready after $((SECONDS - t0)) s"
}

kafka_kill9() {
    "$KAFKA_SH" kill "$KAFKA_DIR" "$1" KILL
    e2e_log "kafka node $1 killed (SIGKILL)"
}

kafka_restart() {
    local t0=$SECONDS
    SECKILL_BROKER_HEAP=${SECKILL_BROKER_HEAP:-256m} "$KAFKA_SH" start-node "$KAFKA_DIR" "$1" 2>>"$E2E_TMP/kafka.log" ||
        e2e_fail "kafka node $1 did not start again: $(tail -n 3 "$E2E_TMP/kafka.log")"
    e2e_log "kafka node $1 serves again after $((SECONDS - t0)) s"
}

kafka_leader() { "$KAFKA_SH" leader "$KAFKA_DIR" "$SECKILL_TOPIC" "$1"; }
