#!/usr/bin/env bash
# bench/demo.sh: the flash sale end to end on the local stack (run by `deploy/local.sh demo`,
# after `up`, with .run/env sourced; a `--down` argument is local.sh's business).
#
# Creates an event with DEMO_STOCK (10,000) stock that starts now, sends DEMO_REQUESTS
# (300,000) requests of DEMO_USERS (100,000) users flat out through seckill-bench, waits
# for the drain into PostgreSQL, runs seckill-check, draws the chart, and prints a short
# summary. Everything lands in bench/out/<UTC timestamp>/. Every run is a new event, so
# it can be run again on the same stack. Exit status: seckill-check's (0: all guarantees
# held), or 1 if the load itself failed.
#
# With several fronts (SECKILL_HTTP_LIST, `up --fronts N`) the connections are spread
# over them. On a Redis Cluster (SECKILL_REDIS_URL redis-cluster://..., `up --cluster`)
# the sale has DEMO_EVENTS (3) events of DEMO_STOCK each, picked by slot so that every
# master serves one (bench/cluster_lib.sh), sold at once by one seckill-bench each
# (the requests and connections split between them), each checked and reported on its
# own under bench/out/<UTC timestamp>/e<ID>/.
#
# --challenge (`deploy/local.sh demo --challenge`): the event has a proof-of-work challenge
# of DEMO_CHALLENGE (10) bits (issue 31); every user gets and solves its own before the
# clock starts (seckill-bench --challenge: about 2^bits hashes per user on one core,
# reported), then the sale runs as without. Not with a Redis Cluster's several events.
set -euo pipefail
# shellcheck source=deploy/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib.sh"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${SECKILL_BIN_DIR:-$ROOT/build/bin}
STOCK=${DEMO_STOCK:-10000}
USERS=${DEMO_USERS:-100000}
REQUESTS=${DEMO_REQUESTS:-300000}
CONNECTIONS=${DEMO_CONNECTIONS:-64}
THREADS=${DEMO_THREADS:-1}
EVENTS=${DEMO_EVENTS:-3}
HTTP=${SECKILL_HTTP_LIST:-${SECKILL_HTTP:-}}
CHALLENGE=0
for a in "$@"; do
    case $a in
    --challenge) CHALLENGE=${DEMO_CHALLENGE:-10} ;;
    --down) ;; # local.sh's
    *) echo "demo: unknown argument '$a' (--challenge, --down)" >&2; exit 2 ;;
    esac
done

for v in SECKILL_HTTP SECKILL_REDIS_URL SECKILL_PG SECKILL_JWT_SECRET; do
    [ -n "${!v:-}" ] || { echo "demo: $v is not set (deploy/local.sh up, then source .run/env)" >&2; exit 2; }
done
# librdkafka takes every SECKILL_KAFKA_* as a property: keep only the brokers.
for v in $(env | sed -n 's/^\(SECKILL_KAFKA_[A-Z_]*\)=.*/\1/p'); do
    [ "$v" = SECKILL_KAFKA_BROKERS ] || unset "$v"
done

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=$ROOT/bench/out/$STAMP
mkdir -p "$OUT"

num() { sk_json_num "$OUT/summary.json" "$1"; }
fig() { awk -v k="$1" '$2 == k { print $3 }' "$OUT/check.txt"; }

