#!/usr/bin/env bash
# bench-ceiling.sh: seckill-order against the HTTP ceiling of the machine (issue 16), run
# by `deploy/local.sh bench` or by hand (no stack needed). In one run, alternating, for
# BENCH_ROUNDS rounds (3), each row driven by the same client (wrk -t1 -c64, one
# pre-minted token per request, bench/ceiling_wrk.lua):
#   nginx     : Debian's nginx-core, 2 workers, `return 409` with a fixed JSON body (a
#               private process: its own config, pid and logs under the run's work dir,
#               on a free loopback port): the machine's HTTP ceiling
#   accept    : seckill-order, an event whose stock never runs out, a distinct user per request
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
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BENCH_BIN:-${SECKILL_BIN_DIR:-$ROOT/build/bin}}
SECS=${BENCH_SECONDS:-10}
ROUNDS=${BENCH_ROUNDS:-3}
CONNS=${BENCH_CONNS:-64}
NTOK=${BENCH_TOKENS:-1000000}
MODES=${BENCH_MODES:-none always}
FLASH_STOCK=10000
FLASH_USERS=200000
NGINX=${BENCH_NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
for tool in wrk redis-cli redis-server; do
    command -v $tool >/dev/null || { echo "bench-ceiling: $tool is not installed" >&2; exit 1; }
done
[ -x "$NGINX" ] || { echo "bench-ceiling: nginx is not installed (Debian nginx-core: deploy/local.sh deps)" >&2; exit 1; }
[ -x "$BIN/seckill-order" ] && [ -x "$BIN/seckill-devkafka" ] || { echo "bench-ceiling: build seckill-order and seckill-devkafka into $BIN" >&2; exit 1; }
[ "$NTOK" -ge "$FLASH_USERS" ] || { echo "bench-ceiling: BENCH_TOKENS must be at least $FLASH_USERS" >&2; exit 1; }

# shellcheck source=bench/bench_lib.sh
BENCH_NAME=ceiling . "$ROOT/bench/bench_lib.sh"
TICK=$(getconf CLK_TCK)
wait_http() { for _ in $(seq 1 200); do curl -fsS "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "bench-ceiling: $1 not ready" >&2; return 1; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# every process of a tree (nginx: the master and its workers)
tree_ticks() { local t=0 p; for p in $1 $(pgrep -P "$1" || true); do t=$(( t + $(cpu_ticks "$p") )); done; echo $t; }

# ---- nginx: the ceiling, up for the whole run ----
NGX=$WORK/nginx
mkdir -p "$NGX/tmp"
NPORT=$(free_port)
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
for _ in $(seq 1 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$NPORT/" || true)" = 409 ] && break
    sleep 0.1
done
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$NPORT/" || true)" = 409 ] ||
    { echo "bench-ceiling: nginx did not answer 409:" >&2; cat "$NGX/error.log" >&2; exit 1; }

SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
SECKILL_JWT_SECRET="$SECRET" "$BIN/seckill-order" token --sub $(( $(date +%s) * 1000000 )) --count "$NTOK" --ttl 7200 >"$WORK/tokens"
head -n "$FLASH_USERS" "$WORK/tokens" >"$WORK/tokens.flash"

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
        if [ -n "$wp" ] && [ -s "$WORK/$name.start" ]; then w0=$(cpu_ticks "$wp"); break; fi
        sleep 0.02
    done
    for i in "${!pids[@]}"; do before[i]=$(tree_ticks "${pids[i]}"); done
    if [ "$limit" != 0 ]; then
        # wrk sleeps its whole -d even once its thread stopped: interrupt it (SIGINT makes it
        # print its summary) once the last answer is in
        while kill -0 "$sh" 2>/dev/null && [ ! -s "$WORK/$name.end" ]; do sleep 0.05; done
        [ -n "$wp" ] && kill -INT "$wp" 2>/dev/null || true
    fi
    wait "$sh" || true
    : >"$WORK/$name.cpu"
    for i in "${!pids[@]}"; do echo $(( $(tree_ticks "${pids[i]}") - before[i] )) >>"$WORK/$name.cpu"; done
    awk -v hz="$TICK" -v w0="$w0" '{ printf "%.0f\n", ($1 + $2) * hz - w0 }' "$WORK/$name.wtime" >>"$WORK/$name.cpu"
}
rps() { awk '/^Requests\/sec/ { printf "%.0f", $2 }' "$1"; }
lat_ms() { awk -v p="$2" '$1==p { v=$2; if (v ~ /us$/) { sub(/us$/,"",v); v=v/1000 } else if (v ~ /ms$/) { sub(/ms$/,"",v) } else if (v ~ /s$/) { sub(/s$/,"",v); v=v*1000 } printf "%.2f", v }' "$1"; }
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
        -v p50="$(lat_ms "$f.wrk" 50%)" -v p99="$(lat_ms "$f.wrk" 99%)" -v calls="$calls" -v ev="$ev" -v res="$res" -v conf="$conf" '
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
for round in $(seq 1 "$ROUNDS"); do
    for mode in $MODES; do
        # ---- the ceiling, in the same alternation ----
        run_wrk "$round.$mode.nginx" "http://127.0.0.1:$NPORT" "/api/v1/events/1/orders" "$WORK/tokens" 0 "$NGINX_PID"
        n_total=$(awk '/requests in/ { print $1 }' "$WORK/$round.$mode.nginx.wrk")
        record "$round" "$mode" nginx "$(rps "$WORK/$round.$mode.nginx.wrk")" "$n_total"

        # ---- a fresh Redis (this mode), dev Kafka and seckill-order ----
        RPORT=$(free_port)
        mkdir -p "$WORK/redis.$round.$mode"
        if [ "$mode" = always ]; then persist=(--appendonly yes --appendfsync always); else persist=(--appendonly no); fi
        redis-server --port "$RPORT" --bind 127.0.0.1 --dir "$WORK/redis.$round.$mode" "${persist[@]}" --save "" \
            --daemonize no --logfile "$WORK/redis.$round.$mode/redis.log" &
        REDIS_PID=$!
        PIDS+=("$REDIS_PID")
        for _ in $(seq 1 100); do redis-cli -p "$RPORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
        rm -f "$WORK/kafka.bootstrap"
        "$BIN/seckill-devkafka" --bootstrap-file "$WORK/kafka.bootstrap" --control-file "$WORK/kafka.control" \
            >"$WORK/devkafka.$round.$mode.log" 2>&1 &
        KAFKA_PID=$!
        PIDS+=("$KAFKA_PID")
        for _ in $(seq 1 200); do [ -s "$WORK/kafka.bootstrap" ] && break; sleep 0.1; done
        PORT=$(free_port)
        env -u SECKILL_PG SECKILL_REDIS_URL="redis://127.0.0.1:$RPORT" SECKILL_JWT_SECRET="$SECRET" SECKILL_HTTP_PORT="$PORT" \
            SECKILL_HTTP_BIND=127.0.0.1 SECKILL_KAFKA_BROKERS="$(cat "$WORK/kafka.bootstrap")" SECKILL_LOG_LEVEL=warn \
            SECKILL_LIMITS_INFLIGHT=100000 SECKILL_LIMITS_KAFKA_INFLIGHT=100000 SECKILL_WORKERS="${BENCH_WORKERS:-1}" \
            SECKILL_HTTP_EVENT_METHOD="${BENCH_EVENT_METHOD:-epoll}" \
            "$BIN/seckill-order" >"$WORK/order.$round.$mode.log" 2>&1 &
        ORDER_PID=$!
        PIDS+=("$ORDER_PID")
        wait_http "http://127.0.0.1:$PORT/healthz"
        now_ms=$(( $(date +%s) * 1000 ))
        load() { redis-cli -p "$RPORT" EVAL "$(cat "$ROOT/lua/event_load.lua")" 2 "seckill:{e$1}:stock" "seckill:{e$1}:meta" \
            "$2" $(( now_ms - 60000 )) $(( now_ms + 7200000 )) 1 >/dev/null; }
        ev_accept=$(( base++ )); ev_sold=$(( base++ )); ev_flash=$(( base++ ))
        load $ev_accept 2000000000
        load $ev_sold 0
        load $ev_flash $FLASH_STOCK
        procs=("$ORDER_PID" "$REDIS_PID" "$KAFKA_PID")
        url="http://127.0.0.1:$PORT"

        read -r c0 e0 < <(cmdstats)
        read -r r0 f0 < <(gatestats)
        run_wrk "$round.$mode.accept" "$url" "/api/v1/events/$ev_accept/orders" "$WORK/tokens" 0 "${procs[@]}"
        read -r c1 e1 < <(cmdstats)
        read -r r1 f1 < <(gatestats)
        acc=$(( 2000000000 - $(redis-cli -p "$RPORT" GET "seckill:{e$ev_accept}:stock") ))
        req=$(awk '/requests in/ { print $1 }' "$WORK/$round.$mode.accept.wrk")
        [ "$acc" -ge $(( req * 99 / 100 )) ] ||
            echo "bench-ceiling: round $round, $mode: $acc orders taken for $req accept-row requests (tokens wrapped: raise BENCH_TOKENS)" >&2
        record "$round" "$mode" accept "$(rps "$WORK/$round.$mode.accept.wrk")" "$acc" $(( c1 - c0 )) $(( e1 - e0 )) \
            $(( r1 - r0 )) $(( f1 - f0 ))
        curl -fsS "$url/metrics" >"$WORK/$round.$mode.accept.metrics" || true

        # the first answer comes from Redis and raises the flag; the run measures the flag
        curl -s -o /dev/null -X POST -H "Authorization: Bearer $(head -n1 "$WORK/tokens")" "$url/api/v1/events/$ev_sold/orders"
        run_wrk "$round.$mode.sold_out" "$url" "/api/v1/events/$ev_sold/orders" "$WORK/tokens" 0 "${procs[@]}"
        n_total=$(awk '/requests in/ { print $1 }' "$WORK/$round.$mode.sold_out.wrk")
        record "$round" "$mode" sold_out "$(rps "$WORK/$round.$mode.sold_out.wrk")" "$n_total"

        read -r c0 e0 < <(cmdstats)
        read -r r0 f0 < <(gatestats)
        run_wrk "$round.$mode.flash" "$url" "/api/v1/events/$ev_flash/orders" "$WORK/tokens.flash" "$FLASH_USERS" "${procs[@]}"
        # confirms still held when the last answer came (order_gate.h: a few ms) are
        # counted once sent: wait until every accepted order was confirmed
        for _ in $(seq 1 100); do
            [ "$(redis-cli -p "$RPORT" HLEN "seckill:{e$ev_flash}:pending")" = 0 ] && break
            sleep 0.01
        done
        read -r c1 e1 < <(cmdstats)
        read -r r1 f1 < <(gatestats)
        acc=$(( FLASH_STOCK - $(redis-cli -p "$RPORT" GET "seckill:{e$ev_flash}:stock") ))
        if [ -s "$WORK/$round.$mode.flash.end" ]; then
            frate=$(awk -v n="$FLASH_USERS" -v a="$(cat "$WORK/$round.$mode.flash.start")" -v b="$(cat "$WORK/$round.$mode.flash.end")" \
                'BEGIN { printf "%.0f", n / ((b - a) / 1e9) }')
        else
            frate=0 # never saw the last answer within wrk's 120 s
        fi
        record "$round" "$mode" flash "$frate" "$acc" $(( c1 - c0 )) $(( e1 - e0 )) $(( r1 - r0 )) $(( f1 - f0 ))
        echo "round $round, redis persistence $mode: done (accepted $acc of $FLASH_STOCK in the flash sale)" >&2

        kill -TERM "$ORDER_PID"; wait "$ORDER_PID" 2>/dev/null || true
        kill -TERM "$KAFKA_PID"; wait "$KAFKA_PID" 2>/dev/null || true
        kill -TERM "$REDIS_PID"; wait "$REDIS_PID" 2>/dev/null || true
    done
