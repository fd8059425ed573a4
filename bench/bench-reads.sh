#!/usr/bin/env bash
# bench-reads.sh: the read paths of issue 17, run by `deploy/local.sh bench` or by hand
# with the stack's PostgreSQL reachable (source .run/env: SECKILL_PG_ADMIN). Starts its
# own redis-server, seckill-devkafka and seckill-order (one worker on poll, as
# bench-order; no reconciler) on a private database (created here, dropped at exit), so
# every PostgreSQL transaction counted is the service's own. Then, alternating, 3 rounds
# of wrk -t1 -c64 (BENCH_SECONDS each, default 8) on:
#   event : GET /api/v1/events/{id}  (the event cache; stock_left from Redis every 100 ms)
#   order : GET /api/v1/orders/{id}  for a created order in the index (its outcome
#           recorded as the consumer records it): the first poll reads the index, the
#           next ones come from the memory of final outcomes (order.status_cache_ms)
#   queued: GET /api/v1/orders/{id}  for an order still queued: one HMGET per request
#   sold  : POST /api/v1/events/{id}/orders on a sold-out event (the in-process flag),
#           the reference
# and prints req/s, p50/p99 per run, the medians, the ratios to the sold-out path within
# each round (the machine is shared: only ratios measured side by side mean much), and
# PostgreSQL transactions per read request (pg_stat_database of the private database,
# read once the statistics are flushed). Knobs: BENCH_SECONDS, BENCH_ROUNDS (3),
# BENCH_CONNS (64), BENCH_BIN (default $SECKILL_BIN_DIR; use a Release build).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BENCH_BIN:-${SECKILL_BIN_DIR:-$ROOT/build/bin}}
SECS=${BENCH_SECONDS:-8}
ROUNDS=${BENCH_ROUNDS:-3}
CONNS=${BENCH_CONNS:-64}
for tool in wrk redis-cli redis-server psql curl; do
    command -v $tool >/dev/null || { echo "bench-reads: $tool is not installed" >&2; exit 1; }
done
[ -x "$BIN/seckill-order" ] && [ -x "$BIN/seckill-devkafka" ] && [ -x "$BIN/seckill-consumer" ] ||
    { echo "bench-reads: build seckill-order, seckill-devkafka and seckill-consumer into $BIN" >&2; exit 1; }
: "${SECKILL_PG_ADMIN:?bench-reads: needs the stack PostgreSQL (deploy/local.sh up; source .run/env)}"

# shellcheck source=bench/bench_lib.sh
BENCH_NAME=reads . "$ROOT/bench/bench_lib.sh"
DB="seckill_bench_reads_$$"
ADMIN_PG=$SECKILL_PG_ADMIN
USER_PG=$(echo "$SECKILL_PG_ADMIN" | sed -e "s/dbname=[^ ]*/dbname=$DB/" -e 's/user=[^ ]*/user=seckill/')
drop_db() { psql "$ADMIN_PG" -qAt -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true; }
trap 'bench_cleanup; drop_db' EXIT
psql "$ADMIN_PG" -qAt -c "CREATE DATABASE $DB OWNER seckill" >/dev/null
SECKILL_PG=$USER_PG "$BIN/seckill-consumer" migrate >"$WORK/migrate.log" 2>&1

RPORT=$(sk_free_port)
redis-server --port "$RPORT" --bind 127.0.0.1 --dir "$WORK" --appendonly yes --appendfsync always \
    --save "" --daemonize no --logfile "$WORK/redis.log" &
PIDS+=($!)
sk_wait 10 redis-cli -p "$RPORT" ping || { echo "bench-reads: redis-server did not start" >&2; exit 1; }
"$BIN/seckill-devkafka" --bootstrap-file "$WORK/kafka.bootstrap" --control-file "$WORK/kafka.control" \
    >"$WORK/devkafka.log" 2>&1 &
PIDS+=($!)
sk_wait 20 test -s "$WORK/kafka.bootstrap" || { echo "bench-reads: seckill-devkafka did not start" >&2; exit 1; }
PORT=$(sk_free_port)
SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
SECKILL_REDIS_URL="redis://127.0.0.1:$RPORT" SECKILL_PG="$USER_PG" SECKILL_JWT_SECRET="$SECRET" \
    SECKILL_HTTP_PORT="$PORT" SECKILL_HTTP_BIND=127.0.0.1 SECKILL_KAFKA_BROKERS="$(cat "$WORK/kafka.bootstrap")" \
    SECKILL_LOG_LEVEL=warn SECKILL_WORKERS="${BENCH_WORKERS:-1}" SECKILL_HTTP_EVENT_METHOD="${BENCH_EVENT_METHOD:-epoll}" \
    SECKILL_RECONCILE_INTERVAL_MS=0 SECKILL_LIMITS_INFLIGHT=100000 \
    "$BIN/seckill-order" >"$WORK/order.log" 2>&1 &
