#!/usr/bin/env bash
# deploy/cluster.sh: the one bring-up of a Redis Cluster of 3 masters + 3 replicas on
# loopback, for the local stack (deploy/local.sh up --cluster), the benchmarks
# (bench/bench-cluster.sh) and the tests (tests/cluster/lib.sh, and
# tests/support/sk_test_cluster.c through `create` and `options`).
#
#   deploy/cluster.sh up DIR BASE [--profile P] [redis-server options...]
#       6 nodes on BASE .. BASE+5, each with its cluster bus on port +100 (not Redis's
#       +10000, which would land on the test stack's ports), data in DIR/node-PORT/,
#       log DIR/node-PORT.log, pid DIR/node-PORT.pid. The nodes are detached (they
#       outlive this script: `down` stops them). Nodes already running are kept; nodes
#       that kept their nodes.conf find each other again; fresh ones are joined by
#       `create`. Returns once the cluster is ready (below); prints its URL.
#   deploy/cluster.sh run DIR BASE [--profile P] [redis-server options...]
#       The same, but the nodes are this script's children and it stays in the
#       foreground until it gets SIGTERM or SIGINT (then it stops them) or every node
#       has exited: a test or a bench runs it in the background, waits for DIR/url
#       (DIR/failed says why it gave up), and stopping it stops the cluster, even from
#       ctest's timeout, which kills a test's process tree.
#   deploy/cluster.sh down DIR
#       Stops the nodes DIR's pid files name (SIGTERM, up to 20 s, then SIGKILL).
#   deploy/cluster.sh create [--seconds N] PORT...
#       Joins 6 running fresh nodes into a cluster (redis-cli --cluster create
#       --cluster-replicas 1) and waits until it is ready. Their password, if any, in
#       REDISCLI_AUTH (redis-cli's own variable: a command line would show it in ps).
#   deploy/cluster.sh wait [--seconds N] PORT...
#       Waits until it is ready: every node says cluster_state:ok with all 16384 slots
#       served and every node known, and every replica's link to its master is up (a
#       failover test needs its data replicated). N: 60 s by default.
#   deploy/cluster.sh options PROFILE
#       The profile's redis-server options, one a line (for a caller that starts the
#       nodes itself, as sk_test_cluster.c does through tests/support/sk_test_redis).
#
# Profiles: stack (AOF with appendfsync always like the stack's single Redis, node
# timeout $SECKILL_CLUSTER_NODE_TIMEOUT or 3000 ms: a failover over in seconds, yet no
# accidental one on a busy 2-core machine), test (node timeout 1500 ms, any replica may
# take over, no persistence: the replicas hold the data; diskless replication without
# delay, so replicas are in sync at once), bench (AOF always, node timeout 5000 ms).
# `up` and `run` add: full coverage not required (while one master fails over, the
# events on the others keep selling) and no RDB snapshots; options given after the
# profile come last and win. No password with up/run (loopback only).
# Exit status: 0, 1 when the cluster did not come up (the reason on stderr and, for
# run, in DIR/failed), 2 on a usage error.
set -euo pipefail
# shellcheck source=deploy/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NODES=6 # 3 masters + 3 replicas
BUS_OFFSET=100

FAILED_FILE="" # run: where the reason of a failure goes too

say() { printf '[cluster.sh] %s\n' "$*" >&2; }
fail() {
    say "error: $*"
    [ -z "$FAILED_FILE" ] || echo "$*" >"$FAILED_FILE"
    exit 1
}
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }

profile_options() {
    case $1 in
    stack) printf '%s\n' --appendonly yes --appendfsync always --cluster-node-timeout "${SECKILL_CLUSTER_NODE_TIMEOUT:-3000}" ;;
    test) printf '%s\n' --cluster-node-timeout 1500 --cluster-replica-validity-factor 0 --appendonly no \
        --repl-diskless-sync-delay 0 ;;
    bench) printf '%s\n' --cluster-node-timeout 5000 --appendonly yes --appendfsync always ;;
    *) say "unknown profile '$1' (stack, test or bench)"; exit 2 ;;
    esac
}

cli() { redis-cli -p "$@"; }

pong() { [ "$(cli "$1" ping 2>/dev/null)" = PONG ]; }

