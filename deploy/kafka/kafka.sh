#!/usr/bin/env bash
# deploy/kafka/kafka.sh: Apache Kafka (KRaft, no ZooKeeper) on loopback, from the jars
# that `fetch` resolves through Maven (deploy/kafka/pom.xml). The one home of the broker's
# settings: deploy/local.sh (up, test) and the `kafka` tests (tests/kafka/) call it.
#
#   kafka.sh fetch                      resolve the broker's jars into deploy/kafka/lib (cached)
#   kafka.sh start DIR PORT NODES       start a cluster of NODES (1 or 3) combined broker+controller
#                                       nodes with its state in DIR; node i listens on
#                                       PORT + 2(i-1) (clients) and the next port (controller).
#                                       Configs written and storage formatted once; a cluster
#                                       that runs is left alone. Waits until every node serves.
#   kafka.sh stop DIR                   SIGTERM every node (SIGKILL after 60 s), wait
#   kafka.sh kill DIR I [SIGNAL]        signal node I (default KILL, the crash); a KILL is waited for
#   kafka.sh start-node DIR I           start node I again (after kill), wait until it serves
#   kafka.sh topic DIR NAME PARTITIONS  create a topic (if absent) as the deployment has it:
#                                       replication factor min(NODES, 3), min.insync.replicas 2
#                                       from 3 nodes on (1 for a single node)
#   kafka.sh leader DIR TOPIC PARTITION the node id leading a partition
#   kafka.sh bootstrap DIR              the bootstrap list (also in DIR/bootstrap)
#   kafka.sh running DIR                the ids of the nodes that run (exit 1 if none)
#   kafka.sh rss DIR                    resident memory of each node (kB)
#
# Environment: SECKILL_BROKER_HEAP (max heap per node, default 512m), SECKILL_BROKER_LIB
# (the jars, default deploy/kafka/lib), JAVA (default java); not SECKILL_KAFKA_*, which
# the services hand to librdkafka. Logs: DIR/node-I.log.
# SECKILL_BROKER_PROXIED="L1:A1 L2:A2 ..." (read by the first start, kept in cluster.conf):
# node i gets a second client listener PROXIED on port Li, advertised as Ai (a fault
# proxy's port in front of Li, tests/fault/netfault.sh; Ai = Li for a node without one).
# A client bootstrapped on a PROXIED address gets PROXIED addresses in its metadata and
# so reaches every broker that way; the others, and the brokers among themselves, keep
# the direct PLAINTEXT listener.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB=${SECKILL_BROKER_LIB:-$HERE/lib}
JAVA=${JAVA:-java}
HEAP=${SECKILL_BROKER_HEAP:-512m}

klog() { printf '[kafka.sh] %s\n' "$*" >&2; }
kdie() { printf '[kafka.sh] error: %s\n' "$*" >&2; exit 1; }

