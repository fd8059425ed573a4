# shellcheck shell=bash disable=SC2034 # CL_* are read by the tests that source this
# tests/cluster/lib.sh: a private flash-sale pipeline on a throwaway Redis Cluster, for
# the tests of label `cluster` (sourced after tests/e2e/lib.sh, whose helpers, pid list,
# EXIT trap and skip rules it reuses).
#
# The cluster: deploy/cluster.sh's (the one bring-up, as tests/support/sk_test_cluster
# uses it), profile test (node timeout 1500 ms, replica validity factor 0 so that any
# replica may take over, AOF off: the replicas hold the data): 6 redis-server processes on
# a run of free loopback ports below the ephemeral range (cluster bus +100), 3 masters + 3
# replicas. Full coverage is not required, so while one master fails over the others keep
# answering. Then the test's
# own seckill-devkafka, fronts (several seckill-order on one JWT secret) and consumers
# (one group); only PostgreSQL is shared (SECKILL_PG), as in tests/e2e.
# CL_KEEP_LOGS=1 prints the cluster's logs on failure too (they are large).

# The cluster helpers shared with bench/demo.sh (cl_cli, cl_masters, cl_master_of_event,
# cl_create_event, cl_create_events_on_masters).
. "$(dirname "${BASH_SOURCE[0]}")/../../bench/cluster_lib.sh"

CL_FRONTS=()      # base URLs of the fronts
CL_FRONT_PIDS=()
CL_CONSUMER_PIDS=()

cl_require() {
    e2e_require
    local t
    for t in redis-server redis-cli curl; do
        command -v $t >/dev/null || e2e_skip "$t is not installed"
    done
}

cl_start_cluster() {
    # The runner first in the list: e2e_cleanup stops it (and so the nodes) last.
    if ! cl_run_cluster "$E2E_TMP/cluster" test; then
        E2E_PIDS+=("$CL_RUNNER")
        e2e_fail "the cluster did not come up: $(cat "$E2E_TMP/cluster/failed" 2>/dev/null)"
    fi
    E2E_PIDS+=("$CL_RUNNER")
    e2e_log "redis cluster on ${CL_PORTS[0]}-${CL_PORTS[5]} (3 masters + 3 replicas)"
}

# cl_pid_of PORT: the pid of the node on PORT.
cl_pid_of() { cl_cli "$1" info server | sed -n 's/^process_id:\([0-9]*\).*/\1/p'; }

# cl_start_consumers N: N seckill-consumer in one group.
cl_start_consumers() {
    local i port
    for ((i = 1; i <= $1; i++)); do
        port=$(e2e_free_port)
        SECKILL_HTTP_PORT=$port SECKILL_KAFKA_BROKERS=$E2E_BROKERS SECKILL_KAFKA_SESSION_TIMEOUT_MS=6000 \
            SECKILL_GROUP_ID="seckill-cluster-$$" "$BIN/seckill-consumer" >>"$E2E_TMP/consumer$i.log" 2>&1 &
        E2E_PIDS+=($!)
        CL_CONSUMER_PIDS+=($!)
        e2e_wait 60 "seckill-consumer $i /healthz" curl -fsS "http://127.0.0.1:$port/healthz"
    done
    e2e_log "$1 consumers up"
}


# cl_front_up PID PORT: ready, or the process is gone (then 1).
cl_front_up() {
    until curl -fsS "http://127.0.0.1:$2/readyz" >/dev/null 2>&1; do
        kill -0 "$1" 2>/dev/null || return 1
        sleep 0.05
    done
}

# cl_start_fronts N [ENV=VALUE...]: N seckill-order on the cluster, one JWT secret. The
# per-user rate limit is out of the way: the benches reuse user ids across events. A
# front that could not bind its port (taken meanwhile) is started again on another.
cl_start_fronts() {
    local n=$1 i port pid try
    shift
    E2E_SECRET=${E2E_SECRET:-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')}
    for ((i = 1; i <= n; i++)); do
        for try in 1 2 3; do
            port=$(e2e_free_port)
            env SECKILL_HTTP_PORT="$port" SECKILL_HTTP_BIND=127.0.0.1 SECKILL_KAFKA_BROKERS="$E2E_BROKERS" \
                SECKILL_JWT_SECRET="$E2E_SECRET" SECKILL_REDIS_URL="$CL_URL" SECKILL_WORKERS=2 \
                SECKILL_GROUP_ID="seckill-cluster-$$" \
                SECKILL_RATELIMIT_RATE=1000000 SECKILL_RATELIMIT_BURST=1000000 "$@" \
                "$BIN/seckill-order" >>"$E2E_TMP/order$i.log" 2>&1 &
            pid=$!
            E2E_PIDS+=("$pid")
            if timeout 60 bash -c "$(declare -f cl_front_up); cl_front_up $pid $port"; then
                break
            fi
            kill -0 $pid 2>/dev/null && e2e_fail "seckill-order $i /readyz: not within 60s"
            grep -q "Address already in use" "$E2E_TMP/order$i.log" ||
                e2e_fail "seckill-order $i exited at start: $(tail -n 3 "$E2E_TMP/order$i.log")"
            [ $try -lt 3 ] || e2e_fail "seckill-order $i: no port it could bind in 3 tries"
        done
        CL_FRONT_PIDS+=("$pid")
        CL_FRONTS+=("http://127.0.0.1:$port")
    done
    CL_HTTP=$(IFS=,; echo "${CL_FRONTS[*]}")
    CL_SECRET=$E2E_SECRET
    CL_FRONT=${CL_FRONTS[0]}
    e2e_log "$n fronts up: $CL_HTTP"
}

# cl_check EVENT OUTDIR [ARGS...]: seckill-check of one event on the cluster.
cl_check() {
    local ev=$1 out=$2
    shift 2
    SECKILL_KAFKA_BROKERS=$E2E_BROKERS "$BIN/seckill-check" --redis.url "$CL_URL" \
        --pg "$SECKILL_PG" "$@" "$ev" "$out/accepted.txt"
}

# cl_summary DIR KEY / cl_outcome DIR "409 sold_out": figures from a bench's summary.json.
cl_summary() { sk_json_num "$1/summary.json" "$2"; }
cl_outcome() { sk_json_count "$1/summary.json" "$2"; }

# The cluster's logs on failure, only when asked (they are long).
cl_dump_logs() {
    [ -n "${CL_KEEP_LOGS:-}" ] || return 0
    local f
    for f in "$E2E_TMP"/cluster/node-*.log; do
        echo "---- last lines of $(basename "$f")" >&2
        tail -n 20 "$f" >&2
    done
}

cl_log_events() {
    local ev
    for ev in "${CL_EVENTS[@]}"; do e2e_log "event $ev on the master at port ${CL_EVENT_MASTER[$ev]}"; done
}

# cl_start_pipeline [ENV=VALUE...]: what every cluster test runs on: the cluster, the dev
# Kafka, 2 consumers and 2 fronts (the settings go to the fronts).
cl_start_pipeline() {
    cl_require
    cl_start_cluster
    e2e_start_kafka
    cl_start_consumers 2
    cl_start_fronts 2 "$@"
}
