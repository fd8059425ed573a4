#!/usr/bin/env bash
# bench-ceiling.sh: seckill-order against the HTTP ceiling of the machine (issue 16), run
# by `deploy/local.sh bench` or by hand (no stack needed). In one run, alternating, for
# BENCH_ROUNDS rounds (3), each row driven by the same client (wrk -t1 -c64, one
# pre-minted token per request, bench/ceiling_wrk.lua):
#   nginx     : Debian's nginx-core, 2 workers, `return 409` with a fixed JSON body (a
#               private process: its own config, pid and logs under the run's work dir,
#               on a free loopback port): the machine's HTTP ceiling
#   accept    : seckill-order, an event whose stock never runs out, a distinct user per request
#   accept_challenge : the same with the event's proof-of-work challenge on (issue 31,
#               difficulty 1), each token with its user's solution pre-solved before the
#               timed part (seckill-order token --challenge): what the check costs the
#               front (not in BENCH_BIN_BEFORE's rows: a build before it has no challenge)
#   sold_out  : seckill-order, an event with no stock (the in-process sold-out flag)
#   flash     : seckill-order, 10,000 stock and 200,000 distinct users, one request each,
#               rate to the last answer
# each for a private Redis without persistence and one with appendfsync always (a fresh
# redis-server, seckill-devkafka and seckill-order per round and mode). Prints the
# medians (and ranges), p50/p99, the CPU per accepted order of each process (from
# /proc), Redis calls per accepted order (INFO commandstats deltas: EVALSHA alone, and
# every command including those run inside scripts; and the script calls of the gate's
# reserve.lua and confirm.lua from seckill-order's /metrics), and the ratios to the nginx row of
# the same round against the issue's targets. The machine's other work shares the cores:
# quote medians and ratios, not absolute rates.
# Knobs: BENCH_SECONDS (10), BENCH_ROUNDS (3), BENCH_CONNS (64), BENCH_TOKENS (1000000: more
# than a 10 s accept row answers, so no user repeats and every answer there is a 202),
# BENCH_WORKERS (seckill-order workers, 1), BENCH_EVENT_METHOD (epoll, the service's default), BENCH_MODES
# ("none always"), BENCH_BIN (a Release build's bin/, default $SECKILL_BIN_DIR).
# BENCH_WAIT_REPLICAS=N (0): each round's Redis gets N replicas (same persistence, on
# loopback) and seckill-order redis.wait_replicas N (redis.wait_timeout_ms 100): the
# accept path with its WAIT (issue 33). Its cost: run twice, BENCH_WAIT_REPLICAS=0 then
# 1, and compare the accept and flash rows (the replicas' CPU is not in the table).
# Before and after: BENCH_BIN_BEFORE=/path/to/other/bin runs the seckill-order rows
# (accept, sold_out, flash) of both builds in each round, alternating (before, then
# after, each on its own fresh Redis, dev Kafka and seckill-order, against the same
# nginx row), and prints both builds' rows side by side, then after / before: the
# medians of each round's ratios of the two rates, and of the two ratios to nginx.
# Without it the output is the one-build table alone.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BENCH_BIN:-${SECKILL_BIN_DIR:-$ROOT/build/bin}}
BIN_BEFORE=${BENCH_BIN_BEFORE:-}
SECS=${BENCH_SECONDS:-10}
ROUNDS=${BENCH_ROUNDS:-3}
CONNS=${BENCH_CONNS:-64}
NTOK=${BENCH_TOKENS:-1000000}
MODES=${BENCH_MODES:-none always}
WAITN=${BENCH_WAIT_REPLICAS:-0}
FLASH_STOCK=10000
FLASH_USERS=200000
NGINX=${BENCH_NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
for tool in wrk redis-cli redis-server; do
    command -v $tool >/dev/null || { echo "bench-ceiling: $tool is not installed" >&2; exit 1; }
done
[ -x "$NGINX" ] || { echo "bench-ceiling: nginx is not installed (Debian nginx-core: deploy/local.sh deps)" >&2; exit 1; }
for b in "$BIN" ${BIN_BEFORE:+"$BIN_BEFORE"}; do
    if ! [ -x "$b/seckill-order" ] || ! [ -x "$b/seckill-devkafka" ]; then
        echo "bench-ceiling: build seckill-order and seckill-devkafka into $b" >&2
        exit 1
    fi
done
[ "$NTOK" -ge "$FLASH_USERS" ] || { echo "bench-ceiling: BENCH_TOKENS must be at least $FLASH_USERS" >&2; exit 1; }

# shellcheck source=bench/bench_lib.sh
BENCH_NAME=ceiling . "$ROOT/bench/bench_lib.sh"
TICK=$(getconf CLK_TCK)

# ---- nginx: the ceiling, up for the whole run ----
NGX=$WORK/nginx
mkdir -p "$NGX/tmp"
NPORT=$(sk_free_port)
cat >"$NGX/nginx.conf" <<EOF
worker_processes 2;
pid $NGX/nginx.pid;
error_log $NGX/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $NGX/tmp/body;
    proxy_temp_path $NGX/tmp/proxy;
    fastcgi_temp_path $NGX/tmp/fastcgi;
    uwsgi_temp_path $NGX/tmp/uwsgi;
    scgi_temp_path $NGX/tmp/scgi;
    keepalive_requests 100000000;
    server {
        listen 127.0.0.1:$NPORT;
        location / {
            default_type application/json;
            return 409 '{"error":"sold_out","message":"the event is sold out"}';
        }
    }
}
EOF
"$NGINX" -p "$NGX" -e "$NGX/error.log" -c "$NGX/nginx.conf" -g 'daemon off;' &
NGINX_PID=$!
PIDS+=("$NGINX_PID")
nginx_409() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$NPORT/" || true)" = 409 ]; }
sk_wait 10 nginx_409 || { echo "bench-ceiling: nginx did not answer 409:" >&2; cat "$NGX/error.log" >&2; exit 1; }

SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
SECKILL_JWT_SECRET="$SECRET" "$BIN/seckill-order" token --sub $(( $(date +%s) * 1000000 )) --count "$NTOK" --ttl 7200 >"$WORK/tokens"
head -n "$FLASH_USERS" "$WORK/tokens" >"$WORK/tokens.flash"
# The challenge row's event id is the same in every round (each round has a fresh Redis),
# so its users' solutions are made once, here, with the key the fronts get.
CKEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
EV_CHAL=$(( 8500000000000000000 + $(date +%s) ))
SECKILL_JWT_SECRET="$SECRET" SECKILL_CHALLENGE_KEY="$CKEY" "$BIN/seckill-order" token --sub $(( $(date +%s) * 1000000 )) \
    --count "$NTOK" --ttl 7200 --challenge "$EV_CHAL:1" >"$WORK/tokens.challenge"

# run_wrk NAME URL PATH TOKENS LIMIT PIDS...: one wrk run; CPU ticks of each pid (tree) into NAME.cpu
run_wrk() {
    local name=$1 url=$2 path=$3 tok=$4 limit=$5
    shift 5
    local pids=("$@") before=() i
    local TIMEFORMAT="%U %S"
    { time wrk -t1 -c"$CONNS" -d"$( [ "$limit" = 0 ] && echo "${SECS}s" || echo 120s )" --latency \
        -s "$ROOT/bench/ceiling_wrk.lua" "$url" -- "$path" "$tok" "$limit" "$WORK/$name" >"$WORK/$name.wrk" 2>&1; } 2>"$WORK/$name.wtime" &
    local sh=$! wp="" w0=0
    # sample once wrk has read its tokens (its thread exists and its first request went out)
    while kill -0 "$sh" 2>/dev/null; do
        [ -n "$wp" ] || wp=$(pgrep -P "$sh" -x wrk || true)
        if [ -n "$wp" ] && [ -s "$WORK/$name.start" ]; then w0=$(sk_cpu_ticks "$wp"); break; fi
        sleep 0.02
    done
    for i in "${!pids[@]}"; do before[i]=$(sk_tree_ticks "${pids[i]}"); done
    if [ "$limit" != 0 ]; then
        # wrk sleeps its whole -d even once its thread stopped: interrupt it (SIGINT makes it
        # print its summary) once the last answer is in
        while kill -0 "$sh" 2>/dev/null && [ ! -s "$WORK/$name.end" ]; do sleep 0.05; done
        [ -n "$wp" ] && kill -INT "$wp" 2>/dev/null || true
    fi
    wait "$sh" || true
    : >"$WORK/$name.cpu"
    for i in "${!pids[@]}"; do echo $(( $(sk_tree_ticks "${pids[i]}") - before[i] )) >>"$WORK/$name.cpu"; done
    awk -v hz="$TICK" -v w0="$w0" '{ printf "%.0f\n", ($1 + $2) * hz - w0 }' "$WORK/$name.wtime" >>"$WORK/$name.cpu"
}
cmdstats() { # all calls, evalsha calls
    redis-cli -p "$RPORT" INFO commandstats | tr -d '\r' | awk -F'[:=,]' '/^cmdstat_/ { all += $3; if ($1 == "cmdstat_evalsha") ev = $3 } END { print all + 0, ev + 0 }'
}
gatestats() { # the gate's reserve.lua calls, confirm.lua calls (seckill-order's /metrics)
    curl -fsS "$url/metrics" | awk '/^seckill_order_gate_calls_total\{script="reserve"\}/ { r = $2 }
        /^seckill_order_gate_calls_total\{script="confirm"\}/ { c = $2 } END { print r + 0, c + 0 }'
}

