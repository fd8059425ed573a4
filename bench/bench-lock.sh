#!/usr/bin/env bash
# bench-lock.sh: librlock's uncontended lock+unlock pairs/s (simple and reentrant lock,
# one connection) beside redis-benchmark running the same two scripts through EVALSHA
# at the same concurrency (-c 1), in the same run, on the same server. Medians of RUNS.
#
#   bench/bench-lock.sh            (deploy/local.sh bench runs it with .run/env sourced)
# Env: RLOCK_BENCH_N (pairs per run, 20000), RLOCK_BENCH_RUNS (5), SECKILL_BIN_DIR
# (where rlock_bench is; build/bin), RLOCK_BENCH_SHARED=1 to use $SECKILL_REDIS_URL
# instead of a private redis-server (the shared one fsyncs every write: appendfsync always).
#
# redis-benchmark's pair rate is 1 / (1/lock_rps + 1/unlock_rps). Its lock calls use
# random keys (each one a fresh, successful acquisition, as ours), its unlock calls find
# no key (a compare that fails: less work than our real release), so the baseline is
# if anything a little generous to redis-benchmark. Target: rlock >= 80% of it.
set -euo pipefail
# shellcheck source=deploy/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib.sh"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${SECKILL_BIN_DIR:-$ROOT/build/bin}
N=${RLOCK_BENCH_N:-20000}
RUNS=${RLOCK_BENCH_RUNS:-5}
LUA=$ROOT/lua

[ -x "$BIN/rlock_bench" ] || { echo "bench-lock: $BIN/rlock_bench not built" >&2; exit 1; }
command -v redis-benchmark >/dev/null || { echo "bench-lock: redis-benchmark missing (redis-tools)" >&2; exit 1; }

TMP=$(mktemp -d)
PID=
cleanup() {
    if [ -n "$PID" ]; then
        kill "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT

if [ "${RLOCK_BENCH_SHARED:-0}" = 1 ]; then
    URL=${SECKILL_REDIS_URL:?SECKILL_REDIS_URL not set}
    HOSTPORT=${URL#redis://}
    HOSTPORT=${HOSTPORT##*@}
    HOSTPORT=${HOSTPORT%%/*}
    HOST=${HOSTPORT%:*}
    PORT=${HOSTPORT##*:}
    WHERE="shared $HOST:$PORT (AOF, appendfsync always)"
else
    HOST=127.0.0.1
    PORT=$(sk_free_port) || { echo "bench-lock: no free port" >&2; exit 1; }
    redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$TMP" \
        --logfile "$TMP/redis.log" &
    PID=$!
    sk_wait 5 redis-cli -p "$PORT" ping || { echo "bench-lock: redis-server did not start" >&2; exit 1; }
    URL=redis://$HOST:$PORT
    WHERE="private redis-server $HOST:$PORT (no persistence)"
fi
RC=(redis-cli -h "$HOST" -p "$PORT")

# Load the scripts as librlock does (same text, so the same SHA-1): a lock script goes
# with the fence prelude (lua/rlock_fence.lua) before it, as lock/rlock_script.c sends it.
text() {
    if grep -q 'rlock_fence(' "$LUA/$1.lua"; then cat "$LUA/rlock_fence.lua"; fi
    cat "$LUA/$1.lua"
}
load() { text "$1" | "${RC[@]}" -x SCRIPT LOAD; }
S_LOCK=$(load rlock_simple_lock)
S_UNLOCK=$(load rlock_simple_unlock)
R_LOCK=$(load rlock_reentrant_lock)
R_UNLOCK=$(load rlock_reentrant_unlock)
[ "$S_LOCK" = "$(text rlock_simple_lock | sha1sum | cut -d' ' -f1)" ] ||
    { echo "bench-lock: SHA mismatch" >&2; exit 1; }
KEEP=3600000 # the fence counter's retention (rlock_client_opts.fence_retention_ms default)

# rps of one redis-benchmark command (CSV: header, then "name","rps",...)
rb() {
    redis-benchmark -h "$HOST" -p "$PORT" -c 1 -n "$N" -r 1000000 --csv "$@" 2>/dev/null |
        awk -F'"' 'NR==2 {print $4}'
}
pair() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.0f", 1/(1/a + 1/b)}'; }

: >"$TMP/fig"
for _ in $(seq 1 "$RUNS"); do
    for kind in simple reentrant; do
        ours=$("$BIN/rlock_bench" --url "$URL" --kind "$kind" --n "$N" | sed -n 's/.*pairs_per_s=\([0-9.]*\).*/\1/p')
        if [ "$kind" = simple ]; then
            l=$(rb EVALSHA "$S_LOCK" 2 "rlock:{rb:__rand_int__}" "rlock:{rb:__rand_int__}:fence" tok:bench 30000 "$KEEP")
            u=$(rb EVALSHA "$S_UNLOCK" 1 "rlock:{rb:__rand_int__}" tok:bench "rlock:{rb}:ch")
        else
            l=$(rb EVALSHA "$R_LOCK" 2 "rlock:{rr:__rand_int__}" "rlock:{rr:__rand_int__}:fence" owner:bench 30000 "$KEEP")
            u=$(rb EVALSHA "$R_UNLOCK" 1 "rlock:{rr:__rand_int__}" owner:bench "rlock:{rr}:ch")
        fi
        echo "$kind $ours $l $u $(pair "$l" "$u")" >>"$TMP/fig"
    done
done

med() { awk -v k="$1" -v c="$2" '$1==k {print $c}' "$TMP/fig" | sk_median; }
printf 'librlock: uncontended lock+unlock, 1 connection, %s pairs x %s runs (medians), %s\n' "$N" "$RUNS" "$WHERE"
printf '%-10s %14s %16s %16s %18s %8s\n' kind rlock_pairs/s rb_lock_rps rb_unlock_rps rb_pairs/s ratio
json="{\"bench\":\"lock\",\"n\":$N,\"runs\":$RUNS"
for kind in simple reentrant; do
    o=$(med $kind 2); l=$(med $kind 3); u=$(med $kind 4); p=$(med $kind 5)
    ratio=$(awk -v a="$o" -v b="$p" 'BEGIN {printf "%.2f", a/b}')
    printf '%-10s %14.0f %16.0f %16.0f %18.0f %8s\n' "$kind" "$o" "$l" "$u" "$p" "$ratio"
    json="$json,\"${kind}_pairs_per_s\":$o,\"${kind}_redis_benchmark_pairs_per_s\":$p,\"${kind}_ratio\":$ratio"
done
echo "$json}"
