#!/usr/bin/env bash
# deploy/local.sh: the local stack of seckill on one Debian 12 machine.
#
#   deploy/local.sh deps|build|up|down|status|test|demo|bench [args]
#
# deps    installs the Debian packages the project needs (a no-op when present)
# build   configures and builds the optimised tree into build/
# up      starts a private Redis (AOF, appendfsync always) and PostgreSQL under .run/,
#         then Apache Kafka (KRaft, deploy/kafka/), seckill-consumer and seckill-order
#         when they are built, and writes .run/env (export lines for every address).
#         Twice is harmless. --cluster: also a Redis Cluster (3 masters + 3 replicas),
#         which becomes SECKILL_REDIS_URL; --fronts N: N seckill-order instances
#         (SECKILL_HTTP_LIST); --kafka-nodes 3: a 3-node Kafka cluster (replication
#         factor 3, min.insync.replicas 2); --dev-kafka (or SECKILL_DEV_KAFKA=1): the
#         in-memory seckill-devkafka instead of Apache Kafka; --sentinel: also Redis
#         behind Sentinel (deploy/sentinel.sh: a master, 2 replicas, 3 sentinels), whose
#         redis-sentinel:// URL becomes SECKILL_REDIS_URL (not with --cluster).
#         The shape asked for is the flags given (none: single Redis, one front, Apache
#         Kafka on 1 node, or the dev Kafka with SECKILL_DEV_KAFKA=1). When a stack of
#         another shape runs, `up` says what differs and restarts into the shape asked
#         for: the fronts restart, the Kafka side restarts when it differs (a Redis
#         Cluster no longer asked for keeps running until `down`). To keep the running
#         shape, repeat its flags (`status` shows them), or `down` first for a fresh one.
#         A port the stack needs that something else holds stops `up` with the port
#         and its holder (from ss -ltnp).
# down    stops only what `up` started          status  says what runs
# test    deps, a sanitizer build in build-asan/, its own stack (.run/test, other
#         ports), the whole ctest suite (extra args go to ctest), down; exits with ctest's
#         status. Interrupted (SIGINT, SIGTERM, a timeout), it stops ctest and its stack.
#         SECKILL_TEST_BUILD=0: no deps, no build (the build directory as it is);
#         SECKILL_TEST_RUN_DIR: the test stack's run directory instead of .run/test.
# demo    deps, build, up, then the main job (--cluster, --fronts N, --kafka-nodes N,
#         --dev-kafka as for up; --down: down after it; --challenge: the event has a
#         proof-of-work challenge, bench/demo.sh)
# bench   deps, build, up (keeping the running stack's shape), every bench/bench-*.sh but
#         the soak and the cluster one; `bench NAME...` runs only bench/bench-NAME.sh
#         (e.g. `bench order`, `bench soak`); `bench --cluster` is `bench cluster` (single
#         Redis beside the cluster)
# An unknown flag or argument is refused with exit status 2 (test's go to ctest).
#
# Ports (override by environment): SECKILL_REDIS_PORT=16379 SECKILL_PG_PORT=15432
# SECKILL_HTTP_PORT=18080 SECKILL_CONSUMER_HTTP_PORT=18081 SECKILL_CLUSTER_PORT=17001
# (nodes on 17001-17006, their cluster bus +100) SECKILL_BROKER_PORT=19092 (node i on
# +2(i-1), its controller on the next port). --sentinel's set: its master on
# SECKILL_REDIS_PORT+1, replicas +2 and +3, sentinels +4 .. +6 (master name seckill).
# The test stack adds 10000.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=deploy/lib.sh
. "$ROOT/deploy/lib.sh"
# shellcheck source=deploy/deps.sh
. "$ROOT/deploy/deps.sh" # the pinned tools beside the packages: toxiproxy_deps, web_deps
BUILD_DIR=${SECKILL_BUILD_DIR:-$ROOT/build}
RUN=${SECKILL_RUN_DIR:-$ROOT/.run}
REDIS_PORT=${SECKILL_REDIS_PORT:-16379}
PG_PORT=${SECKILL_PG_PORT:-15432}
HTTP_PORT=${SECKILL_HTTP_PORT:-18080}
CONSUMER_HTTP_PORT=${SECKILL_CONSUMER_HTTP_PORT:-18081}
CLUSTER_PORT=${SECKILL_CLUSTER_PORT:-17001}
KAFKA_PORT=${SECKILL_BROKER_PORT:-19092}
KAFKA_SH=$ROOT/deploy/kafka/kafka.sh
CLUSTER_SH=$ROOT/deploy/cluster.sh
CLUSTER_NODES=6 # 3 masters + 3 replicas
# Set by --cluster / --fronts N (stack_flags); remembered in $RUN/stack until `down`.
CLUSTER=0
SENTINEL=0
SENTINEL_SH=$ROOT/deploy/sentinel.sh
FRONTS=1
KAFKA_NODES=1
DEV_KAFKA=${SECKILL_DEV_KAFKA:-0}

