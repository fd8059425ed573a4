#!/usr/bin/env bash
# bench/bench-soak.sh: the soak (issue 7). Load at half the measured peak for DURATION
# seconds (10 minutes) against the stack in .run/env, sampling the resident memory and
# open file descriptors of seckill-order and seckill-consumer every 10 s from /proc.
# Verdict: after the warm-up (the first minute) neither grows by 10% or more, and no
# answer is anything but a 202 or an expected 409 (sold_out, duplicate).
# Run by `deploy/local.sh bench soak` only (the plain `bench` skips it).
#
# The load is a series of flash sales: one seckill-bench run per CHUNK seconds, each on a
# new event with STOCK units for USERS users (so every minute has its accept burst into
# Redis, Kafka and PostgreSQL, then the sold-out path), paced open loop at RATE requests/s
# over all connections (seckill-bench --rate.open: requests owed after a slow moment are
# still sent, and their latency counts from when they were due). RATE: half the peak of a 10 s flat-out run of the same mix, measured first
# (or RATE=... to skip the measurement). After the load each sale is checked with
# seckill-check.
#
# Environment: DURATION (600) RATE (measured) WARMUP (60) SAMPLE (10) CHUNK (60)
# STOCK (10000) USERS (100000) CONNECTIONS (128: one request in flight per connection, so
# enough of them that a slow moment does not hold the offered rate down) THREADS (1); the services' pids from
# SOAK_ORDER_PID / SOAK_CONSUMER_PID, else .run/seckill-{order,consumer}.pid, else pgrep.
# Output: bench/out/soak-<stamp>/ (samples.csv, each run's files, checks) and one JSON line.
set -euo pipefail
# shellcheck source=deploy/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib.sh"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${SECKILL_BIN_DIR:-$ROOT/build/bin}
DURATION=${DURATION:-600}
WARMUP=${WARMUP:-60}
SAMPLE=${SAMPLE:-10}
CHUNK=${CHUNK:-60}
STOCK=${STOCK:-10000}
USERS=${USERS:-100000}
CONNECTIONS=${CONNECTIONS:-128}
THREADS=${THREADS:-1}

die() { echo "bench-soak: $*" >&2; exit 2; }
for v in SECKILL_HTTP SECKILL_REDIS_URL SECKILL_PG SECKILL_JWT_SECRET; do
    [ -n "${!v:-}" ] || die "$v is not set (deploy/local.sh up, then source .run/env)"
done
for b in seckill-bench seckill-check; do
    [ -x "$BIN/$b" ] || die "$BIN/$b is not built"
done

