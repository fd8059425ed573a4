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

# --- Side by side (issue 34): librlock beside Redisson (Java, async API) and redsync (Go,
# go-redis) on the same private Redis, one library after the other in each round
# (alternating), medians of RLOCK_BENCH_SIDE_RUNS (3) rounds of RLOCK_BENCH_SECS (3) s per
# case. Cases: uncontended at 1 and 16 concurrent holders of distinct names; contended:
# 16 waiters on one name (hand-off p50/p99: a holder's unlock call to the next grant);
# Redlock on 5 servers (librlock, redsync; 1 holder). Per case: pairs/s, client CPU per
# pair (the driver's own process), Redis CPU per pair (INFO cpu of the server(s)), and
# pairs/s per client core. Each library runs one client per process, shared by its N
# holders (librlock's threads, Redisson's async chains, redsync's goroutines on one
# go-redis pool per server). librlock runs its reentrant lock (Redisson's RLock; redsync
# has only a plain mutex, a cheaper script). Needs java+mvn and go (deploy/local.sh
# deps); RLOCK_BENCH_SIDE=0 skips it.
[ "${RLOCK_BENCH_SIDE:-1}" = 1 ] || exit 0
if ! command -v java >/dev/null || ! command -v mvn >/dev/null || ! command -v go >/dev/null; then
    echo "bench-lock: side by side skipped: java, mvn and go are needed (deploy/local.sh deps)" >&2
    exit 0
fi
SECS=${RLOCK_BENCH_SECS:-3}
SRUNS=${RLOCK_BENCH_SIDE_RUNS:-3}
( cd "$ROOT/bench/lock-redisson" &&
    { mvn -q -B -o package -Drlock.build.dir="$TMP/jb" || mvn -q -B package -Drlock.build.dir="$TMP/jb"; } ) >&2 ||
    { echo "bench-lock: the Redisson driver did not build" >&2; exit 1; }
( cd "$ROOT/bench/lock-redsync" && go build -o "$TMP/lock-redsync" . ) >&2 ||
    { echo "bench-lock: the redsync driver did not build" >&2; exit 1; }

# Four more servers for Redlock (with $PORT, five).
RL_PIDS=()
RL_URLS=$URL
RL_PORTS=("$PORT")
for i in 1 2 3 4; do
    p=$(sk_free_port) || { echo "bench-lock: no free port" >&2; exit 1; }
    mkdir -p "$TMP/rl$i"
    redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --dir "$TMP/rl$i" \
        --logfile "$TMP/rl$i/redis.log" &
    RL_PIDS+=($!)
    sk_wait 5 redis-cli -p "$p" ping || { echo "bench-lock: redis-server did not start" >&2; exit 1; }
    RL_URLS=$RL_URLS,redis://127.0.0.1:$p
    RL_PORTS+=("$p")
done
trap 'for p in "${RL_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; cleanup' EXIT

# Redis CPU seconds so far, summed over the given ports.
redis_cpu() {
    for p in "$@"; do redis-cli -h "$HOST" -p "$p" INFO cpu; done |
        awk -F: '/^used_cpu_(user|sys):/ {s += $2} END {printf "%.6f", s}'
}
# One driver run: prints "pairs_per_s cpu_us_per_pair redis_us_per_pair per_core p50 p99".
side() { # lib mode conc urls
    local lib=$1 mode=$2 conc=$3 urls=$4 out r0 r1 ports=("$PORT")
    [ "$urls" = "$URL" ] || ports=("${RL_PORTS[@]}")
    r0=$(redis_cpu "${ports[@]}")
    case $lib in
    rlock) out=$("$BIN/rlock_bench" --urls "$urls" --mode "$mode" --conc "$conc" --secs "$SECS" --kind reentrant) ;;
    redisson) out=$(java -jar "$TMP/jb/rlock-redisson-bench.jar" "$urls" "$mode" "$conc" "$SECS") ;;
    redsync) out=$("$TMP/lock-redsync" --urls "$urls" --mode "$mode" --conc "$conc" --secs "$SECS") ;;
    esac
    r1=$(redis_cpu "${ports[@]}")
    echo "$out" | awk -v r0="$r0" -v r1="$r1" '{
        for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        pairs = v["pairs"] > 0 ? v["pairs"] : 1
        per_core = v["cpu_s"] > 0 ? v["pairs"] / v["cpu_s"] : 0
        printf "%.0f %.1f %.1f %.0f %d %d\n", v["pairs_per_s"], v["cpu_s"] * 1e6 / pairs,
            (r1 - r0) * 1e6 / pairs, per_core, v["p50_us"], v["p99_us"]
    }'
}
: >"$TMP/side"
for _ in $(seq 1 "$SRUNS"); do
    for c in "uncontended 1" "uncontended 16" "contended 16"; do
        set -- $c
        for lib in rlock redisson redsync; do
            echo "$1-$2 $lib $(side "$lib" "$1" "$2" "$URL")" >>"$TMP/side"
        done
    done
    for lib in rlock redsync; do
        echo "redlock5-1 $lib $(side "$lib" uncontended 1 "$RL_URLS")" >>"$TMP/side"
    done
done
smed() { # the median, or nothing when the case has no run of that library
    local v
    v=$(awk -v k="$1" -v l="$2" -v c="$3" '$1==k && $2==l {print $c}' "$TMP/side" | sk_median)
    [ "$v" = n/a ] || echo "$v"
}
printf '\nside by side: %s s x %s rounds (medians), %s; librlock = reentrant lock\n' "$SECS" "$SRUNS" "$WHERE"
printf '%-16s %-9s %10s %14s %14s %14s %9s %9s\n' case lib pairs/s client_us/pair redis_us/pair pairs/client_s p50_us p99_us
sjson="{\"bench\":\"lock-side\",\"secs\":$SECS,\"runs\":$SRUNS"
for k in uncontended-1 uncontended-16 contended-16 redlock5-1; do
    for lib in rlock redisson redsync; do
        [ -n "$(smed "$k" "$lib" 3)" ] || continue
        printf '%-16s %-9s %10.0f %14.1f %14.1f %14.0f %9.0f %9.0f\n' "$k" "$lib" "$(smed "$k" $lib 3)" \
            "$(smed "$k" $lib 4)" "$(smed "$k" $lib 5)" "$(smed "$k" $lib 6)" "$(smed "$k" $lib 7)" "$(smed "$k" $lib 8)"
        sjson="$sjson,\"${k}_${lib}_pairs_per_s\":$(smed "$k" $lib 3),\"${k}_${lib}_pairs_per_client_s\":$(smed "$k" $lib 6)"
    done
    for other in redisson redsync; do
        o=$(smed "$k" "$other" 6)
        [ -n "$o" ] || continue
        printf '%-16s rlock/%s pairs per client core: %sx\n' "$k" "$other" \
            "$(awk -v a="$(smed "$k" rlock 6)" -v b="$o" 'BEGIN {r = b > 0 ? a / b : 0; printf "%.2f", r}')"
    done
done
echo "$sjson}"
