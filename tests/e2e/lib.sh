# shellcheck shell=bash
# tests/e2e/lib.sh: a private flash-sale pipeline for one e2e test, sourced by the tests.
#
# Isolation: each test runs its own seckill-devkafka (so its own topics, consumer group
# and dead-letter topic), its own seckill-order and seckill-consumer on free loopback
# ports, and its own JWT secret; only Redis and PostgreSQL are shared (SECKILL_REDIS_URL,
# SECKILL_PG: the stack of deploy/local.sh up or test). Event ids come from libidgen, so
# the test's keys and rows never meet another run's. Every process it starts is stopped
# by the EXIT trap, by pid. Exit status 77 (ctest SKIP) when the stack or a binary is
# missing, so a tree without seckill-order/seckill-consumer reports "skipped", not "passed".
# E2E_KEEP=1 keeps the temporary directory (logs, bench output) for a post-mortem.
set -euo pipefail

E2E_SKIP=77
# shellcheck source=deploy/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../deploy/lib.sh"
BIN=${SECKILL_BIN_DIR:?SECKILL_BIN_DIR is not set (ctest sets it)}
E2E_TMP=$(mktemp -d /tmp/seckill-e2e.XXXXXX)
E2E_PIDS=()

e2e_log() { printf '[e2e %s] %s\n' "$(date -u +%H:%M:%S.%N | cut -c1-12)" "$*" >&2; }
e2e_fail() {
    E2E_FAIL_MSG="$*"
    e2e_log "FAIL: $*"
    exit 1
}
# A command that ends the test through `set -e` (no e2e_fail): where, for the last line.
set -E
trap 'E2E_ERR_AT="${BASH_SOURCE[0]##*/}:$LINENO: $BASH_COMMAND (status $?)"' ERR
e2e_skip() { e2e_log "SKIP: $*"; exit $E2E_SKIP; }
# Short helpers the e2e scripts share (read their settings when called, so a script may
# point SECKILL_REDIS_URL or SECKILL_PG elsewhere first): redis-cli on the test's Redis,
# a token minted with the test front's secret (`token SUB [--admin] [--count N] ...`), and
# one SQL statement's rows, unaligned.
rcli() { redis-cli -u "$SECKILL_REDIS_URL" --no-auth-warning "$@"; }
token() { SECKILL_JWT_SECRET=$E2E_SECRET "$BIN/seckill-order" token --sub "$@"; }
sql() { psql "$SECKILL_PG" -v ON_ERROR_STOP=1 -qtAc "$1"; }

