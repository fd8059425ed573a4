#!/usr/bin/env bash
# bench/bench-flashsale.sh: the flash sale at the demo's size, and beside it, in the same
# run and on the same Redis, redis-benchmark running reserve.lua by EVALSHA (-P 16):
# what Redis alone does with the gate's script, the ceiling of any front built on it.
# Run by `deploy/local.sh bench` (stack up, .run/env sourced).
#
# Two Redis figures, since the gate's work depends on the stock:
#   write path: stock never runs out, every call reserves (GET, HMGET, SISMEMBER, DECR,
#               SADD, HSET; AOF with appendfsync always, as the stack runs it)
#   read path:  stock 0, every call answers "sold out" after GET and HMGET
# The front's figure is seckill-bench's rate: answers (202 + 409 + everything else) per
# second from the first request to the last answer. The issue's target: front rate at
# least 35% of the EVALSHA figure (the write path, the script's full step); the ratio to
# the read path is printed too. seckill-check must pass for the figure to count.
#
# Environment: BENCH_STOCK (10000) BENCH_USERS (100000) BENCH_REQUESTS (300000)
# BENCH_CONNECTIONS (128) BENCH_THREADS (1) BENCH_REDIS_N (200000) BENCH_REDIS_CLIENTS (50)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${SECKILL_BIN_DIR:-$ROOT/build/bin}
STOCK=${BENCH_STOCK:-10000}
USERS=${BENCH_USERS:-100000}
REQUESTS=${BENCH_REQUESTS:-300000}
CONNECTIONS=${BENCH_CONNECTIONS:-128}
THREADS=${BENCH_THREADS:-1}
REDIS_N=${BENCH_REDIS_N:-200000}
REDIS_C=${BENCH_REDIS_CLIENTS:-50}

for v in SECKILL_HTTP SECKILL_REDIS_URL SECKILL_PG SECKILL_JWT_SECRET; do
    [ -n "${!v:-}" ] || { echo "bench-flashsale: $v is not set (deploy/local.sh up)" >&2; exit 2; }
done
for b in seckill-bench seckill-check; do
    [ -x "$BIN/$b" ] || { echo "bench-flashsale: $BIN/$b is not built" >&2; exit 2; }
done
command -v redis-benchmark >/dev/null || { echo "bench-flashsale: redis-benchmark not installed (redis-tools)" >&2; exit 2; }
for v in $(env | sed -n 's/^\(SECKILL_KAFKA_[A-Z_]*\)=.*/\1/p'); do
    [ "$v" = SECKILL_KAFKA_BROKERS ] || unset "$v"
done