# ready PORT...: the condition of `wait` (see the header).
ready() {
    local p info repl replicas=0
    for p in "$@"; do
        info=$(cli "$p" cluster info 2>/dev/null | tr -d '\r') || return 1
        grep -q '^cluster_state:ok$' <<<"$info" && grep -q '^cluster_slots_ok:16384$' <<<"$info" &&
            grep -q "^cluster_known_nodes:$#\$" <<<"$info" || return 1
        repl=$(cli "$p" info replication 2>/dev/null | tr -d '\r') || return 1
        if grep -q '^role:slave$' <<<"$repl"; then
            grep -q '^master_link_status:up$' <<<"$repl" || return 1
            replicas=$((replicas + 1))
        fi
    done
    [ $replicas -eq $(($# / 2)) ]
}

# wait_ready SECONDS PORT...
wait_ready() {
    local secs=$1
    shift
    sk_wait "$secs" ready "$@" ||
        fail "the cluster on $(echo "$@" | tr ' ' ,) is not ready within ${secs}s (cluster_state, slots, known nodes, replica links)"
}

# create SECONDS LOG PORT...: join fresh nodes, then wait until ready.
create() {
    local secs=$1 log=$2 p addrs=()
    shift 2
    for p in "$@"; do addrs+=("127.0.0.1:$p"); done
    if ! redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes \
        >"$log" 2>&1; then
        fail "redis-cli --cluster create failed: $(tail -n 3 "$log" | tr '\n' ' ')"
    fi
    wait_ready "$secs" "$@"
}

# Takes --seconds N off the arguments; the ports are left in PORTS.
common_flags() {
    SECS=60
    PORTS=()
    while [ $# -gt 0 ]; do
        case $1 in
        --seconds) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage; SECS=$2; shift ;;
        [1-9]*) [[ $1 =~ ^[1-9][0-9]*$ ]] || usage; PORTS+=("$1") ;;
        *) say "unknown flag '$1'"; usage ;;
        esac
        shift
    done
    [ ${#PORTS[@]} -eq $NODES ] || { say "$NODES ports expected, ${#PORTS[@]} given"; exit 2; }
}

ports_of() { seq "$1" $(($1 + NODES - 1)); }

# start DIR BASE DETACH OPTIONS...: the nodes not yet running (DETACH: daemonized).
start_nodes() {
    local dir=$1 base=$2 detach=$3 p pidf holder
    shift 3
    mkdir -p "$dir"
    for p in $(ports_of "$base"); do
        pidf=$dir/node-$p.pid
        if [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null; then continue; fi
        for q in "$p" $((p + BUS_OFFSET)); do
            if holder=$(sk_port_holder "$q"); then fail "port $q is taken by $holder"; fi
        done
        mkdir -p "$dir/node-$p"
        local args=(--port "$p" --bind 127.0.0.1 --dir "$dir/node-$p"
            --cluster-enabled yes --cluster-config-file nodes.conf --cluster-port $((p + BUS_OFFSET))
            --cluster-require-full-coverage no --save "" "$@" --logfile "$dir/node-$p.log")
        if [ "$detach" = 1 ]; then
            redis-server "${args[@]}" --daemonize yes --pidfile "$pidf" </dev/null >/dev/null 2>&1 ||
                fail "redis-server on $p did not start (see $dir/node-$p.log)"
        else
            redis-server "${args[@]}" --daemonize no </dev/null >/dev/null 2>&1 &
            echo $! >"$pidf"
        fi
    done
    for p in $(ports_of "$base"); do
        sk_wait 120 pong "$p" || fail "redis cluster node $p does not answer PING within 120s (see $dir/node-$p.log)"
    done
}

# bring_up DIR BASE DETACH [--profile P] OPTIONS...
bring_up() {
    local dir=$1 base=$2 detach=$3 opts=() p
    shift 3
    unset REDISCLI_AUTH # these nodes have no password: AUTH would be refused
    if ! [[ $base =~ ^[1-9][0-9]*$ ]] || [ "$base" -lt 1024 ] || [ "$base" -gt $((65535 - NODES - BUS_OFFSET)) ]; then
        say "BASE must be a port from 1024 to $((65535 - NODES - BUS_OFFSET)), '$base' given"
        exit 2
    fi
    if [ "${1:-}" = --profile ]; then
        [ $# -ge 2 ] || usage
        mapfile -t opts < <(profile_options "$2")
        [ ${#opts[@]} -gt 0 ] || exit 2
        shift 2
    fi
    rm -f "$dir/url" "$dir/failed"
    start_nodes "$dir" "$base" "$detach" "${opts[@]}" "$@"
    local ports
    mapfile -t ports < <(ports_of "$base")
    # A node that knows only itself is fresh; nodes restarted on their nodes.conf meet
    # again by themselves.
    if cli "$base" cluster info | tr -d '\r' | grep -q '^cluster_known_nodes:1$'; then
        create 60 "$dir/cluster-create.log" "${ports[@]}"
    else
        wait_ready 60 "${ports[@]}"
    fi
    local url
    url=$(printf '127.0.0.1:%s,' "${ports[@]}")
    echo "redis-cluster://${url%,}" >"$dir/url.tmp"
    mv "$dir/url.tmp" "$dir/url"
}

# alive PID: runs (a zombie, a child of `run` not yet reaped, does not).
alive() {
    local s
    s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    s=${s##*) }
    [ "${s:0:1}" != Z ]
}

# down DIR: every node of DIR's pid files.
cmd_down() {
    local dir=$1 f pid pids=()
    for f in "$dir"/node-*.pid; do
        [ -e "$f" ] || continue
        pid=$(cat "$f" 2>/dev/null || true)
        if [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; then pids+=("$pid"); fi
    done
    local deadline=$((SECONDS + 20))
    for pid in "${pids[@]}"; do
        while alive "$pid" && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
        kill -KILL "$pid" 2>/dev/null || true
    done
    rm -f "$dir"/node-*.pid "$dir/url"
}

cmd_run() {
    local dir=$1
    mkdir -p "$dir"
    FAILED_FILE=$dir/failed
    # Whatever ends this script ends its nodes too.
    trap 'cmd_down "$dir"; wait' EXIT
    trap 'exit 0' TERM # a stop asked for is a normal end
    trap 'exit 130' INT
    bring_up "$dir" "$2" 0 "${@:3}"
    # The nodes are our children: wait until they have all exited or we are stopped.
    wait || true
}

case "${1:-}" in
up)
    [ $# -ge 3 ] || usage
    shift
    bring_up "$1" "$2" 1 "${@:3}"
    cat "$1/url"
    echo
    ;;
run)
    [ $# -ge 3 ] || usage
    shift
    cmd_run "$@"
    ;;
down)
    [ $# -eq 2 ] || usage
    cmd_down "$2"
    ;;
create | wait)
    c=$1
    shift
    common_flags "$@"
    if [ "$c" = create ]; then
        log=$(mktemp /tmp/cluster-create.XXXXXX)
        create "$SECS" "$log" "${PORTS[@]}"
        rm -f "$log"
    else
        wait_ready "$SECS" "${PORTS[@]}"
    fi
    ;;
options)
    [ $# -eq 2 ] || usage
    profile_options "$2"
    ;;
*) usage ;;
esac