PIDS+=($!)
sk_wait_http 20 "http://127.0.0.1:$PORT/healthz" || { echo "bench-reads: seckill-order is not ready" >&2; exit 1; }
URL="http://127.0.0.1:$PORT"
token() { SECKILL_JWT_SECRET="$SECRET" "$BIN/seckill-order" token --sub "$1" ${2:-} --ttl 7200; }
ADMIN=$(token 1 --admin)
USER=$(( $(date +%s) * 1000 + 7 ))
UTOK=$(token "$USER")
iso() { date -u -d "@$(( $(date +%s) + $1 ))" +%Y-%m-%dT%H:%M:%SZ; }
create() { # stock -> event id
    curl -fsS -X POST -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
        -d "{\"name\":\"bench reads\",\"stock\":$1,\"starts_at\":\"$(iso -60)\",\"ends_at\":\"$(iso 7200)\"}" \
        "$URL/api/v1/events" | sed -e 's/.*"event_id":"\([0-9]*\)".*/\1/'
}
EV=$(create 1000000)
EV_SOLD=$(create 0)
# the order of the order run: placed once, then recorded as created, as the consumer does
OID=$(curl -fsS -X POST -H "Authorization: Bearer $UTOK" "$URL/api/v1/events/$EV/orders" | sed -e 's/.*"order_id":"\([0-9]*\)".*/\1/')
redis-cli -p "$RPORT" HSET "seckill:oidx:$(( OID >> 32 ))" "$OID:o" "$EV:$USER:c" >/dev/null
curl -fsS -H "Authorization: Bearer $UTOK" "$URL/api/v1/orders/$OID" | grep -q '"status":"created"' ||
    { echo "bench-reads: the order does not read as created" >&2; exit 1; }
# a queued one: no outcome recorded (no consumer here)
USER_Q=$(( USER + 1 ))
QTOK=$(token "$USER_Q")
OID_Q=$(curl -fsS -X POST -H "Authorization: Bearer $QTOK" "$URL/api/v1/events/$EV/orders" | sed -e 's/.*"order_id":"\([0-9]*\)".*/\1/')
curl -fsS -H "Authorization: Bearer $QTOK" "$URL/api/v1/orders/$OID_Q" | grep -q '"status":"queued"' ||
    { echo "bench-reads: the second order does not read as queued" >&2; exit 1; }
curl -fsS -H "Authorization: Bearer $UTOK" "$URL/api/v1/events/$EV" >/dev/null   # loads the event once
curl -sS -o /dev/null -X POST -H "Authorization: Bearer $UTOK" "$URL/api/v1/events/$EV_SOLD/orders" # primes the flag
printf 'wrk.method = "POST"\n' >"$WORK/post.lua"

xacts() { psql "$ADMIN_PG" -qAt -c "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '$DB'"; }
# Backends flush their statistics when idle, at most 10 s late: settled once unchanged for 11 s.
xacts_settled() {
    local v w t0=$SECONDS
    v=$(xacts)
    while :; do
        sleep 1
        w=$(xacts)
        if [ "$w" != "$v" ]; then v=$w; t0=$SECONDS; elif [ $(( SECONDS - t0 )) -ge 11 ]; then echo "$v"; return; fi
    done
}
run() { # name round
    local f="$WORK/$1.$2.wrk"
    case $1 in
        event) wrk -t1 -c"$CONNS" -d"${SECS}s" --latency -H "Authorization: Bearer $UTOK" "$URL/api/v1/events/$EV" >"$f" 2>&1 ;;
        order) wrk -t1 -c"$CONNS" -d"${SECS}s" --latency -H "Authorization: Bearer $UTOK" "$URL/api/v1/orders/$OID" >"$f" 2>&1 ;;
        queued) wrk -t1 -c"$CONNS" -d"${SECS}s" --latency -H "Authorization: Bearer $QTOK" "$URL/api/v1/orders/$OID_Q" >"$f" 2>&1 ;;
        sold) wrk -t1 -c"$CONNS" -d"${SECS}s" --latency -s "$WORK/post.lua" -H "Authorization: Bearer $UTOK" "$URL/api/v1/events/$EV_SOLD/orders" >"$f" 2>&1 ;;
    esac
}

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
X0=$(xacts_settled)
for r in $(seq 1 "$ROUNDS"); do
    # the order of the three rotates, so that none always runs first after a pause
    case $(( r % 4 )) in
        1) order="event order queued sold" ;; 2) order="order queued sold event" ;;
        3) order="queued sold event order" ;; 0) order="sold event order queued" ;;
    esac
    for n in $order; do run "$n" "$r"; done
