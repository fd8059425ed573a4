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
#         in-memory seckill-devkafka instead of Apache Kafka
# down    stops only what `up` started          status  says what runs
# test    deps, a sanitizer build in build-asan/, its own stack (.run/test, other
#         ports), the whole ctest suite (extra args go to ctest), down; exits with ctest's status
# demo    deps, build, up, then the main job (--cluster, --fronts N, --kafka-nodes N,
#         --dev-kafka as for up)
# bench   deps, build, up, every bench/bench-*.sh but the soak and the cluster one;
#         `bench NAME...` runs only bench/bench-NAME.sh (e.g. `bench order`, `bench soak`);
#         `bench --cluster` is `bench cluster` (single Redis beside the cluster)
#
# Ports (override by environment): SECKILL_REDIS_PORT=16379 SECKILL_PG_PORT=15432
# SECKILL_HTTP_PORT=18080 SECKILL_CONSUMER_HTTP_PORT=18081 SECKILL_CLUSTER_PORT=17001
# (nodes on 17001-17006, their cluster bus +100) SECKILL_BROKER_PORT=19092 (node i on
# +2(i-1), its controller on the next port). The test stack adds 10000.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${SECKILL_BUILD_DIR:-$ROOT/build}
RUN=${SECKILL_RUN_DIR:-$ROOT/.run}
REDIS_PORT=${SECKILL_REDIS_PORT:-16379}
PG_PORT=${SECKILL_PG_PORT:-15432}
HTTP_PORT=${SECKILL_HTTP_PORT:-18080}
CONSUMER_HTTP_PORT=${SECKILL_CONSUMER_HTTP_PORT:-18081}
CLUSTER_PORT=${SECKILL_CLUSTER_PORT:-17001}
KAFKA_PORT=${SECKILL_BROKER_PORT:-19092}
KAFKA_SH=$ROOT/deploy/kafka/kafka.sh
CLUSTER_NODES=6 # 3 masters + 3 replicas
# Short, so that a test's failover is over in seconds; long enough that a busy 2-core
# machine does not fail a master over by accident.
CLUSTER_NODE_TIMEOUT=${SECKILL_CLUSTER_NODE_TIMEOUT:-3000}
# Set by --cluster / --fronts N (stack_flags); remembered in $RUN/stack until `down`.
CLUSTER=0
FRONTS=1
KAFKA_NODES=1
DEV_KAFKA=${SECKILL_DEV_KAFKA:-0}

PACKAGES=(build-essential cmake pkg-config clang libclang-rt-14-dev curl ca-certificates
    libhiredis-dev librdkafka-dev libpq-dev libcmocka-dev libevent-dev libjansson-dev libssl-dev
    redis-server redis-tools postgresql gnuplot-nox wrk chromium python3-venv nginx-core
    openjdk-17-jdk-headless maven) # Apache Kafka's broker (deploy/kafka/) and its fetch; the Redisson driver (a JDK: javac)

