#!/usr/bin/env bash
# deploy/sentinel.sh: the one bring-up of Redis behind Sentinel on loopback (1 master,
# 2 replicas, 3 sentinels; Debian's redis-sentinel), for the local stack
# (deploy/local.sh up --sentinel) and the tests (tests/sentinel/lib.sh).
#
#   deploy/sentinel.sh up DIR BASE
#       master on BASE, replicas on BASE+1 and BASE+2, sentinels on BASE+3 .. BASE+5,
#       all detached (`down` stops them); data, configuration, logs and pid files in DIR.
#       Nodes already running are kept. Returns once every sentinel sees the master,
#       both replicas and the other two sentinels, and both replicas are in sync;
#       prints the URL (also in DIR/url).
#   deploy/sentinel.sh wait DIR
#       Waits (60 s at most) until the set is whole again as `up` does, e.g. after the
#       sentinels were told another address for the master.
#   deploy/sentinel.sh down DIR
#       Stops what DIR's pid files name (SIGTERM, up to 20 s, then SIGKILL).
#   deploy/sentinel.sh url DIR
#       The services' redis.url: redis-sentinel://127.0.0.1:S1,...,S3/seckill
#
# The master's name at the sentinels is `seckill`, quorum 2. The data nodes run like
# the stack's single Redis (AOF, appendfsync always: libidgen's counters need it).
# SENTINEL_DOWN_AFTER_MS: down-after-milliseconds (default 5000; the tests take 1000).
# The sentinels make every replica replicate from the address they know the master by
# (+fix-slave-config), so a proxy in front of the master is set at the sentinels
# (SENTINEL REMOVE, then MONITOR its address: tests/sentinel/lib.sh).
# A failover leaves every configuration rewritten by Redis itself (the sentinels'
# files and the nodes' replicaof): `up` on a stopped set restarts it as it was left.
set -euo pipefail

MASTER_NAME=seckill
QUORUM=2

die() { printf '[sentinel.sh] error: %s\n' "$*" >&2; exit 1; }

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# wait_until SECONDS CMD...: polls CMD every 0.1 s until it succeeds. @returns 1 after.
wait_until() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt "$deadline" ] || return 1
        sleep 0.1
    done
}

sentinel_ports() { seq $((BASE + 3)) $((BASE + 5)); }

url_of() {
    local p u=""
    for p in $(sentinel_ports); do u="$u${u:+,}127.0.0.1:$p"; done
    echo "redis-sentinel://$u/$MASTER_NAME"
}

node_up() {
    local port=$1 of=$2
    pid_alive "$DIR/node-$port.pid" && return 0
    local conf="$DIR/node-$port.conf"
    if [ ! -f "$conf" ]; then
        {
            echo "port $port"
            echo "bind 127.0.0.1"
            echo "dir $DIR/node-$port"
            echo "appendonly yes"
            echo "appendfsync always"
            echo 'save ""'
            # A replica promoted by the sentinels must take writes at once.
            echo "replica-read-only yes"
            [ -n "$of" ] && echo "replicaof 127.0.0.1 $of"
        } >"$conf"
    fi
    mkdir -p "$DIR/node-$port"
    # The configuration file is the node's own (CONFIG REWRITE after a failover).
    redis-server "$conf" --daemonize yes --pidfile "$DIR/node-$port.pid" \
        --logfile "$DIR/node-$port.log" >/dev/null
    wait_until 30 redis-cli -p "$port" ping || die "redis on $port did not start ($DIR/node-$port.log)"
}

sentinel_up() {
    local port=$1
    pid_alive "$DIR/sentinel-$port.pid" && return 0
    local conf="$DIR/sentinel-$port.conf"
    if [ ! -f "$conf" ]; then
        cat >"$conf" <<EOF
port $port
bind 127.0.0.1
dir $DIR
sentinel monitor $MASTER_NAME 127.0.0.1 $BASE $QUORUM
sentinel down-after-milliseconds $MASTER_NAME ${SENTINEL_DOWN_AFTER_MS:-5000}
sentinel failover-timeout $MASTER_NAME 10000
sentinel parallel-syncs $MASTER_NAME 2
EOF
    fi
    redis-sentinel "$conf" --daemonize yes --pidfile "$DIR/sentinel-$port.pid" \
        --logfile "$DIR/sentinel-$port.log" >/dev/null
    wait_until 30 redis-cli -p "$port" ping || die "sentinel on $port did not start ($DIR/sentinel-$port.log)"
}

# A sentinel that knows the master, both replicas and both other sentinels.
sentinel_sees_all() {
    redis-cli -p "$1" SENTINEL master "$MASTER_NAME" | awk '
        prev == "num-slaves" { r = $1 } prev == "num-other-sentinels" { s = $1 } { prev = $1 }
        END { exit !(r == 2 && s == 2) }'
}

replica_synced() { redis-cli -p "$1" INFO replication | grep -q '^master_link_status:up'; }

cmd_up() {
    mkdir -p "$DIR"
    command -v redis-sentinel >/dev/null || die "redis-sentinel is not installed (deploy/local.sh deps)"
    local m=$BASE
    node_up "$m" ""
    node_up $((m + 1)) "$m"
    node_up $((m + 2)) "$m"
    local p
    for p in $(sentinel_ports); do sentinel_up "$p"; done
    cmd_wait
    url_of >"$DIR/url"
    cat "$DIR/url"
}

cmd_wait() {
    local m=$BASE p
    for p in $(sentinel_ports); do
        wait_until 60 sentinel_sees_all "$p" || die "sentinel $p does not see 2 replicas and 2 sentinels"
    done
    # After a failover the replicas are other nodes: every node that says it is one.
    for p in $m $((m + 1)) $((m + 2)); do
        [ "$(redis-cli -p "$p" ROLE | head -n 1)" = master ] && continue
        wait_until 60 replica_synced "$p" || die "replica $p is not in sync"
    done
}

cmd_down() {
    # All at once, then waited for: each takes about 2 s to be gone (reaped) here.
    local f pids=() pid deadline
    for f in "$DIR"/sentinel-*.pid "$DIR"/node-*.pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        kill "$pid" 2>/dev/null && pids+=("$pid")
        rm -f "$f"
    done
    deadline=$((SECONDS + 20))
    for pid in "${pids[@]}"; do
        while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
    done
}

CMD=${1:-}
DIR=${2:-}
[ -n "$CMD" ] && [ -n "$DIR" ] || die "usage: deploy/sentinel.sh up DIR BASE | wait DIR | down DIR | url DIR"
DIR=$(mkdir -p "$DIR" && cd "$DIR" && pwd)
case $CMD in
up)
    BASE=${3:-}
    [[ $BASE =~ ^[0-9]+$ ]] && [ "$BASE" -gt 0 ] && [ "$BASE" -lt 65530 ] || die "up: BASE must be a port"
    echo "$BASE" >"$DIR/base"
    cmd_up
    ;;
down) cmd_down ;;
wait)
    BASE=$(cat "$DIR/base" 2>/dev/null) || die "wait: $DIR holds no set"
    cmd_wait
    ;;
url)
    BASE=$(cat "$DIR/base" 2>/dev/null) || die "url: $DIR holds no set"
    url_of
    ;;
*) die "unknown command '$CMD' (up, wait, down, url)" ;;
esac
