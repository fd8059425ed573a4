# shellcheck shell=bash
# tests/fault/lib.sh: a whole private pipeline for one fault test, sourced by the tests.
#
# Unlike the e2e tests (which share the stack's Redis and PostgreSQL), a fault test
# breaks servers on purpose, so it owns every one of them: a redis-server with AOF
# (appendfsync always, like the stack) in its temporary directory, a throwaway
# PostgreSQL cluster (initdb, fsync off: it is stopped cleanly or on purpose, never
# relied on after a host crash), a seckill-devkafka, and seckill-consumer /
# seckill-order instances, all on free loopback ports. It builds on tests/e2e/lib.sh
# (logging, condition waits, the devkafka start, seckill-bench and seckill-check
# helpers, which read SECKILL_REDIS_URL and SECKILL_PG: set here to the private ones).
#
# Short timeouts come from the services' own settings so that each test stays well
# under 90 s: Kafka message.timeout.ms 3 s, reconciler scan 0.5 s with a 1 s margin and
# a 3 s watchdog lock, Redis command timeout 0.5 s, consumer session 6 s.
# At exit the services are stopped first (SIGTERM, by pid), then the servers.
. "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"

FAULT_MSG_TIMEOUT_MS=3000
FAULT_RECON_INTERVAL_MS=500
FAULT_RECON_MARGIN_MS=1000
FAULT_RECON_LOCK_MS=3000
FAULT_REDIS_TIMEOUT_MS=500
FAULT_GROUP="seckill-fault-$$"
FAULT_SVC_PIDS=() # seckill-order / seckill-consumer / seckill-bench, stopped before the servers
FAULT_PG_DIR=""
FAULT_URLS=""
E2E_SECRET=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')

# Services are stopped before the servers: e2e_cleanup stops E2E_PIDS newest first,
# so they go at the end; PostgreSQL (daemonized by pg_ctl, not a child) goes last.
fault_cleanup() {
    local rc=$?
    E2E_PIDS+=("${FAULT_SVC_PIDS[@]}")
    e2e_cleanup $rc
}
e2e_after_stop() {
    [ -n "$FAULT_PG_DIR" ] || return 0
    sk_as_pg "$FAULT_PG_BIN/pg_ctl" -D "$FAULT_PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
    if [ "$1" -ne 0 ] && [ "$1" -ne $E2E_SKIP ]; then cp "$FAULT_PG_DIR/log" "$E2E_TMP/postgres.log" 2>/dev/null || true; fi
    rm -rf "$FAULT_PG_DIR"
}
trap fault_cleanup EXIT


fault_require() {
    local b
    for b in seckill-devkafka seckill-order seckill-consumer seckill-bench seckill-check; do
        [ -x "$BIN/$b" ] || e2e_skip "$BIN/$b is not built"
    done
    command -v redis-server >/dev/null && command -v redis-cli >/dev/null || e2e_skip "redis-server/redis-cli not installed"
    command -v psql >/dev/null || e2e_skip "psql not installed"
    FAULT_PG_BIN=$(sk_pg_bin || true)
    [ -n "$FAULT_PG_BIN" ] && [ -x "$FAULT_PG_BIN/initdb" ] || e2e_skip "PostgreSQL server binaries not installed"
    if [ "$(id -u)" -eq 0 ]; then
        id postgres >/dev/null 2>&1 || e2e_skip "running as root without a postgres user"
    fi
    # Only our own servers may reach the services and tools.
    local v
    for v in $(env | sed -n 's/^\(SECKILL_[A-Z_]*\)=.*/\1/p'); do
        [ "$v" = SECKILL_BIN_DIR ] || [ "$v" = SECKILL_SOURCE_DIR ] || unset "$v"
    done
}

# ---- Redis (AOF on, appendfsync always) ----

fault_start_redis() {
    FAULT_REDIS_PORT=${FAULT_REDIS_PORT:-$(e2e_free_port)}
    mkdir -p "$E2E_TMP/redis"
    redis-server --port "$FAULT_REDIS_PORT" --bind 127.0.0.1 --dir "$E2E_TMP/redis" \
        --appendonly yes --appendfsync always --save "" --daemonize no \
        --logfile "$E2E_TMP/redis.log" </dev/null >/dev/null 2>&1 &
    FAULT_REDIS_PID=$!
    E2E_PIDS+=("$FAULT_REDIS_PID")
    e2e_wait 20 "redis-server on $FAULT_REDIS_PORT" fault_rcli PING
    SECKILL_REDIS_URL="redis://127.0.0.1:$FAULT_REDIS_PORT"
    e2e_log "redis up (pid $FAULT_REDIS_PID, port $FAULT_REDIS_PORT, AOF)"
}