log() { printf '[local.sh] %s\n' "$*" >&2; }
die() { printf '[local.sh] error: %s\n' "$*" >&2; exit 1; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# PostgreSQL refuses to run as root: as root we run it as the postgres user.
as_pg() {
    # From /: the postgres user may not be allowed into the caller's directory.
    if [ "$(id -u)" -eq 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

pg_bin() {
    local d
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -n "$d" ] || die "PostgreSQL server binaries not found (run: deploy/local.sh deps)"
    echo "$d"
}

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
    # Apache Kafka's jars from Maven Central (cached in deploy/kafka/lib).
    "$KAFKA_SH" fetch
    web_deps
}

# The web tests' tools, pinned: npm packages from tests/web/package-lock.json and
# schemathesis (tests/web/requirements.txt) in a venv. Each is redone only when its pin
# file changed since the last install.
web_deps() {
    local web=$ROOT/tests/web
    if ! cmp -s "$web/package-lock.json" "$web/node_modules/.seckill-lock" 2>/dev/null; then
        log "deps: npm ci in tests/web"
        (cd "$web" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
        cp "$web/package-lock.json" "$web/node_modules/.seckill-lock"
    fi
    if ! cmp -s "$web/requirements.txt" "$web/.venv/.seckill-req" 2>/dev/null; then
        log "deps: schemathesis venv in tests/web/.venv"
        rm -rf "$web/.venv"
        python3 -m venv "$web/.venv"
        "$web/.venv/bin/pip" install -q --disable-pip-version-check -r "$web/requirements.txt" >/dev/null
        cp "$web/requirements.txt" "$web/.venv/.seckill-req"
    fi
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
    local deadline=$((SECONDS + secs))
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || die "$what did not come up within ${secs}s (logs: $RUN/logs)"
        sleep 0.1
    done
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
    # appendfsync always: libidgen's no-reissue guarantee needs every INCRBY on disk
    # before its reply (see idgen/README.md). AOF on, RDB snapshots off.
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$RUN/redis" \
        --appendonly yes --appendfsync always --save "" \
        --daemonize yes --pidfile "$RUN/redis.pid" --logfile "$RUN/logs/redis.log"
    wait_for "redis" 120 redis_ready "$REDIS_PORT"
    log "redis: up on 127.0.0.1:$REDIS_PORT"
}

# The Redis Cluster of `up --cluster`: nodes on CLUSTER_PORT .. +5, each with AOF and
# appendfsync always like the single Redis, its cluster bus on port +100 (not Redis's
# default +10000, which would land on the test stack's ports). Full coverage is not
# required: while one master fails over, the events on the other masters keep selling.
cluster_ports() { seq "$CLUSTER_PORT" $((CLUSTER_PORT + CLUSTER_NODES - 1)); }

cluster_url() {
    local p u=""
    for p in $(cluster_ports); do u="$u${u:+,}127.0.0.1:$p"; done
    echo "redis-cluster://$u"
}

cluster_running() {
    local p
    for p in $(cluster_ports); do pid_alive "$RUN/cluster/$p.pid" && return 0; done
    return 1
}

cluster_state_ok() {
    local p
    for p in $(cluster_ports); do
        redis-cli -p "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
    done
}

cluster_up() {
    mkdir -p "$RUN/cluster" "$RUN/logs"
    local p
    for p in $(cluster_ports); do
        pid_alive "$RUN/cluster/$p.pid" && continue
        mkdir -p "$RUN/cluster/$p"
        redis-server --port "$p" --bind 127.0.0.1 --dir "$RUN/cluster/$p" \
            --cluster-enabled yes --cluster-config-file nodes.conf --cluster-port $((p + 100)) \
            --cluster-node-timeout "$CLUSTER_NODE_TIMEOUT" --cluster-require-full-coverage no \
            --appendonly yes --appendfsync always --save "" \
            --daemonize yes --pidfile "$RUN/cluster/$p.pid" --logfile "$RUN/logs/cluster-$p.log"
    done
    for p in $(cluster_ports); do wait_for "redis cluster node $p" 120 redis_ready "$p"; done
    # Nodes that kept their nodes.conf from an earlier `up --cluster` find each other
    # again; fresh ones (one known node each) are joined into a new cluster.
    if redis-cli -p "$CLUSTER_PORT" cluster info | grep -q '^cluster_known_nodes:1\b'; then
        local addrs=()
        for p in $(cluster_ports); do addrs+=("127.0.0.1:$p"); done
        redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes \
            >"$RUN/logs/cluster-create.log" 2>&1 || die "redis-cli --cluster create failed (see $RUN/logs/cluster-create.log)"
    fi
    wait_for "redis cluster (cluster_state:ok on every node)" 60 cluster_state_ok
    log "redis cluster: up on 127.0.0.1:$CLUSTER_PORT-$((CLUSTER_PORT + CLUSTER_NODES - 1)) (3 masters + 3 replicas)"
}

cluster_down() {
    cluster_running || return 0
    local p pid
    for p in $(cluster_ports); do
        pid_alive "$RUN/cluster/$p.pid" || { rm -f "$RUN/cluster/$p.pid"; continue; }
        pid=$(cat "$RUN/cluster/$p.pid")
        redis-cli -p "$p" shutdown >/dev/null 2>&1 || kill "$pid" 2>/dev/null || true
    done
    local deadline=$((SECONDS + 20))
    for p in $(cluster_ports); do
        while pid_alive "$RUN/cluster/$p.pid" && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
        rm -f "$RUN/cluster/$p.pid"
    done
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

# Durability-neutral tuning (fsync and synchronous_commit stay on: the consumer commits
# Kafka offsets only after PostgreSQL's COMMIT, so a commit must survive a crash): room
# for the order table and its indexes in memory, fewer checkpoints during a drain.
# wal_level=logical: the order transitions are read from the WAL (consumer_wal.h, issue 36).
PG_TUNING="-c shared_buffers=512MB -c wal_buffers=64MB -c max_wal_size=4GB -c checkpoint_timeout=15min -c wal_level=logical"

pg_up() {
    mkdir -p "$RUN/logs"
    local bin dir
    bin=$(pg_bin)
    dir=$(pg_dir)
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        # trust on loopback only: a throwaway dev/test cluster. Real deployments use
        # passwords and sslmode through the conninfo (README, Configuration).
        as_pg "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
        mkdir -p "$dir/sock"
        [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$dir/sock"
    fi
    if as_pg "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        log "postgresql: already running on $PG_PORT"
    else
        as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
            -o "-p $PG_PORT -k $dir/sock -c listen_addresses=127.0.0.1 -c max_connections=200 $PG_TUNING" start >/dev/null
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

# stack_flags ARGS...: takes --cluster, --fronts N, --kafka-nodes N and --dev-kafka off
# the arguments (the rest in STACK_ARGS). Without any, a stack that is up keeps what it
# was started with ($RUN/stack, removed by `down`).
stack_flags() {
    STACK_ARGS=()
    local given=0
    while [ $# -gt 0 ]; do
        case $1 in
        --cluster) CLUSTER=1 given=1 ;;
        --fronts | --fronts=*)
            local n
            if [ "$1" = --fronts ]; then n=${2:-}; shift; else n=${1#--fronts=}; fi
            [[ $n =~ ^[1-9][0-9]?$ ]] || die "--fronts takes a number from 1 to 99"
            FRONTS=$n given=1
            ;;
        --kafka-nodes | --kafka-nodes=*)
            local k
            if [ "$1" = --kafka-nodes ]; then k=${2:-}; shift; else k=${1#--kafka-nodes=}; fi
            [[ $k =~ ^[13]$ ]] || die "--kafka-nodes takes 1 or 3"
            KAFKA_NODES=$k given=1
            ;;
        --dev-kafka) DEV_KAFKA=1 given=1 ;;
        *) STACK_ARGS+=("$1") ;;
        esac
        shift
    done
    if [ $given -eq 0 ] && [ -f "$RUN/stack" ]; then
        # shellcheck disable=SC1091
        . "$RUN/stack"
    fi
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
        else
            echo "export SECKILL_REDIS_URL=redis://127.0.0.1:$REDIS_PORT"
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
    stack_flags "$@"
    mkdir -p "$RUN/logs"
    local want="CLUSTER=$CLUSTER FRONTS=$FRONTS KAFKA_NODES=$KAFKA_NODES DEV_KAFKA=$DEV_KAFKA"
    if [ -f "$RUN/stack" ] && [ "$(cat "$RUN/stack")" != "$want" ]; then
        # Another shape than the running stack's: the fronts restart on the new Redis,
        # the services on the new Kafka.
        log "up: from '$(cat "$RUN/stack")' to '$want'"
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
    write_env
    # shellcheck disable=SC1091
    . "$RUN/env"
    if [ -x "$bin/seckill-consumer" ] && [ -n "${SECKILL_KAFKA_BROKERS:-}" ]; then
        SECKILL_HTTP_PORT=$CONSUMER_HTTP_PORT start_service seckill-consumer \
            curl -fsS "http://127.0.0.1:$CONSUMER_HTTP_PORT/healthz" -- "$bin/seckill-consumer"
    fi
    if [ -x "$bin/seckill-order" ] && [ -n "${SECKILL_KAFKA_BROKERS:-}" ]; then
        local i port
        for ((i = 1; i <= FRONTS; i++)); do
            port=$(front_port $i)
            SECKILL_HTTP_PORT=$port start_service "$(front_name $i)" \
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
        redis-cli -p "$REDIS_PORT" shutdown >/dev/null 2>&1 || kill "$(cat "$RUN/redis.pid")" 2>/dev/null || true
        local deadline=$((SECONDS + 20))
        while pid_alive "$RUN/redis.pid" && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
        log "redis: stopped"
    fi
    rm -f "$RUN/redis.pid"
    cluster_down
    if [ -f "$RUN/pgdir" ]; then
        local dir bin
        dir=$(cat "$RUN/pgdir")
        bin=$(pg_bin)
        if [ -d "$dir/data" ] && as_pg "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
            as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
            log "postgresql: stopped"
        fi
    fi
    rm -f "$RUN/env" "$RUN/stack"
}

cmd_status() {
    local name
    pid_alive "$RUN/redis.pid" && echo "redis            running  127.0.0.1:$REDIS_PORT" || echo "redis            stopped"
    if [ -f "$RUN/pgdir" ] && as_pg "$(pg_bin)/pg_ctl" -D "$(cat "$RUN/pgdir")/data" status >/dev/null 2>&1; then
        echo "postgresql       running  127.0.0.1:$PG_PORT"
    else
        echo "postgresql       stopped"
    fi
    if cluster_running; then
        local p
        for p in $(cluster_ports); do
            if pid_alive "$RUN/cluster/$p.pid"; then
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
    RUN=$ROOT/.run/test
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

cmd_test() {
    cmd_deps
    use_test_stack
    local werror=OFF
    [ -n "${CI:-}" ] && werror=ON
    build_into "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Debug -DSECKILL_SANITIZE=ON -DSECKILL_WERROR=$werror
    # Leaks are bugs: LeakSanitizer is on. abort_on_error gives a core-like stop.
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    cmd_down >/dev/null 2>&1 || true
    cmd_up
    # shellcheck disable=SC1091
    . "$RUN/env"
    local rc=0
    ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 600 "$@" || rc=$?
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
    cmd_deps
    cmd_build
    stack_flags "$@"
    local flags=() down=0 a
    [ "$CLUSTER" -eq 1 ] && flags+=(--cluster)
    [ "$DEV_KAFKA" = 1 ] && flags+=(--dev-kafka)
    flags+=(--fronts "$FRONTS" --kafka-nodes "$KAFKA_NODES")
    for a in "${STACK_ARGS[@]}"; do [ "$a" = --down ] && down=1; done
    cmd_up "${flags[@]}"
    # shellcheck disable=SC1091
    . "$RUN/env"
    if [ -x "$ROOT/bench/demo.sh" ] && [ -x "$BUILD_DIR/bin/seckill-order" ] && [ -x "$BUILD_DIR/bin/seckill-consumer" ]; then
        "$ROOT/bench/demo.sh" "${STACK_ARGS[@]}"
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
    cmd_deps
    cmd_build
    cmd_up
    # shellcheck disable=SC1091
    . "$RUN/env"
    # `bench [name...]` runs bench/bench-<name>.sh only; plain `bench` runs every one but
    # the 10-minute soak, which runs only when named (`deploy/local.sh bench soak`).
    local s n rc=0 only=()
    # `bench --cluster` is `bench cluster`: the cluster benchmark starts its own single
    # Redis and Redis Cluster side by side.
    [ "${1:-}" = --cluster ] && set -- cluster "${@:2}"
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
        "$s" "$@" || rc=$?
    done
    return $rc
}

case "${1:-}" in
deps | build | up | down | status | test | demo | bench)
    c=$1
    shift
    "cmd_$c" "$@"
    ;;
*)
    sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