# pid NAME: the service's pid (environment, then .run/NAME.pid, then a single pgrep match).
pid_of() {
    local name=$1 var=$2 p=""
    if [ -n "${!var:-}" ]; then
        p=${!var}
    elif [ -f "$ROOT/.run/$name.pid" ]; then
        p=$(cat "$ROOT/.run/$name.pid")
    else
        p=$(pgrep -x "$name" || true)
        [ "$(echo "$p" | wc -w)" -eq 1 ] || die "$name: $(echo "$p" | wc -w) processes; set $var"
    fi
    [ -n "$p" ] && [ -d "/proc/$p" ] || die "$name is not running (pid '${p}')"
    echo "$p"
}
ORDER_PID=$(pid_of seckill-order SOAK_ORDER_PID)
CONSUMER_PID=$(pid_of seckill-consumer SOAK_CONSUMER_PID)

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${SOAK_OUT:-$ROOT/bench/out/soak-$STAMP}
mkdir -p "$OUT"
SAMPLER=""
trap '[ -n "$SAMPLER" ] && kill "$SAMPLER" 2>/dev/null; true' EXIT

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# fds PID PORT: the process's open descriptors, not counting the sockets whose local port
# is PORT (its HTTP listeners and the load's connections to them): each sale's load opens
# and closes CONNECTIONS of those, so a sample taken between two sales would otherwise
# read as a change. What is left (Redis, Kafka, PostgreSQL connections, files, pipes) is
# what a leak would grow.
fds() {
    awk -v p="$(printf ':%04X' "$2")" '
        FILENAME ~ /net\/tcp/ { if (FNR > 1 && substr($2, length($2) - 4) == p) http["socket:[" $10 "]"] = 1; next }
        !($0 in http) { n++ }
        END { print n + 0 }' /proc/net/tcp /proc/net/tcp6 <(find "/proc/$1/fd" -mindepth 1 -printf '%l\n' 2>/dev/null)
}
port_of() { local hp=${1#*://}; hp=${hp%%/*}; echo "${hp##*:}"; }
ORDER_PORT=$(port_of "$SECKILL_HTTP")
CONSUMER_PORT=$(port_of "${SECKILL_CONSUMER_HTTP:-http://127.0.0.1:0}")
summary() { sk_json_num "$1/summary.json" "$2"; }

bench() {
    "$BIN/seckill-bench" --http "$SECKILL_HTTP" --pg "$SECKILL_PG" --progress false \
        --connections "$CONNECTIONS" --threads "$THREADS" --users "$USERS" --stock "$STOCK" "$@"
}

# 1. The peak: the same mix flat out for 10 s.
if [ -z "${RATE:-}" ]; then
    bench --out "$OUT/peak" --duration 10 --requests 0 --drain.wait 60 --event.name soak-peak \
        >"$OUT/peak.txt" 2>"$OUT/peak.log" || die "the peak run failed: $(tail -n 3 "$OUT/peak.log")"
    PEAK=$(summary "$OUT/peak" rate_rps | awk '{ printf "%d", $1 }')
    RATE=$((PEAK / 2))
    echo "bench-soak: peak $PEAK answers/s (10 s flat out); soak at $RATE req/s" >&2
else
    PEAK=""
    echo "bench-soak: soak at RATE=$RATE req/s" >&2
fi
[ "$RATE" -gt 0 ] || die "rate $RATE"

# 2. The sampler: every SAMPLE s, RSS (kB) and open fds (but the HTTP port's) of both services.
echo "t_s,order_rss_kb,order_fds_own,consumer_rss_kb,consumer_fds_own" >"$OUT/samples.csv"
(
    t0=$SECONDS
    while :; do
        echo "$((SECONDS - t0)),$(rss_kb "$ORDER_PID"),$(fds "$ORDER_PID" "$ORDER_PORT"),$(rss_kb "$CONSUMER_PID"),$(fds "$CONSUMER_PID" "$CONSUMER_PORT")" \
            >>"$OUT/samples.csv" || exit 0
        sleep "$SAMPLE"
    done
) &
SAMPLER=$!

# 3. The load: one sale per CHUNK seconds until DURATION is used up.
t0=$SECONDS
n=0
while [ $((SECONDS - t0)) -lt "$DURATION" ]; do
    n=$((n + 1))
    left=$((DURATION - (SECONDS - t0)))
    secs=$((left < CHUNK ? left : CHUNK))
    bench --out "$OUT/run-$n" --duration "$secs" --requests 0 --rate "$RATE" --rate.open true --drain.wait 0 \
        --event.name "soak-$n" >"$OUT/run-$n.txt" 2>"$OUT/run-$n.log" ||
        echo "bench-soak: run $n failed: $(tail -n 2 "$OUT/run-$n.log")" >&2
    echo "bench-soak: run $n: $(sed -n 's/^  answered *//p' "$OUT/run-$n.txt")" >&2
done
elapsed=$((SECONDS - t0))
kill "$SAMPLER" 2>/dev/null || true
wait "$SAMPLER" 2>/dev/null || true
SAMPLER=""

# 4. Every sale checked once the last has drained.
checks_failed=0
for ((i = 1; i <= n; i++)); do
    [ -s "$OUT/run-$i/event_id" ] || { checks_failed=$((checks_failed + 1)); continue; }
    "$BIN/seckill-check" --redis.url "$SECKILL_REDIS_URL" --pg "$SECKILL_PG" --wait 120 \
        "$(cat "$OUT/run-$i/event_id")" "$OUT/run-$i/accepted.txt" >"$OUT/check-$i.txt" 2>&1 ||
        { checks_failed=$((checks_failed + 1)); echo "bench-soak: seckill-check failed for run $i:" >&2; cat "$OUT/check-$i.txt" >&2; }
done

# 5. Figures: answers by class over all runs, growth after the warm-up.
cat "$OUT"/run-*/outcomes.csv | awk -F, '$1 != "status" { n[$1 " " $2] += $3 }
    END { for (k in n) print k, n[k] }' | sort >"$OUT/outcomes.txt"
answered=$(awk '{ s += $NF } END { print s + 0 }' "$OUT/outcomes.txt")
errors=$(awk '!($1 == 202 || ($1 == 409 && ($2 == "sold_out" || $2 == "duplicate"))) { s += $NF } END { print s + 0 }' "$OUT/outcomes.txt")
growth() { # column -> "base last max growth%": base = the first sample at or after the warm-up
    awk -F, -v c="$1" -v w="$WARMUP" 'NR > 1 && $1 >= w { if (base == "") base = $c; last = $c; if ($c > max) max = $c }
        END { if (base == "" || base == 0) { print "- - - -"; exit }
              printf "%s %s %s %.1f\n", base, last, max, (max - base) * 100 / base }' "$OUT/samples.csv"
}
read -r o_rss0 o_rss1 o_rssm o_rssg <<<"$(growth 2)"
read -r o_fd0 o_fd1 o_fdm o_fdg <<<"$(growth 3)"
read -r c_rss0 c_rss1 c_rssm c_rssg <<<"$(growth 4)"
read -r c_fd0 c_fd1 c_fdm c_fdg <<<"$(growth 5)"
flat() { awk -v g="$1" 'BEGIN { exit !(g != "-" && g < 10) }'; }
verdict=met
for g in "$o_rssg" "$o_fdg" "$c_rssg" "$c_fdg"; do flat "$g" || verdict="not met"; done
[ "$errors" -eq 0 ] && [ "$checks_failed" -eq 0 ] || verdict="not met"

{
    echo "soak: $elapsed s at $RATE req/s offered (peak ${PEAK:-not measured}), $n sales of $STOCK stock," \
        "$answered answers = $((answered / (elapsed > 0 ? elapsed : 1))) answers/s"
    echo "answers by class:"
    sed 's/^/  /' "$OUT/outcomes.txt"
    echo "errors (anything but 202 and 409 sold_out/duplicate): $errors; seckill-check failures: $checks_failed of $n"
    echo "after the ${WARMUP} s warm-up (base = first sample after it; growth = (max - base) / base):"
    printf '  %-26s base %8s  last %8s  max %8s  growth %s%%\n' \
        "seckill-order RSS kB" "$o_rss0" "$o_rss1" "$o_rssm" "$o_rssg" \
        "seckill-order fds (own)" "$o_fd0" "$o_fd1" "$o_fdm" "$o_fdg" \
        "seckill-consumer RSS kB" "$c_rss0" "$c_rss1" "$c_rssm" "$c_rssg" \
        "seckill-consumer fds (own)" "$c_fd0" "$c_fd1" "$c_fdm" "$c_fdg"
    echo "target (growth < 10%, no error but 409s): $verdict"
    echo "files: $OUT"
} | tee "$OUT/report.txt"
printf '{"bench":"soak","seconds":%d,"rate":%d,"peak":"%s","answers_per_s":%d,"answered":%d,"errors":%d,"checks_failed":%d,"order_rss_growth_pct":"%s","order_fd_growth_pct":"%s","consumer_rss_growth_pct":"%s","consumer_fd_growth_pct":"%s","verdict":"%s"}\n' \
    "$elapsed" "$RATE" "${PEAK:-}" "$((answered / (elapsed > 0 ? elapsed : 1)))" "$answered" "$errors" "$checks_failed" "$o_rssg" "$o_fdg" "$c_rssg" "$c_fdg" "$verdict"
[ "$verdict" = met ]
