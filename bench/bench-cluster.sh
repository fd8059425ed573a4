#!/usr/bin/env bash
# bench-cluster.sh: seckill-order on a Redis Cluster beside the same front on a single
# Redis, in one run (issue 8). Run by `deploy/local.sh bench cluster` or
# `deploy/local.sh bench --cluster` (plain `bench` skips it).
#
# Starts its own servers so that the two sides differ only in the Redis behind them: a
# single redis-server and a 3 masters + 3 replicas Redis Cluster (bench/cluster_lib.sh),
# both with AOF and appendfsync always as the local stack runs them; one seckill-devkafka;
# one seckill-order on each (same settings, same JWT secret). wrk drives each front in
# turn (64 keep-alive connections, 2 threads, bench/order_wrk.lua):
#   accept   : an event whose stock never runs out, a distinct user per request
#   sold_out : an event with no stock (the in-process sold-out flag answers)
# Each path runs BENCH_REPEAT (3) times per side, the sides alternating (single, cluster,
# single, ...) so that drift of the shared machine hits both; medians are reported with
# the ratio cluster / single. On one 2-core machine the 6 nodes, the front and wrk share
# the cores: the figure is the cost of routing (and of the replicas' work), not scaling;
# README.md says how to measure scaling.
# Then segmented stock (issue 19) on the cluster side: one hot event with K = 1 (every
# order on one master) against one with K = 3 whose segments sit on the three masters,
# alternating, BENCH_REPEAT runs each: accepted orders/s and each master's CPU time per
# accepted order (how evenly the segments spread the gate's work). On 2 cores this is
# the cost of the segments, not the scaling (docs/redis-cluster.md).
# Environment: BENCH_SECONDS (10) BENCH_CONNS (64) BENCH_REPEAT (3) BENCH_BIN (default
# $SECKILL_BIN_DIR; use a Release build) BENCH_WORKERS (0: one per core) BENCH_SEGMENTS
# (3; 0 skips the segments runs).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BENCH_BIN:-${SECKILL_BIN_DIR:-$ROOT/build/bin}}
SECS=${BENCH_SECONDS:-10}
CONNS=${BENCH_CONNS:-64}
REPEAT=${BENCH_REPEAT:-3}
for tool in wrk redis-server redis-cli; do
    command -v $tool >/dev/null || { echo "bench-cluster: $tool is not installed" >&2; exit 1; }
done
[ -x "$BIN/seckill-order" ] && [ -x "$BIN/seckill-devkafka" ] ||
    { echo "bench-cluster: build seckill-order and seckill-devkafka into $BIN" >&2; exit 1; }
# shellcheck source=bench/cluster_lib.sh
. "$ROOT/bench/cluster_lib.sh"

# shellcheck source=bench/bench_lib.sh
BENCH_NAME=cluster . "$ROOT/bench/bench_lib.sh"
die() { echo "bench-cluster: $*" >&2; exit 1; }

# The two Redis sides.
RPORT=$(sk_free_port)
redis-server --port "$RPORT" --bind 127.0.0.1 --dir "$WORK" --appendonly yes --appendfsync always \
    --save "" --logfile "$WORK/redis.log" </dev/null >/dev/null 2>&1 &
PIDS+=($!)
sk_wait 20 redis-cli -p "$RPORT" ping || die "redis-server did not start"
cl_run_cluster "$WORK/cluster" bench || { PIDS+=("$CL_RUNNER"); die "the cluster did not come up: $(cat "$WORK/cluster/failed" 2>/dev/null)"; }
PIDS+=("$CL_RUNNER")

"$BIN/seckill-devkafka" --bootstrap-file "$WORK/kafka.bootstrap" --control-file "$WORK/kafka.control" \
    >"$WORK/devkafka.log" 2>&1 &
PIDS+=($!)
sk_wait 20 test -s "$WORK/kafka.bootstrap" || die "seckill-devkafka did not start"
SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')

declare -A PORT FPID
start_front() { # side url
    local port
    port=$(sk_free_port)
    env -u SECKILL_PG SECKILL_REDIS_URL="$2" SECKILL_JWT_SECRET="$SECRET" SECKILL_HTTP_PORT="$port" \
        SECKILL_HTTP_BIND=127.0.0.1 SECKILL_KAFKA_BROKERS="$(cat "$WORK/kafka.bootstrap")" SECKILL_LOG_LEVEL=warn \
        SECKILL_LIMITS_INFLIGHT=100000 SECKILL_LIMITS_KAFKA_INFLIGHT=100000 SECKILL_WORKERS="${BENCH_WORKERS:-0}" \
        SECKILL_RECONCILE_INTERVAL_MS=0 "$BIN/seckill-order" >"$WORK/order-$1.log" 2>&1 &
    PIDS+=($!)
    FPID[$1]=$!
    PORT[$1]=$port
    sk_wait 30 curl -fsS "http://127.0.0.1:$port/readyz" || die "seckill-order on the $1 side is not ready (see $WORK/order-$1.log)"
}
start_front single "redis://127.0.0.1:$RPORT"
start_front cluster "$CL_URL"

