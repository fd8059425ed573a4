#!/usr/bin/env bash
# The network fault matrix (issue 33): netfault.sh LINK [FAULT...]
#
# One link of a running sale goes through toxiproxy (tests/fault/toxi.sh) and each FAULT
# (default: all of latency blackhole reset bandwidth slicer) is put on it for HOLD_S
# seconds in the middle of a burst of its own (one event per fault, stock for every
# request, RATE requests/s), then removed. Each fault's verdict:
#   - every request answered (no cut connection) and the slowest answer within BOUND_MS,
#     stated per link from the services' own deadlines (no request hangs on a black hole);
#   - the full rate back within RECOVER_S of the removal: a 1 s window at 75% of the rate
#     before the fault (202s for a front link, rows in PostgreSQL for a consumer link;
#     measured in the same burst, so a machine slowed by other work does not count
#     against the link);
#   - seckill-check green once nothing is pending (no oversell, no lost or doubled 202,
#     no 202 without Kafka's acknowledgement).
# Its figures go to stderr, one "figures:" line per fault (the table of tests/fault/README.md).
#
# LINK (the proxied client -> server; every other link is direct):
#   front-redis  consumer-redis  front-pg  consumer-pg        (devkafka, single Redis)
#   front-kafka  consumer-kafka   Apache Kafka, 1 node, behind its PROXIED listener
#   kafka3       the front -> node 1 of a 3-node Apache Kafka (nodes 2 and 3 direct)
#   redis-cluster  the front -> the master serving the event, in a 3+3 Redis Cluster
# shellcheck disable=SC2154 # TOXI_PORT_<name> are set by toxi_proxy (printf -v)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/toxi.sh"
. "$(dirname "$0")/../kafka/lib.sh"

LINK=${1:?usage: netfault.sh LINK [FAULT...]}
shift
FAULTS=${*:-$TOXI_FAULTS}
RATE=200
HOLD_S=5  # a fault's length, but the black hole's
AFTER_S=6 # load after the removal, for the rate to come back in
# The black hole outlasts every client deadline on the link (set per link below): Redis
# 0.5 s (the front's redis.timeout_ms here), 1-2 s (the consumer's order index and expiry),
# PostgreSQL 35 s (sk_pg: statement_timeout 30 s + 5 s of grace), Kafka 60 s (librdkafka's
# socket.timeout.ms, left at its default by both services).
BLACKHOLE_S=5
SLACK_MS=1500
fault_require
toxi_require
toxi_start

# What the recovery is measured on, and the bound on every answer.
MEASURE=front
NETFAULT_PROXY="link" # the proxy the faults go on
BOUND_MS=$((FAULT_REDIS_TIMEOUT_MS + SLACK_MS))
RECOVER_S=5

# The single-Redis links: the private Redis, PostgreSQL and dev Kafka of lib.sh.
netfault_up_single() {
    fault_start_redis
    fault_start_pg
    e2e_start_kafka
}

# netfault_up_kafka NODES: Apache Kafka with a PROXIED listener on every node, node 1's
# behind the proxy "link" (the others advertise their own port).
netfault_up_kafka() {
    kafka_require
    local i l pl="" a
    for ((i = 1; i <= $1; i++)); do
        l=$(e2e_free_port)
        if [ "$i" -eq 1 ]; then
            toxi_proxy link "$l"
            a=$TOXI_PORT_link
            NETFAULT_BOOT=127.0.0.1:$a
        else
            a=$l
            NETFAULT_BOOT=$NETFAULT_BOOT,127.0.0.1:$a
        fi
        pl="$pl${pl:+ }$l:$a"
    done
    fault_start_redis
    fault_start_pg
    SECKILL_BROKER_PROXIED=$pl kafka_start_private "$1"
}