cmd_fetch() {
    command -v mvn >/dev/null || kdie "mvn not installed (deploy/local.sh deps installs maven)"
    # The stamp holds the pom's checksum: a changed pom (another version) fetches again.
    local sum
    sum=$(sha256sum "$HERE/pom.xml" | cut -d' ' -f1)
    if [ -f "$LIB/.fetched" ] && [ "$(cat "$LIB/.fetched")" = "$sum" ]; then
        klog "fetch: $(ls "$LIB"/*.jar | wc -l) jars already in $LIB"
        return 0
    fi
    rm -rf "$LIB.tmp"
    (cd "$HERE" && mvn -q -B dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$LIB.tmp") ||
        kdie "mvn dependency:copy-dependencies failed (Maven Central reachable?)"
    echo "$sum" >"$LIB.tmp/.fetched"
    rm -rf "$LIB"
    mv "$LIB.tmp" "$LIB"
    klog "fetch: $(ls "$LIB"/*.jar | wc -l) jars in $LIB"
}

need_lib() {
    [ -f "$LIB/.fetched" ] || kdie "the Kafka jars are not fetched (deploy/local.sh deps, or $0 fetch)"
    command -v "$JAVA" >/dev/null || kdie "java not installed (deploy/local.sh deps installs openjdk-17-jre-headless)"
}

# A tool's JVM: small, and quick to start (C1 only).
tool() {
    "$JAVA" -Xmx192m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
        -Dlog4j2.configurationFile="$HERE/log4j2.properties" -cp "$LIB/*" "$@"
}

load() {
    DIR=$1
    [ -f "$DIR/cluster.conf" ] || kdie "$DIR holds no cluster (kafka.sh start first)"
    # shellcheck disable=SC1091
    . "$DIR/cluster.conf"
}

client_port() { echo $((PORT + 2 * ($1 - 1))); }
ctl_port() { echo $((PORT + 2 * ($1 - 1) + 1)); }
node_pid() { cat "$DIR/node-$1.pid" 2>/dev/null; }
node_alive() { local p; p=$(node_pid "$1") && [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }
serves() { (exec 3<>"/dev/tcp/127.0.0.1/$(client_port "$1")") 2>/dev/null; }

write_props() {
    local i=$1 voters="" j rf=$((NODES < 3 ? NODES : 3)) isr=$((NODES < 3 ? 1 : 2))
    for ((j = 1; j <= NODES; j++)); do voters="$voters${voters:+,}$j@127.0.0.1:$(ctl_port $j)"; done
    local px="" pxa="" pxl
    if [ -n "${PROXIED:-}" ]; then
        pxl=$(echo "$PROXIED" | tr ' ' '\n' | sed -n "${i}p")
        [[ $pxl =~ ^[0-9]+:[0-9]+$ ]] || kdie "SECKILL_BROKER_PROXIED: no LISTEN:ADVERTISED for node $i in '$PROXIED'"
        px=",PROXIED://127.0.0.1:${pxl%%:*}" pxa=",PROXIED://127.0.0.1:${pxl##*:}"
    fi
    cat >"$DIR/node-$i.properties" <<EOF
# written by deploy/kafka/kafka.sh: node $i of $NODES (KRaft, broker and controller)
node.id=$i
process.roles=broker,controller
listeners=PLAINTEXT://127.0.0.1:$(client_port "$i"),CONTROLLER://127.0.0.1:$(ctl_port "$i")$px
advertised.listeners=PLAINTEXT://127.0.0.1:$(client_port "$i")$pxa
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT${px:+,PROXIED:PLAINTEXT}
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
controller.quorum.voters=$voters
log.dirs=$DIR/node-$i/data
# The deployment's topics are created explicitly (kafka.sh topic), never by a typo.
auto.create.topics.enable=false
num.partitions=6
default.replication.factor=$rf
min.insync.replicas=$isr
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=12
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
unclean.leader.election.enable=false
# A group forms as soon as its first member joins (no 3 s wait for more members).
group.initial.rebalance.delay.ms=0
# A dead node is fenced, and its partitions led elsewhere, within seconds; a follower
# that stops fetching leaves the ISR after 10 s.
broker.heartbeat.interval.ms=1000
broker.session.timeout.ms=6000
replica.lag.time.max.ms=10000
num.network.threads=2
num.io.threads=4
EOF
}

start_node() {
    local i=$1
    node_alive "$i" && return 0
    # setsid: the node outlives the caller; -Xms small, so an idle node stays small.
    setsid "$JAVA" -Xms64m -Xmx"$HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError \
        -Djava.awt.headless=true -Dlog4j2.configurationFile="$HERE/log4j2.properties" \
        -cp "$LIB/*" kafka.Kafka "$DIR/node-$i.properties" >>"$DIR/node-$i.log" 2>&1 </dev/null &
    echo $! >"$DIR/node-$i.pid"
}

wait_serving() {
    local i deadline=$((SECONDS + ${SECKILL_BROKER_START_TIMEOUT:-120}))
    for i in "$@"; do
        until serves "$i"; do
            node_alive "$i" || kdie "node $i exited (see $DIR/node-$i.log: $(tail -n 3 "$DIR/node-$i.log"))"
            [ $SECONDS -lt $deadline ] || kdie "node $i does not serve on $(client_port "$i") (see $DIR/node-$i.log)"
            sleep 0.1
        done
    done
}

cmd_start() {
    [ $# -eq 3 ] || kdie "usage: kafka.sh start DIR PORT NODES"
    need_lib
    local dir=$1 port=$2 nodes=$3 i
    [[ $nodes =~ ^[13]$ ]] || kdie "NODES is 1 or 3"
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [ -f "$dir/cluster.conf" ]; then
        load "$dir"
        [ "$PORT $NODES" = "$port $nodes" ] || kdie "$dir holds a cluster of $NODES nodes on $PORT (stop it and remove $dir to change it)"
    else
        # A KRaft cluster id: 16 random bytes, base64url without padding (Kafka's Uuid).
        local id
        id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
        printf 'PORT=%s\nNODES=%s\nCLUSTER_ID=%s\nPROXIED="%s"\n' "$port" "$nodes" "$id" \
            "${SECKILL_BROKER_PROXIED:-}" >"$dir/cluster.conf"
        load "$dir"
    fi
    local fmt=()
    for ((i = 1; i <= NODES; i++)); do
        write_props "$i"
        [ -f "$DIR/node-$i/data/meta.properties" ] || fmt+=("$i")
    done
    # Storage is formatted once per node (the log survives restarts and kill -9).
    local pids=() p
    for i in "${fmt[@]}"; do
        tool kafka.tools.StorageTool format --cluster-id="$CLUSTER_ID" -c "$DIR/node-$i.properties" \
            >>"$DIR/node-$i.log" 2>&1 &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || kdie "kafka-storage format failed (see $DIR/node-*.log)"; done
    local t0=$SECONDS
    for ((i = 1; i <= NODES; i++)); do start_node "$i"; done
    wait_serving $(seq 1 "$NODES")
    local b="" 
    for ((i = 1; i <= NODES; i++)); do b="$b${b:+,}127.0.0.1:$(client_port "$i")"; done
    echo "$b" >"$DIR/bootstrap"
    klog "up: $NODES node(s) on $b (${#fmt[@]} formatted, serving after $((SECONDS - t0)) s)"
}

cmd_start_node() {
    need_lib
    load "$1"
    start_node "$2"
    wait_serving "$2"
    klog "node $2 serves on 127.0.0.1:$(client_port "$2")"
}

cmd_kill() {
    load "$1"
    local i=$2 sig=${3:-KILL} pid
    pid=$(node_pid "$i") || kdie "node $i has no pid file"
    kill -"$sig" "$pid" 2>/dev/null || true
    if [ "$sig" = KILL ]; then
        while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    fi
}

cmd_stop() {
    [ -f "$1/cluster.conf" ] || return 0
    load "$1"
    local i pid pids=()
    for ((i = 1; i <= NODES; i++)); do
        node_alive "$i" || continue
        pid=$(node_pid "$i")
        kill -CONT "$pid" 2>/dev/null || true # a node stopped by a test (SIGSTOP) must hear TERM
        kill -TERM "$pid" 2>/dev/null || true
        pids+=("$pid")
    done
    local deadline=$((SECONDS + 60))
    for pid in "${pids[@]}"; do
        while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
        kill -0 "$pid" 2>/dev/null && { klog "pid $pid did not stop on SIGTERM within 60 s: killed"; kill -KILL "$pid"; }
    done
    rm -f "$DIR"/node-*.pid
}

cmd_topic() {
    need_lib
    load "$1"
    local rf=$((NODES < 3 ? NODES : 3)) isr=$((NODES < 3 ? 1 : 2))
    tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$(cat "$DIR/bootstrap")" \
        --create --if-not-exists --topic "$2" --partitions "$3" --replication-factor "$rf" \
        --config min.insync.replicas=$isr >/dev/null
}

cmd_leader() {
    need_lib
    load "$1"
    tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$(cat "$DIR/bootstrap")" \
        --describe --topic "$2" |
        awk -v p="$3" '{ for (i = 1; i < NF; i++) { if ($i == "Partition:") q = $(i + 1); if ($i == "Leader:" && q == p) { print $(i + 1); exit } } }'
}

cmd_running() {
    load "$1"
    local i n=0
    for ((i = 1; i <= NODES; i++)); do node_alive "$i" && { echo "$i"; n=$((n + 1)); }; done
    [ $n -gt 0 ]
}

cmd_rss() {
    load "$1"
    local i
    for ((i = 1; i <= NODES; i++)); do
        node_alive "$i" && echo "node $i $(ps -o rss= -p "$(node_pid "$i")" | tr -d ' ') kB"
    done
}

case "${1:-}" in
fetch) shift; cmd_fetch "$@" ;;
start) shift; cmd_start "$@" ;;
start-node) shift; cmd_start_node "$@" ;;
stop) shift; cmd_stop "$@" ;;
kill) shift; cmd_kill "$@" ;;
topic) shift; cmd_topic "$@" ;;
leader) shift; cmd_leader "$@" ;;
bootstrap) load "$2"; cat "$DIR/bootstrap" ;;
running) shift; cmd_running "$@" ;;
rss) shift; cmd_rss "$@" ;;
*) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
