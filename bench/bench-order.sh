#!/usr/bin/env bash
# bench-order.sh: seckill-order's figures (issue 3), run by `deploy/local.sh bench` or by
# hand (no stack needed). Starts its own redis-server (AOF, appendfsync always, in a
# temporary directory on the same disk as the stack's), its own seckill-devkafka and its
# own seckill-order (so bench orders never reach the shared topic and no consumer or
# PostgreSQL competes for the cores or the disk), and measures with 64 keep-alive
# connections:
#   accept   : an event whose stock never runs out, a distinct user per request, driven
#              by seckill-bench (14 us of CPU per request with one thread against wrk's 28 with its
#              Lua script: on two shared cores the load generator's CPU is taken from the
#              service; BENCH_LOADGEN=wrk for wrk)
#   sold_out : an event with no stock (answered by the in-process sold-out flag), by wrk
# beside redis-benchmark -P 16 running reserve.lua through EVALSHA on the same Redis.
# Prints a table, the service's stage timings, the CPU time each process spent per
# accepted order, and one JSON line. Environment knobs: BENCH_SECONDS (default 10),
# BENCH_CONNS (64), BENCH_WRK_THREADS (2, at most BENCH_CONNS), BENCH_WORKERS (service
# workers, default 1; 0 = one per core, the service's own default: on two cores that
# Redis, devkafka and the load generator share, one loop does the work at less CPU per
# order, and each delivery report is served on the loop that owns the request instead
# of one hop away; measured side by side in README), BENCH_EVENT_METHOD (the service's
# http.event_method, default epoll: sk_http keeps its read events added, so epoll has no
# per-request epoll_ctl to make, and poll would scan every connection each turn),
# BENCH_BIN (default $SECKILL_BIN_DIR; use a Release build),
# BENCH_REDIS=stack (the stack's Redis, from .run/env, instead of a private one),
# BENCH_REDIS_FSYNC (the private Redis's appendfsync, default always), BENCH_TOKENS,
# BENCH_ACCEPT_ONLY=1 (the accept run alone: quick A/B of a change), BENCH_LOADGEN
# (seckill-bench or wrk: the accept run's client; needs jq for the former),
# BENCH_SB_THREADS (seckill-bench's threads, default 1). SECKILL_KAFKA_*
# settings pass through to the service (e.g. SECKILL_KAFKA_LINGER_MS).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BENCH_BIN:-${SECKILL_BIN_DIR:-$ROOT/build/bin}}
SECS=${BENCH_SECONDS:-10}
CONNS=${BENCH_CONNS:-64}
WRK_THREADS=${BENCH_WRK_THREADS:-$(( CONNS < 2 ? CONNS : 2 ))}
for tool in wrk redis-cli redis-benchmark; do
    command -v $tool >/dev/null || { echo "bench-order: $tool is not installed" >&2; exit 1; }
done
[ -x "$BIN/seckill-order" ] && [ -x "$BIN/seckill-devkafka" ] || { echo "bench-order: build seckill-order and seckill-devkafka into $BIN" >&2; exit 1; }
LOADGEN=${BENCH_LOADGEN:-seckill-bench}
SB_THREADS=${BENCH_SB_THREADS:-1} # one loop drives 64 connections at less CPU per request than two
case $LOADGEN in
    seckill-bench) [ -x "$BIN/seckill-bench" ] && command -v jq >/dev/null || { echo "bench-order: BENCH_LOADGEN=seckill-bench needs $BIN/seckill-bench and jq" >&2; exit 1; } ;;
    wrk) ;;
    *) echo "bench-order: BENCH_LOADGEN must be seckill-bench or wrk" >&2; exit 1 ;;
esac

# shellcheck source=bench/bench_lib.sh
BENCH_NAME=order . "$ROOT/bench/bench_lib.sh"