# Results: one line per (round, mode, row) in $WORK/results:
#   round mode row rate p50 p99 accepted cpu_us(order|nginx) redis_us kafka_us wrk_us calls_per evalsha_per
#   reserve_per confirm_per
: >"$WORK/results"
record() { # round mode row rate accepted [calls evalsha reserve confirm]
    local round=$1 mode=$2 row=$3 rate=$4 acc=$5 calls=${6:-0} ev=${7:-0} res=${8:-0} conf=${9:-0}
    local f="$WORK/$round.$mode.$row"
    awk -v r="$round" -v m="$mode" -v row="$row" -v rate="$rate" -v acc="$acc" -v hz="$TICK" \
        -v p50="$(sk_lat_ms "$f.wrk" 50%)" -v p99="$(sk_lat_ms "$f.wrk" 99%)" -v calls="$calls" -v ev="$ev" -v res="$res" -v conf="$conf" '
        { t[NR] = $1 }
        END {
            n = (acc > 0) ? acc : 1
            if (row == "nginx") { o = t[1]; rd = 0; k = 0; w = t[2] } else { o = t[1]; rd = t[2]; k = t[3]; w = t[4] }
            printf "%s %s %s %.0f %s %s %d %.1f %.1f %.1f %.1f %.3f %.3f %.3f %.3f\n", r, m, row, rate, p50, p99, acc,
                o / hz * 1e6 / n, rd / hz * 1e6 / n, k / hz * 1e6 / n, w / hz * 1e6 / n, calls / n, ev / n, res / n, conf / n
        }' "$f.cpu" >>"$WORK/results"
}

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
base=$(( 8600000000000000000 + $(date +%s) * 1000 ))
# run_build ROUND MODE TAG BIN: the seckill-order rows (accept, sold_out, flash) of one
# build (TAG "" for BENCH_BIN, ".before" for BENCH_BIN_BEFORE) on a fresh Redis of this
# mode, dev Kafka and seckill-order from BIN.
run_build() {
    local round=$1 mode=$2 tag=$3 bin=$4
    BUILD=${tag#.}
    # ---- a fresh Redis (this mode), dev Kafka and seckill-order ----
    RPORT=$(sk_free_port)
    mkdir -p "$WORK/redis.$round.$mode$tag"
    if [ "$mode" = always ]; then persist=(--appendonly yes --appendfsync always); else persist=(--appendonly no); fi
    redis-server --port "$RPORT" --bind 127.0.0.1 --dir "$WORK/redis.$round.$mode$tag" "${persist[@]}" --save "" \
        --daemonize no --logfile "$WORK/redis.$round.$mode$tag/redis.log" &
    REDIS_PID=$!
    PIDS+=("$REDIS_PID")
    sk_wait 10 redis-cli -p "$RPORT" ping || { echo "bench-ceiling: redis-server did not start" >&2; exit 1; }
    REPLICA_PIDS=()
    local i rp
    for ((i = 1; i <= WAITN; i++)); do
        rp=$(sk_free_port)
        mkdir -p "$WORK/redis.$round.$mode$tag.r$i"
        redis-server --port "$rp" --bind 127.0.0.1 --dir "$WORK/redis.$round.$mode$tag.r$i" "${persist[@]}" --save "" \
            --replicaof 127.0.0.1 "$RPORT" --daemonize no --logfile "$WORK/redis.$round.$mode$tag.r$i/redis.log" &
        REPLICA_PIDS+=($!)
        PIDS+=($!)
    done
    replicas_up() { [ "$(redis-cli -p "$RPORT" INFO replication | tr -d '\r' | grep -c '^slave[0-9]*:.*state=online')" -ge "$WAITN" ]; }
    [ "$WAITN" -eq 0 ] || sk_wait 30 replicas_up || { echo "bench-ceiling: the $WAITN replica(s) are not in sync" >&2; exit 1; }
    rm -f "$WORK/kafka.bootstrap"
    "$bin/seckill-devkafka" --bootstrap-file "$WORK/kafka.bootstrap" --control-file "$WORK/kafka.control" \
        >"$WORK/devkafka.$round.$mode$tag.log" 2>&1 &
    KAFKA_PID=$!
    PIDS+=("$KAFKA_PID")
    sk_wait 20 test -s "$WORK/kafka.bootstrap" || { echo "bench-ceiling: seckill-devkafka did not start" >&2; exit 1; }
    PORT=$(sk_free_port)
    env -u SECKILL_PG SECKILL_REDIS_URL="redis://127.0.0.1:$RPORT" SECKILL_JWT_SECRET="$SECRET" SECKILL_HTTP_PORT="$PORT" \
        SECKILL_HTTP_BIND=127.0.0.1 SECKILL_KAFKA_BROKERS="$(cat "$WORK/kafka.bootstrap")" SECKILL_LOG_LEVEL=warn \
        SECKILL_LIMITS_INFLIGHT=100000 SECKILL_LIMITS_KAFKA_INFLIGHT=100000 SECKILL_WORKERS="${BENCH_WORKERS:-1}" \
        SECKILL_HTTP_EVENT_METHOD="${BENCH_EVENT_METHOD:-epoll}" SECKILL_CHALLENGE_KEY="$CKEY" \
        $( [ "$WAITN" -eq 0 ] || echo "SECKILL_REDIS_WAIT_REPLICAS=$WAITN SECKILL_REDIS_WAIT_TIMEOUT_MS=100") \
        "$bin/seckill-order" >"$WORK/order.$round.$mode$tag.log" 2>&1 &
    ORDER_PID=$!
    PIDS+=("$ORDER_PID")
    sk_wait_http 20 "http://127.0.0.1:$PORT/healthz" || { echo "bench-ceiling: seckill-order is not ready (see $WORK/order.$round.$mode$tag.log)" >&2; exit 1; }
    now_ms=$(( $(date +%s) * 1000 ))
    load() { redis-cli -p "$RPORT" EVAL "$(cat "$ROOT/lua/event_load.lua")" 2 "seckill:{e$1}:stock" "seckill:{e$1}:meta" \
        "$2" $(( now_ms - 60000 )) $(( now_ms + 7200000 )) 1 "${@:3}" >/dev/null; }
    ev_accept=$(( base++ )); ev_sold=$(( base++ )); ev_flash=$(( base++ ))
    load $ev_accept 2000000000
    load $ev_sold 0
    load $ev_flash $FLASH_STOCK
    [ -n "$tag" ] || load $EV_CHAL 2000000000 1 0 0 0 1 # K 1, no overrides, challenge_bits 1
    procs=("$ORDER_PID" "$REDIS_PID" "$KAFKA_PID")
    url="http://127.0.0.1:$PORT"

    read -r c0 e0 < <(cmdstats)
    read -r r0 f0 < <(gatestats)
    run_wrk "$round.$mode.accept$tag" "$url" "/api/v1/events/$ev_accept/orders" "$WORK/tokens" 0 "${procs[@]}"
    read -r c1 e1 < <(cmdstats)
    read -r r1 f1 < <(gatestats)
    acc=$(( 2000000000 - $(redis-cli -p "$RPORT" GET "seckill:{e$ev_accept}:stock") ))
    req=$(awk '/requests in/ { print $1 }' "$WORK/$round.$mode.accept$tag.wrk")
    [ "$acc" -ge $(( req * 99 / 100 )) ] ||
        echo "bench-ceiling: round $round, $mode: $acc orders taken for $req accept-row requests (tokens wrapped: raise BENCH_TOKENS)" >&2
    record "$round" "$mode" "accept$tag" "$(sk_rps "$WORK/$round.$mode.accept$tag.wrk")" "$acc" $(( c1 - c0 )) $(( e1 - e0 )) \
        $(( r1 - r0 )) $(( f1 - f0 ))
    curl -fsS "$url/metrics" >"$WORK/$round.$mode.accept$tag.metrics" || true

    if [ -z "$tag" ]; then # the same, with the event's challenge on
        run_wrk "$round.$mode.accept_challenge" "$url" "/api/v1/events/$EV_CHAL/orders" "$WORK/tokens.challenge" 0 "${procs[@]}"
        acc=$(( 2000000000 - $(redis-cli -p "$RPORT" GET "seckill:{e$EV_CHAL}:stock") ))
        req=$(awk '/requests in/ { print $1 }' "$WORK/$round.$mode.accept_challenge.wrk")
        [ "$acc" -ge $(( req * 99 / 100 )) ] ||
            echo "bench-ceiling: round $round, $mode: $acc orders taken for $req accept_challenge requests (refused solutions, or tokens wrapped)" >&2
        record "$round" "$mode" accept_challenge "$(sk_rps "$WORK/$round.$mode.accept_challenge.wrk")" "$acc"
    fi

    # the first answer comes from Redis and raises the flag; the run measures the flag
    curl -s -o /dev/null -X POST -H "Authorization: Bearer $(head -n1 "$WORK/tokens")" "$url/api/v1/events/$ev_sold/orders"
    run_wrk "$round.$mode.sold_out$tag" "$url" "/api/v1/events/$ev_sold/orders" "$WORK/tokens" 0 "${procs[@]}"
    n_total=$(awk '/requests in/ { print $1 }' "$WORK/$round.$mode.sold_out$tag.wrk")
    record "$round" "$mode" "sold_out$tag" "$(sk_rps "$WORK/$round.$mode.sold_out$tag.wrk")" "$n_total"

    read -r c0 e0 < <(cmdstats)
    read -r r0 f0 < <(gatestats)
    run_wrk "$round.$mode.flash$tag" "$url" "/api/v1/events/$ev_flash/orders" "$WORK/tokens.flash" "$FLASH_USERS" "${procs[@]}"
    # confirms still held when the last answer came (order_gate.h: a few ms) are
    # counted once sent: wait until every accepted order was confirmed
    for _ in $(seq 1 100); do
        [ "$(redis-cli -p "$RPORT" HLEN "seckill:{e$ev_flash}:pending")" = 0 ] && break
        sleep 0.01
    done
    read -r c1 e1 < <(cmdstats)
    read -r r1 f1 < <(gatestats)
    acc=$(( FLASH_STOCK - $(redis-cli -p "$RPORT" GET "seckill:{e$ev_flash}:stock") ))
    if [ -s "$WORK/$round.$mode.flash$tag.end" ]; then
        frate=$(awk -v n="$FLASH_USERS" -v a="$(cat "$WORK/$round.$mode.flash$tag.start")" -v b="$(cat "$WORK/$round.$mode.flash$tag.end")" \
            'BEGIN { printf "%.0f", n / ((b - a) / 1e9) }')
    else
        frate=0 # never saw the last answer within wrk's 120 s
    fi
    record "$round" "$mode" "flash$tag" "$frate" "$acc" $(( c1 - c0 )) $(( e1 - e0 )) $(( r1 - r0 )) $(( f1 - f0 ))
    echo "round $round, redis persistence $mode${tag:+, build $BUILD}: done (accepted $acc of $FLASH_STOCK in the flash sale)" >&2

    kill -TERM "$ORDER_PID"; wait "$ORDER_PID" 2>/dev/null || true
    kill -TERM "$KAFKA_PID"; wait "$KAFKA_PID" 2>/dev/null || true
    kill -TERM "$REDIS_PID"; wait "$REDIS_PID" 2>/dev/null || true
    for i in "${REPLICA_PIDS[@]}"; do kill -TERM "$i"; wait "$i" 2>/dev/null || true; done
}

for round in $(seq 1 "$ROUNDS"); do
    for mode in $MODES; do
        # ---- the ceiling, in the same alternation ----
        run_wrk "$round.$mode.nginx" "http://127.0.0.1:$NPORT" "/api/v1/events/1/orders" "$WORK/tokens" 0 "$NGINX_PID"
        n_total=$(awk '/requests in/ { print $1 }' "$WORK/$round.$mode.nginx.wrk")
        record "$round" "$mode" nginx "$(sk_rps "$WORK/$round.$mode.nginx.wrk")" "$n_total"
        # ---- the builds, before then after, against the same nginx row ----
        [ -z "$BIN_BEFORE" ] || run_build "$round" "$mode" .before "$BIN_BEFORE"
        run_build "$round" "$mode" "" "$BIN"
    done
done

# ---- the table: medians (range) over the rounds ----
col() { awk -v m="$1" -v r="$2" -v c="$3" '$2 == m && $3 == r { print $c }' "$WORK/results"; }
rng() { col "$1" "$2" "$3" | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }'; }
# ratio of each round's row to the same round's nginx, then the median of the ratios
# (ratio_med MODE ROW [BASE]: to BASE's row instead, e.g. after / before)
ratio_med() { awk -v m="$1" -v r="$2" -v d="${3:-nginx}" '$2 == m && $3 == d { n[$1] = $4 } $2 == m && $3 == r { v[$1] = $4 }
    END { for (k in v) if (n[k] > 0) printf "%.3f\n", v[k] / n[k] }' "$WORK/results" | sk_median; }

printf '\nbench-ceiling: %s rounds, %s s per row, wrk -t1 -c%s for every row; seckill-order %s worker(s) on %s, redis.wait_replicas %s; load average before: %s (2 cores shared with other work)\n' \
    "$ROUNDS" "$SECS" "$CONNS" "${BENCH_WORKERS:-1}" "${BENCH_EVENT_METHOD:-epoll}" "$WAITN" "$LOAD0"
# The rows of the table: with a build before, each seckill-order row of both builds,
# side by side (row/before, row/after).
ROWS="nginx accept accept_challenge sold_out flash"
RW=16
if [ -n "$BIN_BEFORE" ]; then
    ROWS="nginx accept.before accept accept_challenge sold_out.before sold_out flash.before flash"
    RW=16
    printf 'before: %s
after:  %s
' "$BIN_BEFORE" "$BIN"
fi
label() { case $1 in nginx) echo nginx ;; *.before) echo "${1%.before}/before" ;; *) echo "$1${BIN_BEFORE:+/after}" ;; esac; }
printf "%-7s %-${RW}s %18s %7s %7s %6s %10s %10s %8s %8s %8s %9s %9s %9s %9s\n" redis row "rate/s (range)" p50ms p99ms "/nginx" "us order" "us redis" "us kafka" "us wrk" "accepted" "calls/acc" "evalsha/acc" "reserve" "confirm"
for mode in $MODES; do
    for row in $ROWS; do
        printf "%-7s %-${RW}s %18s %7s %7s %6s %10s %10s %8s %8s %8s %9s %9s %9s %9s\n" "$mode" "$(label "$row")" \
            "$(col "$mode" "$row" 4 | sk_median) ($(rng "$mode" "$row" 4))" "$(col "$mode" "$row" 5 | sk_median)" "$(col "$mode" "$row" 6 | sk_median)" \
            "$( [ "$row" = nginx ] && echo 1 || ratio_med "$mode" "$row")" "$(col "$mode" "$row" 8 | sk_median)" "$(col "$mode" "$row" 9 | sk_median)" \
            "$(col "$mode" "$row" 10 | sk_median)" "$(col "$mode" "$row" 11 | sk_median)" "$(col "$mode" "$row" 7 | sk_median)" \
            "$(col "$mode" "$row" 12 | sk_median)" "$(col "$mode" "$row" 13 | sk_median)" "$(col "$mode" "$row" 14 | sk_median)" "$(col "$mode" "$row" 15 | sk_median)"
    done