PACKAGES=(build-essential cmake pkg-config clang libclang-rt-14-dev curl ca-certificates
    libhiredis-dev librdkafka-dev libpq-dev libcmocka-dev libevent-dev libjansson-dev libssl-dev
    redis-server redis-tools redis-sentinel postgresql gnuplot-nox wrk chromium python3-venv nginx-core
    openjdk-17-jdk-headless maven # Apache Kafka's broker (deploy/kafka/) and its fetch; the Redisson drivers (a JDK: javac)
    golang-go) # the Go drivers of bench lock (redsync) and bench idgen (Sonyflake), modules pinned by go.sum

log() { printf '[local.sh] %s\n' "$*" >&2; }
die() { printf '[local.sh] error: %s\n' "$*" >&2; exit 1; }
usage_die() { printf '[local.sh] error: %s (deploy/local.sh with no argument prints the usage)\n' "$*" >&2; exit 2; }

# port_free_or_die PORT WHAT: before starting WHAT on PORT, name whatever holds it.
port_free_or_die() {
    local who
    if who=$(sk_port_holder "$1"); then
        die "port $1, needed for $2, is taken by $who (stop it, or move the stack: SECKILL_*_PORT)"
    fi
}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# PostgreSQL refuses to run as root: its tools go through sk_as_pg (deploy/lib.sh).
pg_bin() { sk_pg_bin || die "PostgreSQL server binaries not found (run: deploy/local.sh deps)"; }