if [ "${BENCH_REDIS:-private}" = stack ]; then
    : "${SECKILL_REDIS_URL:?BENCH_REDIS=stack: source .run/env first}"
    # host/port from the URL (redis://[user:pass@]host:port[/db]); the stack's Redis has no password
    hp=${SECKILL_REDIS_URL#redis://}; hp=${hp#*@}; hp=${hp%%/*}
    RHOST=${hp%%:*}; RPORT=${hp##*:}
    REDIS_DESC="the stack's Redis"
else
    RHOST=127.0.0.1; RPORT=$(sk_free_port)
    redis-server --port "$RPORT" --bind 127.0.0.1 --dir "$WORK" --appendonly yes --appendfsync "${BENCH_REDIS_FSYNC:-always}" \
        --save "" --daemonize no --logfile "$WORK/redis.log" &
    PIDS+=($!)
    REDIS_PID=$!
    sk_wait 10 redis-cli -p "$RPORT" ping || { echo "bench-order: redis-server did not start" >&2; exit 1; }
    REDIS_DESC="a private redis-server (AOF, appendfsync ${BENCH_REDIS_FSYNC:-always})"
fi

"$BIN/seckill-devkafka" --bootstrap-file "$WORK/kafka.bootstrap" --control-file "$WORK/kafka.control" \
    >"$WORK/devkafka.log" 2>&1 &
PIDS+=($!)
KAFKA_PID=$!
sk_wait 20 test -s "$WORK/kafka.bootstrap" || { echo "bench-order: seckill-devkafka did not start" >&2; exit 1; }
PORT=$(sk_free_port)
SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
env -u SECKILL_PG SECKILL_REDIS_URL="redis://$RHOST:$RPORT" SECKILL_JWT_SECRET="$SECRET" SECKILL_HTTP_PORT="$PORT" SECKILL_HTTP_BIND=127.0.0.1 \
    SECKILL_KAFKA_BROKERS="$(cat "$WORK/kafka.bootstrap")" SECKILL_LOG_LEVEL=warn \
    SECKILL_LIMITS_INFLIGHT=100000 SECKILL_LIMITS_KAFKA_INFLIGHT=100000 SECKILL_WORKERS="${BENCH_WORKERS:-1}" \
    SECKILL_HTTP_EVENT_METHOD="${BENCH_EVENT_METHOD:-epoll}" \
    "$BIN/seckill-order" >"$WORK/order.log" 2>&1 &
PIDS+=($!)
ORDER_PID=$!
sk_wait_http 20 "http://127.0.0.1:$PORT/healthz" || { echo "bench-order: seckill-order is not ready" >&2; exit 1; }
# CPU seconds (user+system) the service has used so far, from /proc (clock ticks).
TICK=$(getconf CLK_TCK)

# Events straight into Redis (event_load.lua), fresh ids above anything libidgen hands out.
base=$(( 8500000000000000000 + $(date +%s) * 1000 ))
EV_ACCEPT=$base; EV_SOLD=$(( base + 1 ))
now_ms=$(( $(date +%s) * 1000 ))
load() { redis-cli -h "$RHOST" -p "$RPORT" --no-auth-warning EVAL "$(cat "$ROOT/lua/event_load.lua")" 2 \
    "seckill:{e$1}:stock" "seckill:{e$1}:meta" "$2" $(( now_ms - 60000 )) $(( now_ms + 3600000 )) 1 >/dev/null; }
load $EV_ACCEPT 2000000000
load $EV_SOLD 0

# Tokens: one distinct user per request, more than the accept run can use.
NTOK=${BENCH_TOKENS:-$(( SECS * 40000 ))}
SECKILL_JWT_SECRET="$SECRET" "$BIN/seckill-order" token --sub $(( $(date +%s) * 1000000 )) --count "$NTOK" --ttl 3600 >"$WORK/tokens"

# CPU of the service, Redis and the dev Kafka from cpu_mark to cpu_since NAME, into
# $WORK/NAME.cpu, .rcpu, .kcpu: on two shared cores their sum bounds the rate.
cpu_mark() { C0=$(sk_cpu_ticks "$ORDER_PID"); R0=$(sk_cpu_ticks "${REDIS_PID:-0}"); K0=$(sk_cpu_ticks "$KAFKA_PID"); }
cpu_since() {
    echo $(( $(sk_cpu_ticks "$ORDER_PID") - C0 )) >"$WORK/$1.cpu"
    echo $(( $(sk_cpu_ticks "${REDIS_PID:-0}") - R0 )) >"$WORK/$1.rcpu"
    echo $(( $(sk_cpu_ticks "$KAFKA_PID") - K0 )) >"$WORK/$1.kcpu"
}
run_wrk() { # name event
    # wrk runs in the background so that every process's CPU is sampled once wrk's own
    # set-up is over (its script reads the token file before it starts any thread: about
    # a second of CPU that is no part of the run). wrk's total comes from `time`.
    local TIMEFORMAT="%U %S"
    { time wrk -c"$CONNS" -t"$WRK_THREADS" -d"${SECS}s" --latency -s "$ROOT/bench/order_wrk.lua" "http://127.0.0.1:$PORT" \
        -- "/api/v1/events/$2/orders" "$WORK/tokens" "$WRK_THREADS" >"$WORK/$1.wrk" 2>&1; } 2>"$WORK/$1.wrktime" &
    local sh=$! wp="" w0=0
    while kill -0 "$sh" 2>/dev/null; do # all of wrk's threads exist: its set-up is done
        [ -n "$wp" ] || wp=$(pgrep -P "$sh" -x wrk || true)
        if [ -n "$wp" ] && [ "$(ls "/proc/$wp/task" 2>/dev/null | wc -l)" -gt "$WRK_THREADS" ]; then w0=$(sk_cpu_ticks "$wp"); break; fi
        sleep 0.02
    done
    cpu_mark
    wait "$sh"
    cpu_since "$1"
    awk -v hz="$TICK" -v w0="$w0" '{ printf "%.0f\n", ($1 + $2) * hz - w0 }' "$WORK/$1.wrktime" >"$WORK/$1.wcpu"
}
run_sb() { # name event: the same run driven by seckill-bench (BENCH_LOADGEN=seckill-bench)
    # A libevent client with a hand-written HTTP writer and its own token arena: one user per
    # request (users = requests, each user tries once), closed loop on CONNS keep-alive
    # connections. Its set-up (minting the tokens) ends with the tokens_minted log line:
    # every process's CPU is sampled from there. Its summary is rewritten in wrk's words so
    # that the parsing below serves both.
    local TIMEFORMAT="%U %S"
    { time "$BIN/seckill-bench" --http="http://127.0.0.1:$PORT" --jwt.secret="$SECRET" --pg= \
        --event="$2" --users="$NTOK" --requests="$NTOK" --duration="$SECS" --connections="$CONNS" \
        --threads="$SB_THREADS" --drain.wait=0 --log.level=info --out="$WORK/$1.sb" >"$WORK/$1.sbout" 2>"$WORK/$1.sberr"; } 2>"$WORK/$1.wrktime" &
    local sh=$! wp="" w0=0
    while kill -0 "$sh" 2>/dev/null; do
        [ -n "$wp" ] || wp=$(pgrep -P "$sh" -x seckill-bench || true)
        if [ -n "$wp" ] && grep -q tokens_minted "$WORK/$1.sberr" 2>/dev/null; then w0=$(sk_cpu_ticks "$wp"); break; fi
        sleep 0.02
    done
    cpu_mark
    wait "$sh" || true
    cpu_since "$1"
    tail -n 1 "$WORK/$1.wrktime" | awk -v hz="$TICK" -v w0="$w0" '{ printf "%.0f\n", ($1 + $2) * hz - w0 }' >"$WORK/$1.wcpu"
    jq -r '"\(.answered) requests in \(.burst_s)s", "Requests/sec: \(.rate_rps)",
        "     50%    \(.latency_ms.p50)ms", "     99%    \(.latency_ms.p99)ms",
        "  Non-2xx or 3xx responses: \(.answered - (.outcomes["202"] // 0))"' "$WORK/$1.sb/summary.json" >"$WORK/$1.wrk"
}
# the service's CPU time per request, in microseconds (independent of what else runs)
cpu_us() { awk -v t="$(cat "$WORK/$1.${2:-cpu}")" -v n="$(sk_total "$WORK/$1.wrk")" -v hz="$TICK" 'BEGIN { if (n > 0) printf "%.0f", t / hz * 1e6 / n; else print 0 }'; }
# wrk latency lines look like "     50%    1.23ms" (us, ms or s).

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
if [ "$LOADGEN" = seckill-bench ]; then run_sb accept $EV_ACCEPT; else run_wrk accept $EV_ACCEPT; fi
curl -fsS "http://127.0.0.1:$PORT/metrics" >"$WORK/accept.metrics" || true
# mean of one accept-path stage in ms, from the service's own histogram (sum / count)
stage_ms() { awk -v s="$1" -F'[ ]' '$1 == "seckill_order_stage_seconds_sum{stage=\""s"\"}" { sum = $2 }
    $1 == "seckill_order_stage_seconds_count{stage=\""s"\"}" { n = $2 }
    END { if (n > 0) printf "%.2f", sum * 1000 / n; else print "n/a" }' "$WORK/accept.metrics"; }
# Prime the flag (first answer comes from Redis), then measure the sold-out path.
if [ -z "${BENCH_ACCEPT_ONLY:-}" ]; then
run_wrk sold_out $EV_SOLD

SHA=$(redis-cli -h "$RHOST" -p "$RPORT" SCRIPT LOAD "$(cat "$ROOT/lua/reserve.lua")")
EV_RB=$(( base + 2 )); load $EV_RB 2000000000
redis-benchmark -h "$RHOST" -p "$RPORT" -c "$CONNS" -n $(( SECS * 100000 )) -P 16 -r 1000000000 --csv \
    EVALSHA "$SHA" 4 "seckill:{e$EV_RB}:stock" "seckill:{e$EV_RB}:buyers" "seckill:{e$EV_RB}:meta" \
    "seckill:{e$EV_RB}:pending" "$now_ms" __rand_int__ __rand_int__ >"$WORK/redis.csv" 2>&1
# --csv: "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
REDIS_RPS=$(awk -F'","' 'NR==2 { printf "%.0f", $2 }' "$WORK/redis.csv")
else # BENCH_ACCEPT_ONLY: a quick A/B of the accept path alone
    : >"$WORK/sold_out.wrk"; echo 0 >"$WORK/sold_out.cpu"; REDIS_RPS=0
fi

accepted_in_redis=$(( 2000000000 - $(redis-cli -h "$RHOST" -p "$RPORT" GET "seckill:{e$EV_ACCEPT}:stock") ))
for e in $EV_ACCEPT $EV_SOLD $(( base + 2 )); do
    redis-cli -h "$RHOST" -p "$RPORT" DEL "seckill:{e$e}:stock" "seckill:{e$e}:meta" "seckill:{e$e}:buyers" \
        "seckill:{e$e}:pending" >/dev/null
done
# The accepted orders' index entries (seckill:oidx:<second>) expire on their own (order.index_ttl_s).

A_RPS=$(sk_rps "$WORK/accept.wrk"); S_RPS=$(sk_rps "$WORK/sold_out.wrk")
A50=$(sk_lat_ms "$WORK/accept.wrk" 50%); A99=$(sk_lat_ms "$WORK/accept.wrk" 99%)
S50=$(sk_lat_ms "$WORK/sold_out.wrk" 50%); S99=$(sk_lat_ms "$WORK/sold_out.wrk" 99%)
A_BAD=$(sk_non2xx "$WORK/accept.wrk"); A_N=$(sk_total "$WORK/accept.wrk")
S_N=$(sk_total "$WORK/sold_out.wrk"); S_BAD=$(sk_non2xx "$WORK/sold_out.wrk")

printf '\nload average before the runs: %s (other work on the machine shares the 2 cores)\n' "$LOAD0"
printf 'seckill-order (%s s per run, %s connections, accept: %s, sold out: wrk -t%s; seckill-order %s worker(s) on %s; %s; private devkafka; 2 cores shared by all)\n' "$SECS" "$CONNS" "$( [ "$LOADGEN" = wrk ] && echo "wrk -t$WRK_THREADS" || echo "seckill-bench --threads=$SB_THREADS")" "$WRK_THREADS" "${BENCH_WORKERS:-1}" "${BENCH_EVENT_METHOD:-epoll}" "$REDIS_DESC"
printf '%-34s %12s %9s %9s %s\n' "path" "requests/s" "p50 ms" "p99 ms" "notes"
printf '%-34s %12s %9s %9s %s\n' "accept (202, distinct users)" "$A_RPS" "$A50" "$A99" "$A_N requests, $A_BAD not 2xx, $accepted_in_redis reserved in Redis, $(cpu_us accept) us CPU/request in seckill-order"
printf '%-34s %12s %9s %9s %s\n' "sold out (409, in-process flag)" "$S_RPS" "$S50" "$S99" "$S_N requests, $S_BAD answered 409, $(cpu_us sold_out) us CPU/request"
printf '%-34s %12s %9s %9s %s\n' "redis-benchmark EVALSHA reserve -P16" "$REDIS_RPS" "" "" "same Redis, same run"
printf 'accept path, mean per stage inside seckill-order: reserve.lua %s ms, Kafka produce -> delivery report %s ms, confirm.lua %s ms\n' \
    "$(stage_ms reserve)" "$(stage_ms kafka)" "$(stage_ms confirm)"
printf 'accept path, CPU per request: seckill-order %s us, redis-server %s us, seckill-devkafka %s us, load generator (%s) %s us\n' \
    "$(cpu_us accept)" "$(cpu_us accept rcpu)" "$(cpu_us accept kcpu)" "$LOADGEN" "$(cpu_us accept wcpu)"
printf 'accept / redis = %s (target >= 0.25); sold_out / accept = %s (target >= 1.5); accept p99 %s ms (target <= 10)\n' \
    "$(sk_ratio "$A_RPS" "$REDIS_RPS")" "$(sk_ratio "$S_RPS" "$A_RPS")" "$A99"
printf '{"bench":"order","seconds":%s,"connections":%s,"accept_rps":%s,"accept_p50_ms":%s,"accept_p99_ms":%s,"accept_not_2xx":%s,"sold_out_rps":%s,"sold_out_p50_ms":%s,"sold_out_p99_ms":%s,"redis_evalsha_rps":%s,"accept_over_redis":%s,"sold_out_over_accept":%s,"accept_cpu_us":%s,"sold_out_cpu_us":%s,"loadavg_1m":%s}\n' \
    "$SECS" "$CONNS" "$A_RPS" "$A50" "$A99" "$A_BAD" "$S_RPS" "$S50" "$S99" "$REDIS_RPS" "$(sk_ratio "$A_RPS" "$REDIS_RPS")" "$(sk_ratio "$S_RPS" "$A_RPS")" "$(cpu_us accept)" "$(cpu_us sold_out)" "$(cut -d' ' -f1 /proc/loadavg)"