done
printf '(us: CPU per accepted order, per answer for the nginx and sold_out rows; calls/acc: every Redis command, those inside scripts included, per accepted order; evalsha/acc: script calls per accepted order; reserve, confirm: reserve.lua and confirm.lua calls per accepted order)\n'
printf 'targets: accept >= 0.35 of nginx and p99 <= 10 ms in both modes; sold_out >= 0.70; flash >= 0.60; script calls per accepted order <= 0.2; accept_challenge >= 0.9 of accept\n'
for mode in $MODES; do
    printf 'accept_challenge / accept (%s): %s (median of the per-round ratios; us order: %s with, %s without)\n' "$mode" \
        "$(ratio_med "$mode" accept_challenge accept)" "$(col "$mode" accept_challenge 8 | sk_median)" "$(col "$mode" accept 8 | sk_median)"
done
for mode in $MODES; do
    printf '{"bench":"ceiling","redis":"%s","nginx_rps":%s,"accept_rps":%s,"accept_over_nginx":%s,"accept_p99_ms":%s,"sold_out_over_nginx":%s,"flash_over_nginx":%s,"accept_order_cpu_us":%s,"accept_evalsha_per_order":%s}\n' \
        "$mode" "$(col "$mode" nginx 4 | sk_median)" "$(col "$mode" accept 4 | sk_median)" "$(ratio_med "$mode" accept)" "$(col "$mode" accept 6 | sk_median)" \
        "$(ratio_med "$mode" sold_out)" "$(ratio_med "$mode" flash)" "$(col "$mode" accept 8 | sk_median)" "$(col "$mode" accept 13 | sk_median)"