done
X1=$(xacts_settled)
reads=0
for r in $(seq 1 "$ROUNDS"); do reads=$(( reads + $(sk_total "$WORK/event.$r.wrk") + $(sk_total "$WORK/order.$r.wrk") + $(sk_total "$WORK/queued.$r.wrk") )); done

printf '\nload average before the runs: %s (other work on the machine shares the 2 cores)\n' "$LOAD0"
printf 'seckill-order reads (%s s per run, wrk -t1 -c%s, %s rounds alternating; 1 worker on %s; private Redis, devkafka, database)\n' \
    "$SECS" "$CONNS" "$ROUNDS" "${BENCH_EVENT_METHOD:-epoll}"
printf '%-7s %-6s %10s %8s %8s %10s %s\n' round path "req/s" "p50 ms" "p99 ms" "/ sold" "answers"
for r in $(seq 1 "$ROUNDS"); do
    s=$(sk_rps "$WORK/sold.$r.wrk")
    for n in event order queued sold; do
        f="$WORK/$n.$r.wrk"
        v=$(sk_rps "$f"); p50=$(sk_lat_ms "$f" 50%); p99=$(sk_lat_ms "$f" 99%); q=$(sk_ratio "$v" "$s")
        note="$(sk_total "$f") answers, $(sk_non2xx "$f") not 2xx/3xx"
        printf '%-7s %-6s %10s %8s %8s %10s %s\n' "$r" "$n" "$v" "$p50" "$p99" "$q" "$note"
    done
done
M_E=$(for r in $(seq 1 "$ROUNDS"); do sk_rps "$WORK/event.$r.wrk"; echo; done | sk_median)
M_O=$(for r in $(seq 1 "$ROUNDS"); do sk_rps "$WORK/order.$r.wrk"; echo; done | sk_median)
M_S=$(for r in $(seq 1 "$ROUNDS"); do sk_rps "$WORK/sold.$r.wrk"; echo; done | sk_median)
R_E=$(for r in $(seq 1 "$ROUNDS"); do sk_ratio "$(sk_rps "$WORK/event.$r.wrk")" "$(sk_rps "$WORK/sold.$r.wrk")"; echo; done | sk_median)
R_O=$(for r in $(seq 1 "$ROUNDS"); do sk_ratio "$(sk_rps "$WORK/order.$r.wrk")" "$(sk_rps "$WORK/sold.$r.wrk")"; echo; done | sk_median)
M_Q=$(for r in $(seq 1 "$ROUNDS"); do sk_rps "$WORK/queued.$r.wrk"; echo; done | sk_median)
R_Q=$(for r in $(seq 1 "$ROUNDS"); do sk_ratio "$(sk_rps "$WORK/queued.$r.wrk")" "$(sk_rps "$WORK/sold.$r.wrk")"; echo; done | sk_median)
PGX=$(( X1 - X0 ))
PER=$(awk -v x="$PGX" -v n="$reads" 'BEGIN { if (n > 0) printf "%.6f", x / n; else print "n/a" }')
printf 'medians: event %s req/s, order (created) %s req/s, order (queued) %s req/s, sold out %s req/s\n' "$M_E" "$M_O" "$M_Q" "$M_S"
printf 'event / sold out = %s (target >= 0.9), order created / sold out = %s, order queued / sold out = %s (target >= 0.7), medians of the per-round ratios\n' "$R_E" "$R_O" "$R_Q"
printf 'PostgreSQL transactions during the runs: %s for %s read requests = %s per read (target <= 0.001)\n' "$PGX" "$reads" "$PER"
printf '{"bench":"reads","seconds":%s,"connections":%s,"rounds":%s,"event_rps":%s,"order_rps":%s,"queued_rps":%s,"sold_out_rps":%s,"event_over_sold":%s,"order_over_sold":%s,"queued_over_sold":%s,"pg_xacts":%s,"reads":%s,"pg_xacts_per_read":%s,"loadavg_1m":%s}\n' \
    "$SECS" "$CONNS" "$ROUNDS" "$M_E" "$M_O" "$M_Q" "$M_S" "$R_E" "$R_O" "$R_Q" "$PGX" "$reads" "$PER" "$(cut -d' ' -f1 /proc/loadavg)"