done

# ---- the table: medians (range) over the rounds ----
med() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { awk -v m="$1" -v r="$2" -v c="$3" '$2 == m && $3 == r { print $c }' "$WORK/results"; }
rng() { col "$1" "$2" "$3" | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }'; }
# ratio of each round's row to the same round's nginx, then the median of the ratios
ratio_med() { awk -v m="$1" -v r="$2" '$2 == m && $3 == "nginx" { n[$1] = $4 } $2 == m && $3 == r { v[$1] = $4 }
    END { for (k in v) if (n[k] > 0) printf "%.3f\n", v[k] / n[k] }' "$WORK/results" | med; }

printf '\nbench-ceiling: %s rounds, %s s per row, wrk -t1 -c%s for every row; seckill-order %s worker(s) on %s; load average before: %s (2 cores shared with other work)\n' \
    "$ROUNDS" "$SECS" "$CONNS" "${BENCH_WORKERS:-1}" "${BENCH_EVENT_METHOD:-epoll}" "$LOAD0"
printf '%-7s %-9s %18s %7s %7s %6s %10s %10s %8s %8s %8s %9s %9s %9s %9s\n' redis row "rate/s (range)" p50ms p99ms "/nginx" "us order" "us redis" "us kafka" "us wrk" "accepted" "calls/acc" "evalsha/acc" "reserve" "confirm"
for mode in $MODES; do
    for row in nginx accept sold_out flash; do
        printf '%-7s %-9s %18s %7s %7s %6s %10s %10s %8s %8s %8s %9s %9s %9s %9s\n' "$mode" "$row" \
            "$(col "$mode" $row 4 | med) ($(rng "$mode" $row 4))" "$(col "$mode" $row 5 | med)" "$(col "$mode" $row 6 | med)" \
            "$( [ $row = nginx ] && echo 1 || ratio_med "$mode" $row)" "$(col "$mode" $row 8 | med)" "$(col "$mode" $row 9 | med)" \
            "$(col "$mode" $row 10 | med)" "$(col "$mode" $row 11 | med)" "$(col "$mode" $row 7 | med)" \
            "$(col "$mode" $row 12 | med)" "$(col "$mode" $row 13 | med)" "$(col "$mode" $row 14 | med)" "$(col "$mode" $row 15 | med)"
    done
done
printf '(us: CPU per accepted order, per answer for the nginx and sold_out rows; calls/acc: every Redis command, those inside scripts included, per accepted order; evalsha/acc: script calls per accepted order; reserve, confirm: reserve.lua and confirm.lua calls per accepted order)\n'
printf 'targets: accept >= 0.35 of nginx and p99 <= 10 ms in both modes; sold_out >= 0.70; flash >= 0.60; script calls per accepted order <= 0.2\n'
for mode in $MODES; do
    printf '{"bench":"ceiling","redis":"%s","nginx_rps":%s,"accept_rps":%s,"accept_over_nginx":%s,"accept_p99_ms":%s,"sold_out_over_nginx":%s,"flash_over_nginx":%s,"accept_order_cpu_us":%s,"accept_evalsha_per_order":%s}\n' \
        "$mode" "$(col "$mode" nginx 4 | med)" "$(col "$mode" accept 4 | med)" "$(ratio_med "$mode" accept)" "$(col "$mode" accept 6 | med)" \
        "$(ratio_med "$mode" sold_out)" "$(ratio_med "$mode" flash)" "$(col "$mode" accept 8 | med)" "$(col "$mode" accept 13 | med)"
done
cp "$WORK/results" "${BENCH_RESULTS:-/dev/null}" 2>/dev/null || true