# check_and_report EVENT REQUESTS: seckill-check, chart and summary of the event whose
# files are in $OUT. Sets check_rc.
check_and_report() {
    local event=$1 requests=$2 chart="" sub drain
    echo "== seckill-check (waits for the drain, then checks every guarantee)"
    check_rc=0
    "$BIN/seckill-check" --wait 120 "$event" "$OUT/accepted.txt" | tee "$OUT/check.txt" || check_rc=$?
    if command -v gnuplot >/dev/null; then
        sub="event $event: $STOCK stock, $USERS users, $requests requests; $(printf '%.0f' "$(num rate_rps)") req/s answered"
        if gnuplot -e "datafile='$OUT/timeline.csv'; outfile='$OUT/chart.png'; subtitle='$sub'" \
            "$ROOT/bench/chart.gp" 2>"$OUT/gnuplot.log"; then
            chart=$OUT/chart.png
        else
            echo "demo: gnuplot failed (see $OUT/gnuplot.log)" >&2
        fi
    else
        echo "demo: gnuplot not installed (apt-get install gnuplot-nox): no chart" >&2
    fi

    echo
    echo "== summary of event $event"
    printf '  requests      %s answered in %.2f s = %.0f req/s at the front (accepted + refused)\n' \
        "$(num answered)" "$(num burst_s)" "$(num rate_rps)"
    printf '  outcomes      %s\n' "$(sed -n '/"outcomes"/,/}/p' "$OUT/summary.json" | sed -n 's/^ *"\([^"]*\)": *\([0-9][0-9]*\),\{0,1\}$/\1: \2/p' | paste -sd ',' | sed 's/,/, /g')"
    printf '  peak rates    %.0f accepted/s at the front, %.0f rows/s written to PostgreSQL (best 100 ms)\n' \
        "$(num peak_accepted_rps)" "$(num peak_db_rows_ps)"
    drain=$(num drain_s)
    if awk -v d="$drain" 'BEGIN { exit !(d >= 0) }'; then
        printf '  drain         every order in PostgreSQL %.2f s after the first request, %.2f s after the last 202\n' \
            "$drain" "$(num drain_after_last_202_s)"
    else
        printf '  drain         not over when seckill-bench stopped waiting (see the checker)\n'
    fi
    printf '  latency       p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms\n' "$(num p50)" "$(num p99)" "$(num p999)" "$(num max)"
    printf '  guarantees    oversold %s, duplicates %s, lost %s, stock_left off by %s, redis balance off by %s, dead letters %s\n' \
        "$(fig oversold)" "$(fig duplicates)" "$(fig lost)" "$(fig stock_left)" "$(fig redis_balance)" "$(fig dlq)"
    if [ $check_rc -eq 0 ]; then
        echo "  verdict       every guarantee held"
    else
        echo "  verdict       VIOLATED: $(grep '^FAIL' "$OUT/check.txt" | awk '{print $2}' | paste -sd ' ')"
    fi
    echo
    echo "== files"
    [ -n "$chart" ] && echo "  chart         $chart"
    echo "  timeline      $OUT/timeline.csv"
    echo "  summary       $OUT/summary.json"
    echo "  accepted ids  $OUT/accepted.txt"
    echo "  checker       $OUT/check.txt"
}

if [[ $SECKILL_REDIS_URL != redis-cluster://* ]]; then
    echo "== seckill demo: $STOCK in stock, $USERS users, $REQUESTS requests, flat out ($CONNECTIONS connections)"
    [ "$CHALLENGE" = 0 ] || echo "   with a challenge of $CHALLENGE bits: each user solves its own first (about $((1 << CHALLENGE)) hashes each)"
    rc=0
    "$BIN/seckill-bench" --http "$HTTP" --stock "$STOCK" --users "$USERS" --requests "$REQUESTS" \
        --connections "$CONNECTIONS" --threads "$THREADS" --event.name "demo $STAMP" \
        --challenge "$CHALLENGE" --out "$OUT" | tee "$OUT/bench.txt" || rc=1
    [ -s "$OUT/event_id" ] && [ -s "$OUT/summary.json" ] || { echo "demo: the load generator failed" >&2; exit 1; }
    check_and_report "$(cat "$OUT/event_id")" "$REQUESTS"
    [ $rc -eq 0 ] || exit $rc
    exit $check_rc
fi

# On a Redis Cluster: an event on every master, all sold at once.
[ "$CHALLENGE" = 0 ] || { echo "demo: --challenge is for the one-event demo, not a Redis Cluster's" >&2; exit 2; }
# shellcheck source=bench/cluster_lib.sh
. "$ROOT/bench/cluster_lib.sh"
nodes=${SECKILL_REDIS_URL#redis-cluster://}
nodes=${nodes##*@}
CL_PORTS=()
IFS=, read -r -a addrs <<<"$nodes"
for a in "${addrs[@]}"; do CL_PORTS+=("${a##*:}"); done
CL_FRONT=${HTTP%%,*}
CL_SECRET=$SECKILL_JWT_SECRET
cl_create_events_on_masters "$EVENTS" "$STOCK" "demo $STAMP" || exit 1
per_req=$((REQUESTS / EVENTS))
per_conn=$(((CONNECTIONS + EVENTS - 1) / EVENTS))
echo "== seckill demo on the Redis Cluster: $EVENTS events of $STOCK stock spread over the masters, sold at once"
for ev in "${CL_EVENTS[@]}"; do
    echo "  event $ev on the master at port ${CL_EVENT_MASTER[$ev]}: $USERS users, $per_req requests, $per_conn connections over $HTTP"
done
pids=()
for ev in "${CL_EVENTS[@]}"; do
    mkdir -p "$OUT/e$ev"
    "$BIN/seckill-bench" --http "$HTTP" --event "$ev" --users "$USERS" --requests "$per_req" \
        --connections "$per_conn" --threads "$THREADS" --progress false --out "$OUT/e$ev" \
        >"$OUT/e$ev/bench.txt" 2>&1 &
    pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
worst=0
for ev in "${CL_EVENTS[@]}"; do
    OUT=$ROOT/bench/out/$STAMP/e$ev
    [ -s "$OUT/summary.json" ] || { echo "demo: the load generator of event $ev failed (see $OUT/bench.txt)" >&2; rc=1; continue; }
    echo
    echo "==== event $ev (master at port ${CL_EVENT_MASTER[$ev]})"
    check_and_report "$ev" "$per_req"
    [ $check_rc -gt $worst ] && worst=$check_rc
done
[ $rc -eq 0 ] || exit $rc
exit $worst