# Events straight into Redis (event_load.lua), ids above anything libidgen hands out.
now_ms=$(($(date +%s) * 1000))
next_ev=$((8600000000000000000 + $(date +%s) * 1000))
LUA=$(cat "$ROOT/lua/event_load.lua")
load() { # side id stock [tag K]: the event, or its segment with hash tag `tag` of K
    local cli=(redis-cli -p "$RPORT") tag=${4:-e$2}
    [ "$1" = cluster ] && cli=(redis-cli -c -p "${CL_PORTS[0]}")
    "${cli[@]}" EVAL "$LUA" 2 "seckill:{$tag}:stock" "seckill:{$tag}:meta" "$3" $((now_ms - 60000)) \
        $((now_ms + 3600000)) 1 ${5:+"$5"} >/dev/null
}
new_event() { next_ev=$((next_ev + 1)); load "$1" "$next_ev" "$2"; EV=$next_ev; }

# Tokens: one distinct user per request; each accept run takes a fresh event, so the
# same users may buy again.
NTOK=${BENCH_TOKENS:-$((SECS * 40000))}
SECKILL_JWT_SECRET="$SECRET" "$BIN/seckill-order" token --sub $(($(date +%s) * 1000000)) --count "$NTOK" \
    --ttl 3600 >"$WORK/tokens"

TICK=$(getconf CLK_TCK)
run_wrk() { # side path event run
    local f=$WORK/$1-$2-$4 c0
    c0=$(sk_cpu_ticks "${FPID[$1]}")
    wrk -c"$CONNS" -t2 -d"${SECS}s" --latency -s "$ROOT/bench/order_wrk.lua" "http://127.0.0.1:${PORT[$1]}" \
        -- "/api/v1/events/$3/orders" "$WORK/tokens" 2 >"$f.wrk" 2>&1
    echo $(($(sk_cpu_ticks "${FPID[$1]}") - c0)) >"$f.cpu"
}
cpu_us() { awk -v t="$(cat "$1.cpu")" -v n="$(sk_total "$1.wrk")" -v hz="$TICK" 'BEGIN { if (n > 0) printf "%.0f", t / hz * 1e6 / n; else print 0 }'; }

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A SOLD
for side in single cluster; do
    new_event "$side" 0
    SOLD[$side]=$EV
done
for ((r = 1; r <= REPEAT; r++)); do
    for side in single cluster; do
        new_event "$side" 2000000000
        run_wrk "$side" accept "$EV" "$r"
        run_wrk "$side" sold_out "${SOLD[$side]}" "$r"
        echo "bench-cluster: run $r $side: accept $(sk_rps "$WORK/$side-accept-$r.wrk")/s, sold_out $(sk_rps "$WORK/$side-sold_out-$r.wrk")/s" >&2
    done
done

# med SIDE PATH FIELD: the median over the runs of rps, p50, p99, cpu or bad.
med() {
    local r f
    for ((r = 1; r <= REPEAT; r++)); do
        f=$WORK/$1-$2-$r
        case $3 in
        rps) sk_rps "$f.wrk" ;;
        p50) sk_lat_ms "$f.wrk" 50% ;;
        p99) sk_lat_ms "$f.wrk" 99% ;;
        cpu) cpu_us "$f" ;;
        bad) sk_non2xx "$f.wrk" ;;
        esac
        echo
    done | grep . | sk_median
}

printf '\nload average before the runs: %s (2 cores shared by wrk, the front and every Redis process)\n' "$LOAD0"
printf 'seckill-order on a single Redis vs on a Redis Cluster (3 masters + 3 replicas), AOF appendfsync always on every node;\n'
printf '%s s per run, %s connections, wrk -t2, medians of %s runs per side, the sides alternating\n' "$SECS" "$CONNS" "$REPEAT"
printf '%-10s %-8s %12s %9s %9s %9s %s\n' path side "requests/s" "p50 ms" "p99 ms" "us CPU" "not 2xx (accept) / 409 (sold out)"
json=""
for path in accept sold_out; do
    for side in single cluster; do
        printf '%-10s %-8s %12s %9s %9s %9s %s\n' "$path" "$side" "$(med $side $path rps)" "$(med $side $path p50)" \
            "$(med $side $path p99)" "$(med $side $path cpu)" "$(med $side $path bad)"
    done
    rs=$(med single $path rps)
    rc=$(med cluster $path rps)
    printf '%-10s cluster / single = %s\n' "$path" "$(sk_ratio "$rc" "$rs")"
    json="$json\"${path}_single_rps\":$rs,\"${path}_cluster_rps\":$rc,\"${path}_ratio\":$(sk_ratio "$rc" "$rs"),"