done
if [ -n "$BIN_BEFORE" ]; then
    printf '\nafter / before: medians of the per-round ratios (the two builds alternate in every round)\n'
    printf '%-7s %-9s %13s %14s %14s\n' redis row "rate a/b" "/nginx before" "/nginx after"
    for mode in $MODES; do
        for row in accept sold_out flash; do
            printf '%-7s %-9s %13s %14s %14s\n' "$mode" "$row" "$(ratio_med "$mode" "$row" "$row.before")" \
                "$(ratio_med "$mode" "$row.before")" "$(ratio_med "$mode" "$row")"
        done
        printf '{"bench":"ceiling_before_after","redis":"%s","accept_after_over_before":%s,"sold_out_after_over_before":%s,"flash_after_over_before":%s,"accept_over_nginx_before":%s,"accept_over_nginx_after":%s,"sold_out_over_nginx_before":%s,"sold_out_over_nginx_after":%s,"flash_over_nginx_before":%s,"flash_over_nginx_after":%s}\n' \
            "$mode" "$(ratio_med "$mode" accept accept.before)" "$(ratio_med "$mode" sold_out sold_out.before)" \
            "$(ratio_med "$mode" flash flash.before)" "$(ratio_med "$mode" accept.before)" "$(ratio_med "$mode" accept)" \
            "$(ratio_med "$mode" sold_out.before)" "$(ratio_med "$mode" sold_out)" "$(ratio_med "$mode" flash.before)" \
            "$(ratio_med "$mode" flash)"
    done
fi
cp "$WORK/results" "${BENCH_RESULTS:-/dev/null}" 2>/dev/null || true