fault_rcli() { redis-cli -p "$FAULT_REDIS_PORT" "$@"; }

# fault_kill_redis: SIGKILL (a crash: with appendfsync always, every answered write is in the AOF).
fault_kill_redis() {
    kill -KILL "$FAULT_REDIS_PID"
    wait "$FAULT_REDIS_PID" 2>/dev/null || true
    e2e_log "redis killed (SIGKILL)"
}

# ---- PostgreSQL (a throwaway cluster; the consumer applies the schema) ----

fault_start_pg() {
    FAULT_PG_DIR=$(mktemp -d /tmp/seckill-fault-pg.XXXXXX)
    chmod 755 "$FAULT_PG_DIR"
    [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$FAULT_PG_DIR"
    sk_as_pg "$FAULT_PG_BIN/initdb" -D "$FAULT_PG_DIR/data" -U postgres --auth=trust \
        --no-sync -E UTF8 >"$E2E_TMP/initdb.log" 2>&1 || e2e_fail "initdb: $(tail -n 3 "$E2E_TMP/initdb.log")"
    # A port can be taken between the probe and the bind: try three.
    local try
    for try in 1 2 3; do
        FAULT_PG_PORT=$(e2e_free_port)
        SECKILL_PG="host=127.0.0.1 port=$FAULT_PG_PORT user=postgres dbname=postgres"
        fault_pg_start_once && return 0
        e2e_log "PostgreSQL did not start on $FAULT_PG_PORT (try $try): $(tail -n 2 "$FAULT_PG_DIR/log")"
    done
    e2e_fail "PostgreSQL did not start"
}

fault_pg_start_once() {
    sk_as_pg "$FAULT_PG_BIN/pg_ctl" -D "$FAULT_PG_DIR/data" -l "$FAULT_PG_DIR/log" -w -t 60 \
        -o "-p $FAULT_PG_PORT -k $FAULT_PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50 -c wal_level=logical" \
        start >/dev/null || return 1
    e2e_log "postgresql up (port $FAULT_PG_PORT)"
}

# fault_pg_up: starts the stopped cluster again on its port.
fault_pg_up() {
    fault_pg_start_once || e2e_fail "PostgreSQL did not start again: $(tail -n 5 "$FAULT_PG_DIR/log")"
}

fault_pg_down() {
    sk_as_pg "$FAULT_PG_BIN/pg_ctl" -D "$FAULT_PG_DIR/data" -m fast -w stop >/dev/null ||
        e2e_fail "PostgreSQL did not stop"
    e2e_log "postgresql stopped"
}

fault_psql() { psql "$SECKILL_PG" -v ON_ERROR_STOP=1 -qtAc "$1"; }

# ---- the services ----

# fault_start_consumer NAME [ENV=VALUE...]: a consumer of the test's group; its pid in
# FAULT_PID_<NAME> and its port in FAULT_PORT_<NAME>. Session 6 s: after a kill -9 the
# group moves the dead member's partitions once its session expires.
fault_start_consumer() {
    local name=$1 port
    shift
    port=$(e2e_free_port)
    env SECKILL_HTTP_PORT="$port" SECKILL_KAFKA_BROKERS="$E2E_BROKERS" SECKILL_PG="$SECKILL_PG" \
        SECKILL_GROUP_ID="$FAULT_GROUP" SECKILL_KAFKA_SESSION_TIMEOUT_MS=6000 \
        SECKILL_KAFKA_HEARTBEAT_INTERVAL_MS=500 SECKILL_BATCH_MS=5 SECKILL_RETRY_MAX_MS=1000 \
        "$@" "$BIN/seckill-consumer" >>"$E2E_TMP/$name.log" 2>&1 &
    local pid=$!
    FAULT_SVC_PIDS+=("$pid")
    printf -v "FAULT_PID_$name" %s "$pid"
    printf -v "FAULT_PORT_$name" %s "$port"
    e2e_wait 60 "$name /healthz" curl -fsS "http://127.0.0.1:$port/healthz"
    e2e_log "$name up (pid $pid, port $port)"
}

# fault_start_order NAME [ENV=VALUE...]: a seckill-order on the private servers; a
# restart under the same NAME keeps its port (the load generator reconnects to it).
fault_start_order() {
    local name=$1 port_var="FAULT_PORT_$1"
    shift
    local port=${!port_var:-$(e2e_free_port)}
    env SECKILL_HTTP_PORT="$port" SECKILL_HTTP_BIND=127.0.0.1 SECKILL_KAFKA_BROKERS="$E2E_BROKERS" \
        SECKILL_REDIS_URL="$SECKILL_REDIS_URL" SECKILL_PG="$SECKILL_PG" SECKILL_JWT_SECRET="$E2E_SECRET" \
        SECKILL_KAFKA_MESSAGE_TIMEOUT_MS=$FAULT_MSG_TIMEOUT_MS SECKILL_REDIS_TIMEOUT_MS=$FAULT_REDIS_TIMEOUT_MS \
        SECKILL_RECONCILE_INTERVAL_MS=$FAULT_RECON_INTERVAL_MS SECKILL_RECONCILE_MARGIN_MS=$FAULT_RECON_MARGIN_MS \
        SECKILL_RECONCILE_LOCK_TIMEOUT_MS=$FAULT_RECON_LOCK_MS SECKILL_GROUP_ID="$FAULT_GROUP" \
        SECKILL_RATELIMIT_MODE=off "$@" "$BIN/seckill-order" >>"$E2E_TMP/$name.log" 2>&1 &
    local pid=$!
    FAULT_SVC_PIDS+=("$pid")
    printf -v "FAULT_PID_$name" %s "$pid"
    printf -v "FAULT_PORT_$name" %s "$port"
    e2e_wait 60 "$name /healthz" curl -fsS "http://127.0.0.1:$port/healthz"
    e2e_wait 60 "$name /readyz" curl -fsS "http://127.0.0.1:$port/readyz"
    e2e_log "$name up (pid $pid, port $port)"
}

# fault_kill9 NAME: SIGKILL of a service started above, reaped.
fault_kill9() {
    local pid_var="FAULT_PID_$1"
    kill -KILL "${!pid_var}"
    wait "${!pid_var}" 2>/dev/null || true
    e2e_log "$1 killed (SIGKILL, pid ${!pid_var})"
}

# fault_metric NAME METRIC: a sample of a service's /metrics (empty when unreachable).
fault_metric() {
    local port_var="FAULT_PORT_$1"
    curl -fsS "http://127.0.0.1:${!port_var}/metrics" 2>/dev/null |
        awk -v m="$2" '$1 == m { print $2; exit }'
}

fault_metric_is() { [ "$(fault_metric "$1" "$2")" = "$3" ]; }

# fault_up: Redis, PostgreSQL, the dev Kafka, one consumer ("consumer") whose start
# applies the schema, and the seckill-order instances named in $@ (default "order").
fault_up() {
    fault_start_redis
    fault_start_pg
    e2e_start_kafka
    fault_start_consumer consumer
    local n
    for n in "${@:-order}"; do
        fault_start_order "$n"
        FAULT_URLS=${FAULT_URLS:+$FAULT_URLS,}http://127.0.0.1:$(eval echo "\$FAULT_PORT_$n")
    done
}

# ---- load and verdict ----

# fault_bench ARGS...: seckill-bench over every front in FAULT_URLS, output in $E2E_TMP/out.
fault_bench() {
    SECKILL_JWT_SECRET=$E2E_SECRET "$BIN/seckill-bench" --http "$FAULT_URLS" --pg "$SECKILL_PG" \
        --out "$E2E_TMP/out" --progress false "$@"
}

# fault_bench_bg ARGS...: the same in the background (pid in FAULT_BENCH_PID); returns
# once the event exists (its id in FAULT_EVENT).
fault_bench_bg() {
    fault_bench "$@" >"$E2E_TMP/bench.out" 2>"$E2E_TMP/bench.log" &
    FAULT_BENCH_PID=$!
    FAULT_SVC_PIDS+=("$FAULT_BENCH_PID")
    e2e_wait 30 "the bench's event" test -s "$E2E_TMP/out/event_id"
    FAULT_EVENT=$(cat "$E2E_TMP/out/event_id")
    e2e_log "burst on event $FAULT_EVENT"
}

fault_bench_wait() {
    wait "$FAULT_BENCH_PID" || e2e_fail "seckill-bench failed: $(tail -n 5 "$E2E_TMP/bench.log")"
    cat "$E2E_TMP/bench.out" >&2
}

# fault_warmup: e2e_warmup through every front, before the burst.
fault_warmup() { e2e_warmup fault_bench fault-warmup; }

# fault_key KIND: the event's Redis key (stock, buyers, pending, meta).
fault_key() { echo "seckill:{e$FAULT_EVENT}:$1"; }

fault_stock() { fault_rcli GET "$(fault_key stock)"; }

# fault_sold_at_least N: at least N units reserved in Redis (the burst is under way).
fault_sold_at_least() {
    local s
    s=$(fault_stock) || return 1
    [ -n "$s" ] && [ $((FAULT_STOCK - s)) -ge "$1" ]
}

# fault_lat STATUS CODE FIELD: p50_ms, p90_ms, p99_ms or max_ms of one answer class
# from the bench's outcomes.csv (empty when the class never occurred).
fault_lat() {
    awk -F, -v s="$1" -v c="$2" -v f="$3" \
        'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
         $1 == s && $2 == c { print $(col[f]); exit }' "$E2E_TMP/out/outcomes.csv"
}

# fault_timeline_sum COLUMN FROM_MS TO_MS: the sum of a timeline.csv column over the
# buckets that end between two wall-clock instants (ms since the epoch).
fault_timeline_sum() {
    local start
    start=$(e2e_summary start_unix_ms)
    awk -F, -v c="$1" -v a="$2" -v b="$3" -v s="$start" \
        'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
         { t = s + $1 * 1000; if (t > a && t <= b) n += $(col[c]) } END { print n + 0 }' \
        "$E2E_TMP/out/timeline.csv"
}

fault_now_ms() { date +%s%3N; }

pending_empty() { [ "$(fault_rcli HLEN "$(fault_key pending)")" -eq 0 ]; }

# fault_wait_pending_empty SECONDS: the reconciler has confirmed or cancelled every
# reservation of the event (seckill-check's own wait ends early once nothing moves for
# its settle time, which a reconciler waiting out message.timeout.ms could outlast).
fault_wait_pending_empty() {
    e2e_wait "$1" "no reservation pending for the event" pending_empty
}

# fault_check: seckill-check against the private servers, with its report in the log.
fault_check() {
    e2e_check --wait 60 --settle 3 "$@" | tee "$E2E_TMP/check.out" >&2
    return "${PIPESTATUS[0]}"
}

# fault_broker_outage_verdict DOWN_AT_MS UP_AT_MS: the verdict of a Kafka broker outage
# during a burst (fault_bench_bg then fault_bench_wait), shared by tests/fault/broker_down.sh
# (devkafka's broker down) and tests/kafka/broker_kill.sh (kill -9 of Apache Kafka):
# some 503s (the fault landed mid-burst), every request answered, no 202 answered while
# the broker was down, 202s again after it. 1 s of slack after DOWN_AT: a 202 whose
# acknowledgement came just before the outage may be answered just after.
fault_broker_outage_verdict() {
    local down_at=$1 up_at=$2 n503 during after
    n503=$(e2e_outcome "503 unavailable")
    e2e_log "503s: $n503 (p50 $(fault_lat 503 unavailable p50_ms) ms, p90 $(fault_lat 503 unavailable p90_ms) ms, max $(fault_lat 503 unavailable max_ms) ms)"
    [ "$n503" -gt 0 ] || e2e_fail "no 503 while the broker was down: the fault did not land mid-burst"
    [ "$(e2e_outcome "0 io")" -eq 0 ] || e2e_fail "requests got no answer"
    during=$(fault_timeline_sum ok_202 "$((down_at + 1000))" "$up_at")
    [ "$during" -eq 0 ] || e2e_fail "$during 202s answered while the broker was down"
    after=$(fault_timeline_sum ok_202 "$up_at" 99999999999999)
    [ "$after" -gt 0 ] || e2e_fail "no 202 after the broker came back"
    e2e_log "no 202 while the broker was down, $after after it"
}