# netfault_up_cluster: a Redis Cluster (the tests' profile, tests/cluster's bring-up)
# whose 3 masters each announce a proxy's port (cluster-announce-port; the cluster bus
# stays direct, so no failover is set off), so the front reaches each master through a
# proxy of its own; the fault goes on the proxy of the event's master (netfault_cluster_pick).
# Its replica replicates through that proxy too. fault_rcli follows MOVED (-c).
declare -A NETFAULT_PROXY_OF
netfault_up_cluster() {
    . "$(dirname "$0")/../../bench/cluster_lib.sh"
    cl_run_cluster "$E2E_TMP/cluster" test || {
        E2E_PIDS+=("$CL_RUNNER")
        e2e_fail "the cluster did not come up: $(cat "$E2E_TMP/cluster/failed" 2>/dev/null)"
    }
    E2E_PIDS+=("$CL_RUNNER")
    local m px url=""
    for m in $(cl_masters); do
        toxi_proxy "m$m" "$m"
        px=$(eval echo "\$TOXI_PORT_m$m")
        NETFAULT_PROXY_OF[$px]=m$m
        cl_cli "$m" config set cluster-announce-port "$px" cluster-announce-bus-port $((m + 100)) >/dev/null
        url="$url${url:+,}127.0.0.1:$px"
    done
    e2e_wait 30 "every node sees the announced ports" netfault_cluster_announced
    NETFAULT_CLUSTER_URL=redis-cluster://$url
    SECKILL_REDIS_URL=$CL_URL
    FAULT_REDIS_PORT=${CL_PORTS[0]}
    fault_rcli() { redis-cli -c -p "$FAULT_REDIS_PORT" "$@"; }
    e2e_log "redis cluster ${CL_PORTS[0]}-${CL_PORTS[5]}, masters through $url"
}

netfault_cluster_announced() {
    local p px
    for p in "${CL_PORTS[@]}"; do
        for px in "${!NETFAULT_PROXY_OF[@]}"; do
            cl_cli "$p" cluster nodes | grep -q " 127.0.0.1:$px@" || return 1
        done
    done
}

netfault_cluster_pick() {
    local px
    px=$(cl_master_of_event "$FAULT_EVENT") || e2e_fail "no master serves event $FAULT_EVENT"
    NETFAULT_PROXY=${NETFAULT_PROXY_OF[$px]:-}
    [ -n "$NETFAULT_PROXY" ] || e2e_fail "event $FAULT_EVENT is on $px, behind no proxy"
}

pg_via() { echo "host=127.0.0.1 port=$1 user=postgres dbname=postgres"; }

# netfault_services VIA: the consumer and the front, the one LINK names (consumer-* or the
# front) with VIA (ENV=VALUE: its address through the proxy); a consumer link is judged
# on the rows it writes.
netfault_services() {
    if [ "${LINK#consumer-}" != "$LINK" ]; then
        MEASURE=drain
        fault_start_consumer consumer "$1"
        fault_start_order order
    else
        fault_start_consumer consumer
        fault_start_order order "$1"
    fi
}

case $LINK in
front-redis | consumer-redis)
    netfault_up_single
    toxi_proxy link "$FAULT_REDIS_PORT"
    netfault_services "SECKILL_REDIS_URL=redis://127.0.0.1:$TOXI_PORT_link"
    ;;
front-pg | consumer-pg)
    netfault_up_single
    toxi_proxy link "$FAULT_PG_PORT"
    BLACKHOLE_S=40
    netfault_services "SECKILL_PG=$(pg_via "$TOXI_PORT_link")"
    ;;
front-kafka | consumer-kafka | kafka3)
    nodes=1
    [ "$LINK" = kafka3 ] && nodes=3
    netfault_up_kafka $nodes
    netfault_services "SECKILL_KAFKA_BROKERS=$NETFAULT_BOOT"
    BLACKHOLE_S=65
    # A produce waits for its acknowledgement up to message.timeout.ms.
    BOUND_MS=$((FAULT_MSG_TIMEOUT_MS + SLACK_MS))
    ;;
redis-cluster)
    fault_start_pg
    e2e_start_kafka
    netfault_up_cluster
    netfault_services "SECKILL_REDIS_URL=$NETFAULT_CLUSTER_URL"
    # rcluster retries a command whose connection was lost (RCL_RETRIES 8, backoff 20 ms
    # doubling to 500 ms: 2.12 s in all, rcluster/rcluster.h) before it answers NULL.
    BOUND_MS=$((FAULT_REDIS_TIMEOUT_MS + 2120 + SLACK_MS))
    ;;
*) e2e_fail "unknown link '$LINK'" ;;
esac
FAULT_URLS=http://127.0.0.1:$FAULT_PORT_order
fault_warmup
e2e_log "link $LINK through toxiproxy; faults: $FAULTS; answers bound ${BOUND_MS} ms, rate back within ${RECOVER_S} s"

# netfault_base_rate ADDED_AT_MS: the rate before the fault, per second (202s, or rows
# written for MEASURE=drain), from 0.5 s into the burst (the start) to the fault.
netfault_base_rate() {
    awk -F, -v s="$(e2e_summary start_unix_ms)" -v a="$1" -v m=$MEASURE '
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        { t = s + $1 * 1000 }
        t > s + 500 && t <= a { if (!t0) { t0 = t - 100; r0 = last } ok += $(col["ok_202"]); r1 = $(col["db_rows"]); t1 = t }
        { last = $(col["db_rows"]) + 0 }
        END { if (t1 <= t0) { print 0; exit }
              printf "%d\n", (m == "drain" ? r1 - r0 : ok) * 1000 / (t1 - t0) }' "$E2E_TMP/out/timeline.csv"
}