done

# ---- segmented stock: one hot event, K = 1 against K = 3, on the cluster ----
KSEG=${BENCH_SEGMENTS:-3}
if [ "$KSEG" -gt 1 ]; then
    seg_tag() { if [ "$2" -eq 0 ]; then echo "e$1"; else echo "e$1.$2"; fi; }
    # an event id whose KSEG segment tags sit on KSEG different masters (when there are
    # that many), loaded with its stock split
    new_segmented() { # stock
        local k n
        while :; do
            next_ev=$((next_ev + 1))
            n=$(for ((k = 0; k < KSEG; k++)); do cl_master_of_event "$(seg_tag "$next_ev" $k | sed 's/^e//')"; done | sort -u | wc -l)
            [ "$n" -ge $((KSEG < 3 ? KSEG : 3)) ] && break
        done
        for ((k = KSEG - 1; k >= 0; k--)); do load cluster "$next_ev" $(($1 / KSEG)) "$(seg_tag "$next_ev" $k)" "$KSEG"; done
        EV=$next_ev
    }
    mapfile -t MASTERS < <(cl_masters)
    declare -A MPID
    for m in "${MASTERS[@]}"; do MPID[$m]=$(redis-cli -p "$m" info server | sed -n 's/^process_id:\([0-9]*\).*/\1/p'); done
    run_seg() { # K event run
        local f=$WORK/seg$1-$3 m
        for m in "${MASTERS[@]}"; do echo "$m $(sk_cpu_ticks "${MPID[$m]}")"; done >"$f.m0"
        run_wrk cluster "seg$1" "$2" "$3"
        mv "$WORK/cluster-seg$1-$3.wrk" "$f.wrk"
        for m in "${MASTERS[@]}"; do echo "$m $(sk_cpu_ticks "${MPID[$m]}")"; done >"$f.m1"
    }
    for ((r = 1; r <= REPEAT; r++)); do
        new_event cluster 2000000000
        run_seg 1 "$EV" "$r"
        new_segmented 2000000000
        run_seg "$KSEG" "$EV" "$r"
        echo "bench-cluster: run $r segments: K=1 $(sk_rps "$WORK/seg1-$r.wrk")/s, K=$KSEG $(sk_rps "$WORK/seg$KSEG-$r.wrk")/s" >&2
    done
    # accepted orders/s of a run: 2xx answers over its seconds
    acc() { awk -v t="$(sk_total "$1")" -v b="$(sk_non2xx "$1")" -v s="$SECS" 'BEGIN { printf "%.0f", (t - b) / s }'; }
    # master CPU us per accepted order in a run, one figure per master
    mcpu() { # file-prefix master
        awk -v m="$2" -v hz="$TICK" -v n="$(awk -v t="$(sk_total "$1.wrk")" -v b="$(sk_non2xx "$1.wrk")" 'BEGIN { print t - b }')" \
            'FNR == NR { if ($1 == m) a = $2; next } $1 == m { if (n > 0) printf "%.1f", ($2 - a) / hz * 1e6 / n; else print 0 }' "$1.m0" "$1.m1"
    }
    smed() { # K what [master]
        local r
        for ((r = 1; r <= REPEAT; r++)); do
            case $2 in
            acc) acc "$WORK/seg$1-$r.wrk" ;;
            p99) sk_lat_ms "$WORK/seg$1-$r.wrk" 99% ;;
            cpu) mcpu "$WORK/seg$1-$r" "$3" ;;
            esac
            echo
        done | grep . | sk_median
    }
    printf '\none hot event on the cluster, K = 1 vs K = %s segments (on %s masters), medians of %s runs, alternating\n' \
        "$KSEG" "${#MASTERS[@]}" "$REPEAT"
    printf '%-6s %12s %9s   %s\n' K "accepted/s" "p99 ms" "us CPU per accepted order on each master (port)"
    for k in 1 "$KSEG"; do
        line=""
        for m in "${MASTERS[@]}"; do line="$line $m:$(smed "$k" cpu "$m")"; done
        printf '%-6s %12s %9s  %s\n' "$k" "$(smed "$k" acc)" "$(smed "$k" p99)" "$line"
    done
    a1=$(smed 1 acc)
    ak=$(smed "$KSEG" acc)
    printf 'accepted K=%s / K=1 = %s\n' "$KSEG" "$(sk_ratio "$ak" "$a1")"
    json="$json\"seg_k1_accepted_rps\":$a1,\"seg_k${KSEG}_accepted_rps\":$ak,\"seg_ratio\":$(sk_ratio "$ak" "$a1"),"
fi
printf '{"bench":"cluster","seconds":%s,"connections":%s,"repeat":%s,%s"loadavg_1m":%s}\n' \
    "$SECS" "$CONNS" "$REPEAT" "$json" "$(cut -d' ' -f1 /proc/loadavg)"