cmd_deps() {
    local missing=() p
    # Node.js for the web tests: Debian's, unless the machine already has one (a
    # NodeSource nodejs bundles npm and conflicts with Debian's npm package).
    command -v node >/dev/null 2>&1 || PACKAGES+=(nodejs npm)
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    if [ ${#missing[@]} -eq 0 ]; then
        log "deps: all ${#PACKAGES[@]} packages present"
    else
        log "deps: installing ${missing[*]}"
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
        # Debian starts a system redis-server/postgresql on install; ours use other ports.
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    # Except Debian's sentinel: it listens on 26379, the test stack's Redis port (16379 +
    # 10000). Our sentinels (up --sentinel) run from their own configuration.
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active -q redis-sentinel 2>/dev/null; then
        log "deps: stopping and disabling Debian's redis-sentinel service (it holds port 26379)"
        as_root systemctl disable --now redis-sentinel >/dev/null 2>&1 || true
    elif pgrep -u redis -x redis-sentinel >/dev/null 2>&1; then # no systemd: its init script
        as_root service redis-sentinel stop >/dev/null 2>&1 || true
    fi
    # Apache Kafka's jars from Maven Central (cached in deploy/kafka/lib).
    "$KAFKA_SH" fetch
    web_deps
    # Sonyflake at the version bench/sonyflake/go.mod pins (go.sum checks it).
    (cd "$ROOT/bench/sonyflake" && go mod download)
    toxiproxy_deps
}

# build DIR [cmake args...]
build_into() {
    local dir=$1
    shift
    cmake -S "$ROOT" -B "$dir" "$@" >/dev/null
    cmake --build "$dir" -j "$(nproc)"
}

cmd_build() {
    build_into "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release
}

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# wait_for DESCRIPTION SECONDS COMMAND...: polls a condition, never a blind sleep.
wait_for() {
    local what=$1 secs=$2
    shift 2
    sk_wait "$secs" "$@" || die "$what did not come up within ${secs}s (logs: $RUN/logs)"
}

# PONG, not just an answer: while it loads its AOF, Redis answers PING with a LOADING
# error (redis-cli still exits 0), and every script loaded then is lost.
redis_ready() { [ "$(redis-cli -p "$1" ping 2>/dev/null)" = PONG ]; }

redis_up() {
    mkdir -p "$RUN/redis" "$RUN/logs"
    if pid_alive "$RUN/redis.pid"; then
        wait_for "redis" 120 redis_ready "$REDIS_PORT"
        log "redis: already running on $REDIS_PORT"
        return 0
    fi
    port_free_or_die "$REDIS_PORT" redis
    # appendfsync always: libidgen's no-reissue guarantee needs every INCRBY on disk
    # before its reply (see idgen/README.md). AOF on, RDB snapshots off.
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$RUN/redis" \
        --appendonly yes --appendfsync always --save "" \
        --daemonize yes --pidfile "$RUN/redis.pid" --logfile "$RUN/logs/redis.log"
    wait_for "redis" 120 redis_ready "$REDIS_PORT"
    log "redis: up on 127.0.0.1:$REDIS_PORT"
}

# The Redis Cluster of `up --cluster`: deploy/cluster.sh's, profile stack (AOF with
# appendfsync always like the single Redis; node timeout SECKILL_CLUSTER_NODE_TIMEOUT,
# 3000 ms), nodes on CLUSTER_PORT .. +5, state in $RUN/cluster (kept by `down`).
cluster_ports() { seq "$CLUSTER_PORT" $((CLUSTER_PORT + CLUSTER_NODES - 1)); }

cluster_url() {
    local p u=""
    for p in $(cluster_ports); do u="$u${u:+,}127.0.0.1:$p"; done
    echo "redis-cluster://$u"
}

cluster_running() {
    local p
    for p in $(cluster_ports); do pid_alive "$RUN/cluster/node-$p.pid" && return 0; done
    return 1
}

cluster_up() {
    "$CLUSTER_SH" up "$RUN/cluster" "$CLUSTER_PORT" --profile stack >/dev/null ||
        die "the redis cluster did not come up (logs: $RUN/cluster/node-*.log)"
    log "redis cluster: up on 127.0.0.1:$CLUSTER_PORT-$((CLUSTER_PORT + CLUSTER_NODES - 1)) (3 masters + 3 replicas)"
}

# Redis behind Sentinel (`up --sentinel`): deploy/sentinel.sh's set, state in
# $RUN/sentinel (kept by `down`), down-after-milliseconds 5000.
sentinel_running() {
    local f
    for f in "$RUN"/sentinel/*.pid; do pid_alive "$f" && return 0; done
    return 1
}

sentinel_set_up() {
    local base=$((REDIS_PORT + 1)) p
    if ! sentinel_running; then
        for p in $(seq "$base" $((base + 5))); do port_free_or_die "$p" "redis behind sentinel"; done
    fi
    "$SENTINEL_SH" up "$RUN/sentinel" "$base" >/dev/null ||
        die "redis behind sentinel did not come up (logs: $RUN/sentinel/*.log)"
    log "redis behind sentinel: $("$SENTINEL_SH" url "$RUN/sentinel") (master first on $base)"
}

sentinel_set_down() {
    sentinel_running || return 0
    "$SENTINEL_SH" down "$RUN/sentinel"
    log "redis behind sentinel: stopped"
}

cluster_down() {
    cluster_running || return 0
    "$CLUSTER_SH" down "$RUN/cluster"
    log "redis cluster: stopped"
}

pg_dir() {
    # The data directory lives outside the work tree: a clone in a 0700 temporary
    # directory cannot be entered by the postgres user.
    if [ -f "$RUN/pgdir" ] && [ -d "$(cat "$RUN/pgdir")" ]; then
        cat "$RUN/pgdir"
        return
    fi
    local d
    d=$(mktemp -d /tmp/seckill-pg.XXXXXX)
    chmod 755 "$d"
    [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$d"
    echo "$d" >"$RUN/pgdir"
    echo "$d"
}

# The server settings are SK_PG_TUNING (deploy/lib.sh says why each).
pg_up() {
    mkdir -p "$RUN/logs"
    local bin dir
    bin=$(pg_bin)
    dir=$(pg_dir)
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        # trust on loopback only: a throwaway dev/test cluster. Real deployments use
        # passwords and sslmode through the conninfo (README, Configuration).
        sk_as_pg "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
        mkdir -p "$dir/sock"
        [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$dir/sock"
    fi
    if sk_as_pg "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        log "postgresql: already running on $PG_PORT"
    else
        port_free_or_die "$PG_PORT" postgresql
        sk_as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
            -o "-p $PG_PORT -k $dir/sock -c listen_addresses=127.0.0.1 -c max_connections=200 $SK_PG_TUNING" start >/dev/null
        log "postgresql: up on 127.0.0.1:$PG_PORT"
    fi
    wait_for "postgresql" 30 "$bin/pg_isready" -h 127.0.0.1 -p "$PG_PORT"
    if ! psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -tAc "select 1 from pg_roles where rolname='seckill'" | grep -q 1; then
        psql -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -c "create role seckill login" >/dev/null
    fi
    # REPLICATION: the consumer reads the order transitions from a logical slot (issue 36).
    psql -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -c "alter role seckill replication" >/dev/null
    if ! psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -tAc "select 1 from pg_database where datname='seckill'" | grep -q 1; then
        psql -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -c "create database seckill owner seckill" >/dev/null
    fi
}

# start_service NAME HEALTH_CMD... -- BINARY ARGS...: a background service with a pid file.
start_service() {
    local name=$1
    shift
    local health=()
    while [ "$1" != "--" ]; do health+=("$1"); shift; done
    shift
    if pid_alive "$RUN/$name.pid"; then
        log "$name: already running"
        return 0
    fi
    [ -z "${SERVICE_PORT:-}" ] || port_free_or_die "$SERVICE_PORT" "$name"
    # setsid: the service outlives this script; its stderr is its log.
    setsid "$@" >>"$RUN/logs/$name.log" 2>&1 </dev/null &
    echo $! >"$RUN/$name.pid"
    wait_for "$name" 60 "${health[@]}"
    log "$name: up (pid $(cat "$RUN/$name.pid"))"
}

stop_service() {
    local name=$1 pidf="$RUN/$1.pid"
    pid_alive "$pidf" || { rm -f "$pidf"; return 0; }
    local pid
    pid=$(cat "$pidf")
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + 20))
    while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        log "$name: did not stop on SIGTERM within 20s, killing"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$pidf"
    log "$name: stopped"
}

# Fronts: instance 1 is `seckill-order` on HTTP_PORT (as without --fronts), instance i
# is `seckill-order-i` on the next ports, skipping the consumer's.
front_name() { if [ "$1" -eq 1 ]; then echo seckill-order; else echo "seckill-order-$1"; fi; }
front_port() {
    local p=$((HTTP_PORT + $1 - 1))
    if [ "$CONSUMER_HTTP_PORT" -ge "$HTTP_PORT" ] && [ "$p" -ge "$CONSUMER_HTTP_PORT" ]; then p=$((p + 1)); fi
    echo "$p"
}

# The fronts that run, in order (1, then 2.. as long as their pid files say so).
fronts_running() {
    local i=1
    while pid_alive "$RUN/$(front_name $i).pid"; do echo $i; i=$((i + 1)); done
}

fronts_down() {
    local f
    for f in "$RUN"/seckill-order-*.pid; do
        [ -e "$f" ] || continue
        f=$(basename "$f" .pid)
        stop_service "$f"
    done
    stop_service seckill-order
}

# stack_flags [--extra FLAG]... -- ARGS...: takes --cluster, --fronts N, --kafka-nodes N
# and --dev-kafka off ARGS; the FLAGs named by --extra (a subcommand's own, e.g. demo's
# --down) are left in STACK_ARGS; anything else is refused (exit 2). Without any shape
# flag the shape is the default one, or the running stack's ($RUN/stack, removed by
# `down`) when KEEP_SHAPE=1 (bench).
stack_flags() {
    STACK_ARGS=()
    local extra=() given=0
    while [ "${1:-}" = --extra ]; do extra+=("$2"); shift 2; done
    [ "${1:-}" = -- ] && shift
    while [ $# -gt 0 ]; do
        case $1 in
        --cluster) CLUSTER=1 given=1 ;;
        --sentinel) SENTINEL=1 given=1 ;;
        --fronts | --fronts=*)
            local n
            if [ "$1" = --fronts ]; then n=${2:-}; shift; else n=${1#--fronts=}; fi
            [[ $n =~ ^[1-9][0-9]?$ ]] || usage_die "--fronts takes a number from 1 to 99"
            FRONTS=$n given=1
            ;;
        --kafka-nodes | --kafka-nodes=*)
            local k
            if [ "$1" = --kafka-nodes ]; then k=${2:-}; shift; else k=${1#--kafka-nodes=}; fi
            [[ $k =~ ^[13]$ ]] || usage_die "--kafka-nodes takes 1 or 3"
            KAFKA_NODES=$k given=1
            ;;
        --dev-kafka) DEV_KAFKA=1 given=1 ;;
        *)
            local e ok=0
            for e in "${extra[@]}"; do [ "$1" = "$e" ] && ok=1; done
            [ $ok -eq 1 ] || usage_die "$CMD: unknown flag or argument '$1' (flags: --cluster, --sentinel, --fronts N, --kafka-nodes 1|3, --dev-kafka${extra[*]:+, ${extra[*]}})"
            STACK_ARGS+=("$1")
            ;;
        esac
        shift
    done
    [ "$CLUSTER" = 1 ] && [ "$SENTINEL" = 1 ] && usage_die "--cluster and --sentinel: one Redis for the services, not both"
    if [ $given -eq 0 ] && [ "${KEEP_SHAPE:-0}" = 1 ] && [ -f "$RUN/stack" ]; then
        # shellcheck disable=SC1091
        . "$RUN/stack"
    fi
}

# shape_words CLUSTER FRONTS KAFKA_NODES DEV_KAFKA [SENTINEL]: a stack's shape in words.
shape_words() {
    local w
    if [ "$1" = 1 ]; then w="redis cluster"; elif [ "${5:-0}" = 1 ]; then w="redis behind sentinel"; else w="single redis"; fi
    w="$w, $2 front(s), "
    if [ "$4" = 1 ]; then w="${w}dev kafka"; else w="${w}apache kafka on $3 node(s)"; fi
    echo "$w"
}

# Apache Kafka (KRaft) of `up`: deploy/kafka/kafka.sh with its state in $RUN/kafka-N
# (formatted once, kept by `down`), then the deployment's topics.
kafka_up() {
    local dir="$RUN/kafka-$KAFKA_NODES" t0=$SECONDS
    rm -f "$RUN/kafka.control"
    "$KAFKA_SH" start "$dir" "$KAFKA_PORT" "$KAFKA_NODES" 2>>"$RUN/logs/kafka.log" ||
        die "kafka did not start (see $RUN/logs/kafka.log and $dir/node-*.log)"
    "$KAFKA_SH" topic "$dir" seckill.orders 6 && "$KAFKA_SH" topic "$dir" seckill.orders.dlq 6 &&
        "$KAFKA_SH" topic "$dir" seckill.order-events 6 ||
        die "kafka: the topics could not be created (see $dir/node-*.log)"
    "$KAFKA_SH" bootstrap "$dir" >"$RUN/kafka.bootstrap"
    log "kafka: $KAFKA_NODES node(s) on $(cat "$RUN/kafka.bootstrap"), topics ready after $((SECONDS - t0)) s"
}

kafka_down() {
    stop_service seckill-devkafka
    local k
    for k in 1 3; do
        if "$KAFKA_SH" running "$RUN/kafka-$k" >/dev/null 2>&1; then
            "$KAFKA_SH" stop "$RUN/kafka-$k"
            log "kafka: stopped ($k node(s))"
        fi
    done
    rm -f "$RUN/kafka.bootstrap" "$RUN/kafka.control"
}

write_env() {
    local f="$RUN/env"
    {
        echo "# written by deploy/local.sh up: source it to reach the local stack"
        if [ "$CLUSTER" -eq 1 ] && cluster_running; then
            echo "export SECKILL_REDIS_URL=$(cluster_url)"
        elif [ "$SENTINEL" -eq 1 ] && sentinel_running; then
            echo "export SECKILL_REDIS_URL=$("$SENTINEL_SH" url "$RUN/sentinel")"
        else
            echo "export SECKILL_REDIS_URL=redis://127.0.0.1:$REDIS_PORT"
        fi
        if sentinel_running; then
            echo "export SECKILL_REDIS_SENTINEL_URL=$("$SENTINEL_SH" url "$RUN/sentinel")"
        fi
        if cluster_running; then
            echo "export SECKILL_REDIS_CLUSTER_URL=$(cluster_url)"
            echo "export SECKILL_CLUSTER_PORT=$CLUSTER_PORT"
        fi
        echo "export SECKILL_PG='host=127.0.0.1 port=$PG_PORT dbname=seckill user=seckill'"
        echo "export SECKILL_PG_ADMIN='host=127.0.0.1 port=$PG_PORT dbname=seckill user=postgres'"
        echo "export SECKILL_REDIS_PORT=$REDIS_PORT"
        echo "export SECKILL_PG_PORT=$PG_PORT"
        echo "export SECKILL_RUN_DIR=$RUN"
        echo "export SECKILL_BIN_DIR=$BUILD_DIR/bin"
        if [ -f "$RUN/kafka.bootstrap" ]; then
            echo "export SECKILL_KAFKA_BROKERS=$(cat "$RUN/kafka.bootstrap")"
        fi
        if [ -f "$RUN/kafka.control" ]; then
            # The dev Kafka's fault-injection port (see deploy/devkafka/devkafka.c).
            echo "export SECKILL_DEVKAFKA_CONTROL=$(cat "$RUN/kafka.control")"
        fi
        if [ -f "$RUN/jwt.secret" ]; then
            echo "export SECKILL_JWT_SECRET=$(cat "$RUN/jwt.secret")"
        fi
        if [ -f "$RUN/msg.key" ]; then
            # order.msg_keys: the order messages' MAC key, the fronts' and the consumer's
            echo "export SECKILL_ORDER_MSG_KEYS=$(cat "$RUN/msg.key")"
        fi
        if pid_alive "$RUN/seckill-order.pid"; then
            echo "export SECKILL_HTTP=http://127.0.0.1:$HTTP_PORT"
            local i list=""
            for i in $(fronts_running); do list="$list${list:+,}http://127.0.0.1:$(front_port "$i")"; done
            echo "export SECKILL_HTTP_LIST=$list"
        fi
        if pid_alive "$RUN/seckill-consumer.pid"; then
            echo "export SECKILL_CONSUMER_HTTP=http://127.0.0.1:$CONSUMER_HTTP_PORT"
        fi
    } >"$f.tmp"
    mv "$f.tmp" "$f"
}

cmd_up() {
    stack_flags -- "$@"
    mkdir -p "$RUN/logs"
    local want="CLUSTER=$CLUSTER FRONTS=$FRONTS KAFKA_NODES=$KAFKA_NODES DEV_KAFKA=$DEV_KAFKA SENTINEL=$SENTINEL"
    if [ -f "$RUN/stack" ] && [ "$(cat "$RUN/stack")" != "$want" ]; then
        # Another shape than the running stack's: the fronts restart on the new Redis,
        # the services on the new Kafka.
        local was
        was=$(
            # shellcheck disable=SC1091
            . "$RUN/stack"
            shape_words "$CLUSTER" "$FRONTS" "$KAFKA_NODES" "$DEV_KAFKA" "$SENTINEL"
        )
        log "up: the running stack is '$was'; restarting into '$(shape_words "$CLUSTER" "$FRONTS" "$KAFKA_NODES" "$DEV_KAFKA" "$SENTINEL")' as asked (to keep it, give its flags; for a fresh stack, 'down' first)"
        fronts_down
        case "$(cat "$RUN/stack")" in *"KAFKA_NODES=$KAFKA_NODES DEV_KAFKA=$DEV_KAFKA"*) ;; *)
            stop_service seckill-consumer
            kafka_down
            ;;
        esac
    fi
    echo "$want" >"$RUN/stack"
    redis_up
    [ "$CLUSTER" -eq 1 ] && cluster_up
    [ "$SENTINEL" -eq 1 ] && sentinel_set_up
    pg_up
    local bin="$BUILD_DIR/bin"
    if [ "$DEV_KAFKA" = 1 ]; then
        if [ -x "$bin/seckill-devkafka" ]; then
            rm -f "$RUN/kafka.bootstrap.new"
            pid_alive "$RUN/seckill-devkafka.pid" || rm -f "$RUN/kafka.bootstrap"
            start_service seckill-devkafka test -s "$RUN/kafka.bootstrap" -- \
                "$bin/seckill-devkafka" --bootstrap-file "$RUN/kafka.bootstrap" --control-file "$RUN/kafka.control"
        fi
    else
        kafka_up
    fi
    [ -f "$RUN/jwt.secret" ] || head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$RUN/jwt.secret"
    chmod 600 "$RUN/jwt.secret"
    # The order messages' MAC key (issue 33): generated once, shared by front and consumer.
    [ -f "$RUN/msg.key" ] || head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$RUN/msg.key"
    chmod 600 "$RUN/msg.key"
    write_env
    # shellcheck disable=SC1091
    . "$RUN/env"
    if [ -x "$bin/seckill-consumer" ] && [ -n "${SECKILL_KAFKA_BROKERS:-}" ]; then
        SERVICE_PORT=$CONSUMER_HTTP_PORT SECKILL_HTTP_PORT=$CONSUMER_HTTP_PORT start_service seckill-consumer \
            curl -fsS "http://127.0.0.1:$CONSUMER_HTTP_PORT/healthz" -- "$bin/seckill-consumer"
    fi
    if [ -x "$bin/seckill-order" ] && [ -n "${SECKILL_KAFKA_BROKERS:-}" ]; then
        local i port
        for ((i = 1; i <= FRONTS; i++)); do
            port=$(front_port $i)
            SERVICE_PORT=$port SECKILL_HTTP_PORT=$port start_service "$(front_name $i)" \
                curl -fsS "http://127.0.0.1:$port/healthz" -- "$bin/seckill-order"
        done
    fi
    write_env
    log "up: source $RUN/env to reach the stack"
}

cmd_down() {
    fronts_down
    stop_service seckill-consumer
    kafka_down
    if pid_alive "$RUN/redis.pid"; then
        # By its pid: Redis removes its pid file before it has exited.
        local rpid
        rpid=$(cat "$RUN/redis.pid")
        redis-cli -p "$REDIS_PORT" shutdown >/dev/null 2>&1 || kill "$rpid" 2>/dev/null || true
        local deadline=$((SECONDS + 20))
        while kill -0 "$rpid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
        log "redis: stopped"
    fi
    rm -f "$RUN/redis.pid"
    cluster_down
    sentinel_set_down
    if [ -f "$RUN/pgdir" ]; then
        local dir bin
        dir=$(cat "$RUN/pgdir")
        bin=$(pg_bin)
        if [ -d "$dir/data" ] && sk_as_pg "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
            sk_as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
            log "postgresql: stopped"
        fi
    fi
    rm -f "$RUN/env" "$RUN/stack"
}

cmd_status() {
    local name
    if [ -f "$RUN/stack" ]; then
        (
            # shellcheck disable=SC1091
            . "$RUN/stack"
            local f=""
            [ "$CLUSTER" = 1 ] && f="$f --cluster"
            [ "${SENTINEL:-0}" = 1 ] && f="$f --sentinel"
            [ "$FRONTS" -gt 1 ] && f="$f --fronts $FRONTS"
            [ "$KAFKA_NODES" = 3 ] && f="$f --kafka-nodes 3"
            [ "$DEV_KAFKA" = 1 ] && f="$f --dev-kafka"
            echo "shape            $(shape_words "$CLUSTER" "$FRONTS" "$KAFKA_NODES" "$DEV_KAFKA" "$SENTINEL") (up${f})"
        )
    fi
    pid_alive "$RUN/redis.pid" && echo "redis            running  127.0.0.1:$REDIS_PORT" || echo "redis            stopped"
    if [ -f "$RUN/pgdir" ] && sk_as_pg "$(pg_bin)/pg_ctl" -D "$(cat "$RUN/pgdir")/data" status >/dev/null 2>&1; then
        echo "postgresql       running  127.0.0.1:$PG_PORT"
    else
        echo "postgresql       stopped"
    fi
    if sentinel_running; then
        local sf p
        for sf in "$RUN"/sentinel/node-*.pid; do
            p=$(basename "$sf" .pid)
            p=${p#node-}
            printf '%-16s %s  127.0.0.1:%s %s\n' "redis-sentinel" "$(pid_alive "$sf" && echo running || echo stopped)" \
                "$p" "$(redis-cli -p "$p" role 2>/dev/null | head -n 1)"
        done
    fi
    if cluster_running; then
        local p
        for p in $(cluster_ports); do
            if pid_alive "$RUN/cluster/node-$p.pid"; then
                printf '%-16s running  127.0.0.1:%s %s\n' "redis-cluster" "$p" \
                    "$(redis-cli -p "$p" role 2>/dev/null | head -n 1)"
            else
                printf '%-16s stopped  127.0.0.1:%s\n' "redis-cluster" "$p"
            fi
        done
    fi
    local k
    for k in 1 3; do
        [ -f "$RUN/kafka-$k/cluster.conf" ] || continue
        if "$KAFKA_SH" running "$RUN/kafka-$k" >/dev/null 2>&1; then
            echo "kafka            running  $("$KAFKA_SH" bootstrap "$RUN/kafka-$k") (nodes $("$KAFKA_SH" running "$RUN/kafka-$k" | tr '\n' ' '))"
        fi
    done
    for name in seckill-devkafka seckill-consumer seckill-order; do
        if pid_alive "$RUN/$name.pid"; then
            printf '%-16s running  pid %s\n' "$name" "$(cat "$RUN/$name.pid")"
        else
            printf '%-16s stopped\n' "$name"
        fi
    done
    local f
    for f in "$RUN"/seckill-order-*.pid; do
        [ -e "$f" ] || continue
        name=$(basename "$f" .pid)
        if pid_alive "$f"; then
            printf '%-16s running  pid %s port %s\n' "$name" "$(cat "$f")" "$(front_port "${name##*-}")"
        fi
    done
}

# The test stack: its own run directory and ports, so a demo stack left up is untouched.
use_test_stack() {
    BUILD_DIR=${SECKILL_TEST_BUILD_DIR:-$ROOT/build-asan}
    RUN=${SECKILL_TEST_RUN_DIR:-$ROOT/.run/test}
    REDIS_PORT=$((REDIS_PORT + 10000))
    PG_PORT=$((PG_PORT + 10000))
    HTTP_PORT=$((HTTP_PORT + 10000))
    CONSUMER_HTTP_PORT=$((CONSUMER_HTTP_PORT + 10000))
    CLUSTER_PORT=$((CLUSTER_PORT + 10000))
    KAFKA_PORT=$((KAFKA_PORT + 10000))
    # The stack's tests inject protocol errors through the dev Kafka's control port; the
    # `kafka` label starts its own Apache Kafka (tests/kafka.cmake, a ctest fixture).
    DEV_KAFKA=1
}

# Stops the test stack (and ctest, when it runs) however `test` ends.
test_stop() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "${CTEST_PID:-}" ] && kill -0 "$CTEST_PID" 2>/dev/null; then
        log "test: interrupted: stopping ctest, its tests and the test stack"
        # The whole tree: ctest does not always stop the test it runs.
        local tree
        mapfile -t tree < <(sk_tree_pids "$CTEST_PID")
        kill -TERM "${tree[@]}" 2>/dev/null || true
        wait "$CTEST_PID" 2>/dev/null || true
    fi
    cmd_down >/dev/null 2>&1 || true
    exit $rc
}

cmd_test() {
    use_test_stack
    if [ "${SECKILL_TEST_BUILD:-1}" != 0 ]; then
        cmd_deps
        local werror=OFF
        [ -n "${CI:-}" ] && werror=ON
        build_into "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Debug -DSECKILL_SANITIZE=ON -DSECKILL_WERROR=$werror
    fi
    # Leaks are bugs: LeakSanitizer is on. abort_on_error gives a core-like stop.
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    trap test_stop EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    cmd_down >/dev/null 2>&1 || true
    cmd_up
    # shellcheck disable=SC1091
    . "$RUN/env"
    local rc=0
    # In the background and waited for: a signal's trap runs at once, not after ctest.
    ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 600 "$@" &
    CTEST_PID=$!
    wait "$CTEST_PID" || rc=$?
    CTEST_PID=""
    trap - EXIT INT TERM
    cmd_down
    return $rc
}

demo_idgen() {
    local bin="$BUILD_DIR/bin"
    echo "== idgen: 5 IDs, one INCR each (incr mode)"
    "$bin/idgen" next --mode incr -n 5
    echo "== idgen: 5 IDs from a leased segment (segment mode)"
    local ids
    ids=$("$bin/idgen" next --mode segment -n 5)
    echo "$ids"
    echo "== idgen decode"
    # shellcheck disable=SC2086
    "$bin/idgen" decode $ids
}

cmd_demo() {
    stack_flags --extra --down --extra --challenge -- "$@" # refuses a bad flag before anything is built
    cmd_deps
    cmd_build
    local flags=() down=0 a
    [ "$CLUSTER" -eq 1 ] && flags+=(--cluster)
    [ "$DEV_KAFKA" = 1 ] && flags+=(--dev-kafka)
    flags+=(--fronts "$FRONTS" --kafka-nodes "$KAFKA_NODES")
    for a in "${STACK_ARGS[@]}"; do [ "$a" = --down ] && down=1; done
    local demo_args=("${STACK_ARGS[@]}") # cmd_up parses its own flags into STACK_ARGS
    cmd_up "${flags[@]}"
    # shellcheck disable=SC1091
    . "$RUN/env"
    if [ -x "$ROOT/bench/demo.sh" ] && [ -x "$BUILD_DIR/bin/seckill-order" ] && [ -x "$BUILD_DIR/bin/seckill-consumer" ]; then
        "$ROOT/bench/demo.sh" "${demo_args[@]}"
    else
        demo_idgen
    fi
    if [ $down -eq 1 ]; then
        cmd_down
    else
        log "the stack is still up: 'deploy/local.sh status', 'deploy/local.sh down' to stop it"
    fi
}

cmd_bench() {
    # The names first: a typo is refused before anything is built.
    [ "${1:-}" = --cluster ] && set -- cluster "${@:2}"
    local a
    for a in "$@"; do
        [ -x "$ROOT/bench/bench-$a.sh" ] || usage_die "bench: unknown bench '$a' (one of: $(cd "$ROOT/bench" && ls bench-*.sh | sed 's/^bench-//; s/\.sh$//' | tr '\n' ' '))"
    done
    cmd_deps
    cmd_build
    KEEP_SHAPE=1 cmd_up
    # shellcheck disable=SC1091
    . "$RUN/env"
    # `bench [name...]` runs bench/bench-<name>.sh only; plain `bench` runs every one but
    # the 10-minute soak, which runs only when named (`deploy/local.sh bench soak`).
    local s n rc=0 only=()
    # (`bench --cluster` is `bench cluster`: the cluster benchmark starts its own single
    # Redis and Redis Cluster side by side.)
    while [ $# -gt 0 ] && [ -x "$ROOT/bench/bench-$1.sh" ]; do
        only+=("$ROOT/bench/bench-$1.sh")
        shift
    done
    if [ ${#only[@]} -eq 0 ]; then
        for s in "$ROOT"/bench/bench-*.sh; do
            case $(basename "$s") in bench-soak.sh | bench-cluster.sh) continue ;; esac
            [ -x "$s" ] && only+=("$s")
        done
    fi
    for s in "${only[@]}"; do
        n=$(basename "$s")
        log "bench: $n"
        "$s" || rc=$?
    done
    return $rc
}

CMD=${1:-}
case "$CMD" in
deps | build | down | status)
    shift
    [ $# -eq 0 ] || usage_die "$CMD takes no flag or argument, '$1' given"
    "cmd_$CMD"
    ;;
up | test | demo | bench)
    shift
    "cmd_$CMD" "$@"
    ;;
*)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    [ -z "$CMD" ] || printf '[local.sh] error: unknown command %s\n' "$CMD" >&2
    exit 2
    ;;
esac