# netfault_recovery REMOVED_AT_MS BASE_RATE: ms from the removal to the end of the first
# 1 s window after it at 75% of BASE_RATE (202s, or rows written for MEASURE=drain);
# -1 when none.
netfault_recovery() {
    awk -F, -v s="$(e2e_summary start_unix_ms)" -v r="$1" -v rate="$2" -v m=$MEASURE '
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        { t = s + $1 * 1000 }
        t <= r { base = $(col["db_rows"]) + 0; next }
        { n++; ok[n] = $(col["ok_202"]); db[n] = $(col["db_rows"]) + 0
          if (n < 10) next
          if (m == "drain") got = db[n] - (n > 10 ? db[n - 10] : base)
          else { got = 0; for (j = n - 9; j <= n; j++) got += ok[j] }
          if (got >= 0.75 * rate) { printf "%d\n", t - r; found = 1; exit } }
        END { if (!found) print -1 }' "$E2E_TMP/out/timeline.csv"
}

# netfault_rows_at T_MS: rows of the event in PostgreSQL at wall-clock T (the bench's
# 100 ms samples: the last one at or before T).
netfault_rows_at() {
    awk -F, -v s="$(e2e_summary start_unix_ms)" -v t="$1" '
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        s + $1 * 1000 <= t { n = $(col["db_rows"]) + 0 } END { print n + 0 }' "$E2E_TMP/out/timeline.csv"
}

# netfault_max_ms: the slowest answer of the burst, whatever its class.
netfault_max_ms() {
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
             $(col["max_ms"]) + 0 > m { m = $(col["max_ms"]) + 0 } END { printf "%d\n", m }' \
        "$E2E_TMP/out/outcomes.csv"
}

netfault_case() {
    local fault=$1 hold=$HOLD_S add_at rm_at
    [ "$fault" != blackhole ] || hold=$BLACKHOLE_S
    local n=$((RATE * (3 + hold + AFTER_S)))
    FAULT_STOCK=$n
    [ ! -d "$E2E_TMP/out" ] || mv "$E2E_TMP/out" "$E2E_TMP/out-$NETFAULT_LAST"
    NETFAULT_LAST=$fault
    fault_bench_bg --stock $n --users $n --requests $n --rate $RATE --connections 16 \
        --drain.wait 90 --stall 60 --event.name "netfault-$LINK-$fault"
    e2e_wait 30 "$((RATE * 2)) units sold" fault_sold_at_least $((RATE * 2))
    [ "$LINK" != redis-cluster ] || netfault_cluster_pick
    toxi_fault_add "$NETFAULT_PROXY" "$fault"
    add_at=$(fault_now_ms)
    sleep "$hold" # the fault's length, not a synchronisation
    toxi_fault_remove "$NETFAULT_PROXY" "$fault"
    rm_at=$(fault_now_ms)
    fault_bench_wait
    local io max back ok503 during rows base
    io=$(e2e_outcome "0 io")
    max=$(netfault_max_ms)
    base=$(netfault_base_rate "$add_at")
    back=$(netfault_recovery "$rm_at" "$base")
    ok503=$(e2e_outcome "503 unavailable")
    during=$(fault_timeline_sum ok_202 "$add_at" "$rm_at")
    rows=$(($(netfault_rows_at "$rm_at") - $(netfault_rows_at "$add_at")))
    fault_wait_pending_empty 60
    local check=green
    fault_check || check=red
    e2e_log "figures: $LINK $fault: 202 $(e2e_summary accepted) of $n, 503 $ok503, cut $io;" \
        "during the fault $during 202s ($((RATE * hold)) offered in $hold s) and $rows rows written; slowest answer $max ms" \
        "(p99 of the 202s $(fault_lat 202 - p99_ms) ms); rate back ($base/s before) after $back ms; seckill-check $check"
    [ "$check" = green ] || e2e_fail "$fault: seckill-check found a violation"
    [ "$io" -eq 0 ] || e2e_fail "$fault: $io requests got no answer (connection cut)"
    [ "$max" -le "$BOUND_MS" ] || e2e_fail "$fault: an answer took $max ms, past the bound $BOUND_MS ms"
    [ "$back" -ge 0 ] && [ "$back" -le $((RECOVER_S * 1000)) ] ||
        e2e_fail "$fault: the rate was not back within $RECOVER_S s of the removal ($back ms)"
}

for f in $FAULTS; do netfault_case "$f"; done
e2e_log "PASS"