e2e_cleanup() {
    local rc=${1:-$?} i pid
    for ((i = ${#E2E_PIDS[@]} - 1; i >= 0; i--)); do
        pid=${E2E_PIDS[$i]}
        kill -TERM "$pid" 2>/dev/null || continue
        local deadline=$((SECONDS + 20))
        while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null || e2e_log "note: pid $pid exited with status $? on SIGTERM"
    done
    # Hooks for what is not a child process: tests/kafka/lib.sh stops its private Kafka,
    # then tests/fault/lib.sh its PostgreSQL.
    if declare -F kafka_after_stop >/dev/null; then kafka_after_stop "$rc"; fi
    if declare -F e2e_after_stop >/dev/null; then e2e_after_stop "$rc"; fi
    if [ $rc -ne 0 ] && [ $rc -ne $E2E_SKIP ]; then
        for f in "$E2E_TMP"/*.log; do
            [ -f "$f" ] || continue
            echo "---- last lines of $(basename "$f")" >&2
            tail -n 30 "$f" >&2
        done
        # Last, so that a log cut to its tail (CI's) still says why.
        if [ -n "${E2E_FAIL_MSG:-}" ]; then
            echo "---- the test failed: $E2E_FAIL_MSG" >&2
        else
            echo "---- the test stopped with status $rc${E2E_ERR_AT:+ (the last command that failed: $E2E_ERR_AT)}" >&2
        fi
    fi
    if [ -n "${E2E_KEEP:-}" ]; then
        e2e_log "kept $E2E_TMP (E2E_KEEP is set)"
    else
        rm -rf "$E2E_TMP"
    fi
    exit $rc
}
trap e2e_cleanup EXIT

e2e_require() {
    local b
    [ -n "${SECKILL_REDIS_URL:-}" ] && [ -n "${SECKILL_PG:-}" ] ||
        e2e_skip "no stack: SECKILL_REDIS_URL and SECKILL_PG unset (deploy/local.sh up, then source .run/env)"
    for b in seckill-devkafka seckill-order seckill-consumer seckill-bench seckill-check; do
        [ -x "$BIN/$b" ] || e2e_skip "$BIN/$b is not built"
    done
    command -v psql >/dev/null || e2e_skip "psql not installed"
    # Only the brokers of our own dev Kafka may reach librdkafka.
    local v
    for v in $(env | sed -n 's/^\(SECKILL_KAFKA_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
}

# e2e_wait SECONDS DESCRIPTION COMMAND...: polls a condition (deploy/lib.sh's sk_wait,
# every 50 ms); fails the test at the deadline.
e2e_wait() {
    local secs=$1 what=$2
    shift 2
    sk_wait "$secs" "$@" || e2e_fail "$what: not within ${secs}s"
}

# A loopback port nothing listens on, below the kernel's ephemeral range (an outgoing
# connection can never have taken it in the meantime). Shared by tests/fault and
# tests/cluster, which source this file.
e2e_free_port() { sk_free_port || e2e_fail "no free port"; }

e2e_start_kafka() {
    # The `kafka` label runs a test on Apache Kafka instead (tests/kafka/lib.sh).
    if [ -n "${E2E_REAL_KAFKA:-}" ]; then kafka_attach; return; fi
    "$BIN/seckill-devkafka" --bootstrap-file "$E2E_TMP/kafka.bootstrap" \
        --control-file "$E2E_TMP/kafka.control" >"$E2E_TMP/devkafka.log" 2>&1 &
    E2E_PIDS+=($!)
    e2e_wait 30 "seckill-devkafka" test -s "$E2E_TMP/kafka.bootstrap"
    E2E_BROKERS=$(cat "$E2E_TMP/kafka.bootstrap")
    e2e_log "dev kafka on $E2E_BROKERS"
}

# e2e_start_consumer: (re)starts the test's consumer; its pid in E2E_CONSUMER_PID.
# session.timeout.ms 6 s: on seckill-devkafka a consumer restarted in the same group
# gets its partitions only once the old member's session has expired (45 s by default),
# as if the old member had not left; 6 s keeps the restart test short.
e2e_start_consumer() {
    E2E_CONSUMER_PORT=${E2E_CONSUMER_PORT:-$(e2e_free_port)}
    SECKILL_HTTP_PORT=$E2E_CONSUMER_PORT SECKILL_KAFKA_BROKERS=$E2E_BROKERS SECKILL_KAFKA_SESSION_TIMEOUT_MS=6000 \
        SECKILL_GROUP_ID="seckill-e2e-$$" "$BIN/seckill-consumer" >>"$E2E_TMP/consumer.log" 2>&1 &
    E2E_CONSUMER_PID=$!
    E2E_PIDS+=("$E2E_CONSUMER_PID")
    e2e_wait 60 "seckill-consumer /healthz" curl -fsS "http://127.0.0.1:$E2E_CONSUMER_PORT/healthz"
    e2e_log "consumer up (pid $E2E_CONSUMER_PID, port $E2E_CONSUMER_PORT)"
}

e2e_stop_consumer() {
    kill -TERM "$E2E_CONSUMER_PID"
    local rc=0
    wait "$E2E_CONSUMER_PID" || rc=$?
    e2e_log "consumer stopped (status $rc)"
}

e2e_start_order() {
    E2E_HTTP_PORT=$(e2e_free_port)
    E2E_SECRET=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
    # the consumer's group (group.id, one setting): the reconciler reads its offsets
    SECKILL_HTTP_PORT=$E2E_HTTP_PORT SECKILL_HTTP_BIND=127.0.0.1 SECKILL_KAFKA_BROKERS=$E2E_BROKERS \
        SECKILL_GROUP_ID="seckill-e2e-$$" \
        SECKILL_JWT_SECRET=$E2E_SECRET "$BIN/seckill-order" >"$E2E_TMP/order.log" 2>&1 &
    E2E_PIDS+=($!)
    e2e_wait 60 "seckill-order /healthz" curl -fsS "http://127.0.0.1:$E2E_HTTP_PORT/healthz"
    e2e_wait 60 "seckill-order /readyz" curl -fsS "http://127.0.0.1:$E2E_HTTP_PORT/readyz"
    e2e_log "order up (port $E2E_HTTP_PORT)"
}

# e2e_bench ARGS...: seckill-bench against the test's front, output in $E2E_TMP/out
# (a later --out wins).
e2e_bench() {
    SECKILL_JWT_SECRET=$E2E_SECRET "$BIN/seckill-bench" --http "http://127.0.0.1:$E2E_HTTP_PORT" \
        --pg "$SECKILL_PG" --out "$E2E_TMP/out" "$@"
}

# e2e_warmup [BENCH NAME]: one order through the whole pipeline, so the consumer is known
# to hold its partitions (a group join takes seconds) before a test measures anything.
# BENCH: the function that runs seckill-bench (e2e_bench; tests/fault: fault_bench over
# every front), NAME the event's.
e2e_warmup() {
    "${1:-e2e_bench}" --out "$E2E_TMP/warmup" --stock 1 --users 1 --requests 1 --connections 1 \
        --drain.wait 60 --event.name "${2:-e2e-warmup}" >"$E2E_TMP/warmup.log" 2>&1 ||
        e2e_fail "warm-up order failed: $(tail -n 3 "$E2E_TMP/warmup.log")"
    grep -q '"drained": true' "$E2E_TMP/warmup/summary.json" ||
        e2e_fail "the warm-up order did not reach PostgreSQL within 60 s"
    e2e_log "warm-up order reached PostgreSQL"
}

e2e_check() {
    SECKILL_KAFKA_BROKERS=$E2E_BROKERS "$BIN/seckill-check" --redis.url "$SECKILL_REDIS_URL" \
        --pg "$SECKILL_PG" "$@" "$(cat "$E2E_TMP/out/event_id")" "$E2E_TMP/out/accepted.txt"
}

# e2e_summary KEY: a number from summary.json (written with one key a line).
e2e_summary() { sk_json_num "$E2E_TMP/out/summary.json" "$1"; }

# e2e_outcome "409 sold_out": a count from summary.json's outcomes (0 when absent).
e2e_outcome() { sk_json_count "$E2E_TMP/out/summary.json" "$1"; }

e2e_rows() {
    psql "$SECKILL_PG" -tAc "select count(*) from seckill_order where event_id = $(cat "$E2E_TMP/out/event_id")"
}

# The `kafka` label (tests/kafka.cmake) sets E2E_REAL_KAFKA: the shared Apache Kafka.
if [ -n "${E2E_REAL_KAFKA:-}" ]; then . "$(dirname "${BASH_SOURCE[0]}")/../kafka/lib.sh"; fi