# redis://[user:pass@]host:port[/db] -> redis-cli arguments (the dev stack has no password).
url=${SECKILL_REDIS_URL#redis://}
auth=""
if [[ $url == *@* ]]; then auth=${url%%@*}; url=${url#*@}; fi
hostport=${url%%/*}
db=0
[[ $url == */* ]] && db=${url#*/}
host=${hostport%%:*}
port=${hostport##*:}
[ "$port" != "$hostport" ] || port=6379
RARGS=(-h "$host" -p "$port")
[ -n "$auth" ] && RARGS+=(-a "${auth#*:}" --no-auth-warning)
rcli() { redis-cli "${RARGS[@]}" -n "$db" "$@"; }

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=$ROOT/bench/out/bench-$STAMP
mkdir -p "$OUT"

SHA=$(rcli SCRIPT LOAD "$(cat "$ROOT/lua/reserve.lua")")
K="seckill:{ebench$$}"
cleanup() { rcli UNLINK "$K:stock" "$K:buyers" "$K:meta" "$K:pending" >/dev/null 2>&1 || true; }
trap cleanup EXIT

# evalsha_rps STOCK: requests/s of redis-benchmark running reserve.lua with random users.
evalsha_rps() {
    cleanup
    rcli SET "$K:stock" "$1" >/dev/null
    rcli HSET "$K:meta" starts_at_ms 0 ends_at_ms 99999999999999 per_user_limit 1 >/dev/null
    local now
    now=$(date +%s%3N)
    redis-benchmark "${RARGS[@]}" --dbnum "$db" -c "$REDIS_C" -n "$REDIS_N" -P 16 -r 1000000000 --csv \
        EVALSHA "$SHA" 4 "$K:stock" "$K:buyers" "$K:meta" "$K:pending" __rand_int__ __rand_int__ "$now" |
        awk -F'","' 'NR > 1 { gsub(/"/, "", $2); print $2; exit }'
}

echo "== redis-benchmark: EVALSHA reserve.lua, -P 16, $REDIS_C clients, $REDIS_N calls, $host:$port"
redis_write=$(evalsha_rps 1000000000)
redis_read=$(evalsha_rps 0)
printf '  write path (every call reserves)   %10.0f calls/s\n' "$redis_write"
printf '  read path (sold out)               %10.0f calls/s\n' "$redis_read"
cleanup

echo "== the flash sale: $STOCK in stock, $USERS users, $REQUESTS requests, flat out ($CONNECTIONS connections, $THREADS thread(s))"
"$BIN/seckill-bench" --stock "$STOCK" --users "$USERS" --requests "$REQUESTS" \
    --connections "$CONNECTIONS" --threads "$THREADS" --event.name "bench $STAMP" \
    --progress false --out "$OUT" | tee "$OUT/bench.txt"
EVENT=$(cat "$OUT/event_id")
check=ok
"$BIN/seckill-check" --wait 120 "$EVENT" "$OUT/accepted.txt" >"$OUT/check.txt" || check=FAILED
sed 's/^/  /' "$OUT/check.txt"
if command -v gnuplot >/dev/null; then
    gnuplot -e "datafile='$OUT/timeline.csv'; outfile='$OUT/chart.png'; subtitle='bench $STAMP, event $EVENT'" \
        "$ROOT/bench/chart.gp" 2>/dev/null || true
fi

num() { sed -n "s/^ *\"$1\": *\(-\{0,1\}[0-9.]*\).*/\1/p" "$OUT/summary.json" | head -n 1; }
front=$(num rate_rps)
ratio_w=$(awk -v f="$front" -v r="$redis_write" 'BEGIN { printf "%.1f", (r > 0 ? 100 * f / r : 0) }')
ratio_r=$(awk -v f="$front" -v r="$redis_read" 'BEGIN { printf "%.1f", (r > 0 ? 100 * f / r : 0) }')
target=$(awk -v x="$ratio_w" 'BEGIN { print (x >= 35 ? "met" : "missed") }')
echo
echo "== result"
printf '  %-44s %12s\n' "redis-benchmark EVALSHA reserve.lua (write)" "$(printf '%.0f/s' "$redis_write")"
printf '  %-44s %12s\n' "redis-benchmark EVALSHA reserve.lua (read)" "$(printf '%.0f/s' "$redis_read")"
printf '  %-44s %12s\n' "front: answers/s during the burst" "$(printf '%.0f/s' "$front")"
printf '  %-44s %11s%%   (target 35%%: %s)\n' "front / redis (write path)" "$ratio_w" "$target"
printf '  %-44s %11s%%\n' "front / redis (read path)" "$ratio_r"
printf '  %-44s %12s\n' "peak accepted (202/s, best 100 ms)" "$(printf '%.0f' "$(num peak_accepted_rps)")"
printf '  %-44s %12s\n' "peak PostgreSQL writes (rows/s, 100 ms)" "$(printf '%.0f' "$(num peak_db_rows_ps)")"
printf '  %-44s %12s\n' "latency p50 / p99 (ms)" "$(printf '%.2f / %.2f' "$(num p50)" "$(num p99)")"
printf '  %-44s %12s\n' "seckill-check" "$check"
printf '  %-44s %s\n' "files" "$OUT"
printf '{"bench":"flashsale","event_id":"%s","redis_evalsha_write_rps":%.0f,"redis_evalsha_read_rps":%.0f,"front_rps":%.0f,"ratio_write_pct":%s,"ratio_read_pct":%s,"accepted":%s,"peak_accepted_rps":%.0f,"peak_db_rows_ps":%.0f,"p50_ms":%s,"p99_ms":%s,"check":"%s"}\n' \
    "$EVENT" "$redis_write" "$redis_read" "$front" "$ratio_w" "$ratio_r" "$(num accepted)" \
    "$(num peak_accepted_rps)" "$(num peak_db_rows_ps)" "$(num p50)" "$(num p99)" "$check" | tee "$OUT/result.json"
[ "$check" = ok ]
