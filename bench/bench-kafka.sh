#!/usr/bin/env bash
# bench/bench-kafka.sh: the Kafka-bound benchmarks on the dev Kafka (seckill-devkafka,
# librdkafka's in-memory mock cluster) and on Apache Kafka (KRaft, deploy/kafka/), side
# by side in one run, alternating (dev, real) for BENCH_KAFKA_ROUNDS rounds (default 1):
#   - the consumer's drain (bench/bench-consumer.sh with KAFKA=dev / KAFKA=real, each on
#     a private Kafka; N orders, default 1,000,000), with the order events on and off
#     (issue 36), against the raw COPY reference;
#   - the flash sale (bench/bench-flashsale.sh) through the stack's front, the stack
#     switched between `deploy/local.sh up --dev-kafka` and `up` (Apache Kafka); the
#     stack is left in the shape it had.
# Prints the figures of every run, then medians and the real/dev ratios. Run by
# `deploy/local.sh bench` (stack up, .run/env sourced) or `deploy/local.sh bench kafka`.
# BENCH_KAFKA_PARTS=consumer or flashsale runs one half only.
set -euo pipefail
# shellcheck source=deploy/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib.sh"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROUNDS=${BENCH_KAFKA_ROUNDS:-1}
PARTS=${BENCH_KAFKA_PARTS:-consumer flashsale}
: "${SECKILL_RUN_DIR:?source .run/env first (deploy/local.sh up)}"
out=$(mktemp -d /tmp/sk-bench-kafka.XXXXXX)
shape=$(cat "$SECKILL_RUN_DIR/stack" 2>/dev/null || echo "")

# up_as dev|real: the stack's services on the dev Kafka or on Apache Kafka (same shape otherwise).
up_as() {
    local flags=()
    [[ $shape == *CLUSTER=1* ]] && flags+=(--cluster)
    [[ $shape =~ FRONTS=([0-9]+) ]] && flags+=(--fronts "${BASH_REMATCH[1]}")
    [[ $shape =~ KAFKA_NODES=([0-9]+) ]] && flags+=(--kafka-nodes "${BASH_REMATCH[1]}")
    [ "$1" = dev ] && flags+=(--dev-kafka)
    env -u SECKILL_KAFKA_BROKERS -u SECKILL_DEVKAFKA_CONTROL -u SECKILL_DEV_KAFKA \
        "$ROOT/deploy/local.sh" up "${flags[@]}" >&2
    # shellcheck disable=SC1091
    . "$SECKILL_RUN_DIR/env"
}
restore() {
    if [[ " $PARTS " == *" flashsale "* ]]; then
        if [[ $shape == *DEV_KAFKA=1* ]]; then up_as dev; else up_as real; fi
    fi
    rm -rf "$out"
}
trap restore EXIT

# json KEY FILE: a number from the JSON line a run printed last.
json() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" "$2" | tail -n 1; }
# json_ev MODE KEY FILE: the same from the consumer's line with the order events MODE.
json_ev() { grep "\"events\":\"$1\"" "$3" | json "$2" /dev/stdin; }

for ((r = 1; r <= ROUNDS; r++)); do
    for k in dev real; do
        if [[ " $PARTS " == *" consumer "* ]]; then
            echo "== round $r: consumer drain on the $k Kafka"
            KAFKA=$k "$ROOT/bench/bench-consumer.sh" | tee "$out/consumer-$k-$r.txt"
        fi
        if [[ " $PARTS " == *" flashsale "* ]]; then
            echo "== round $r: flash sale on the $k Kafka"
            up_as "$k"
            "$ROOT/bench/bench-flashsale.sh" | tee "$out/flashsale-$k-$r.txt"
        fi
    done
done

col() { # KIND KAFKA EXTRACTOR ARGS: the median over the rounds
    local kind=$1 k=$2 f r
    shift 2
    for ((r = 1; r <= ROUNDS; r++)); do
        f="$out/$kind-$k-$r.txt"
        [ -f "$f" ] && "$@" "$f"
    done | sk_median_or ""
}
echo
echo "== Kafka side by side: medians of $ROUNDS round(s) (machine shared; load average $(cut -d' ' -f1-3 /proc/loadavg))"
printf '  %-44s %14s %14s %8s\n' "measure" "dev Kafka" "Apache Kafka" "real/dev"
row() {
    awk -v n="$1" -v a="$2" -v b="$3" -v u="$4" 'BEGIN {
        if (a == "" || b == "") { printf "  %-44s %14s %14s %8s\n", n, a, b, "-"; exit }
        printf "  %-44s %14s %14s %8.2f\n", n, sprintf("%.0f%s", a, u), sprintf("%.0f%s", b, u), (a > 0 ? b / a : 0) }'
}
if [[ " $PARTS " == *" consumer "* ]]; then
    # bench-consumer drains with the order events on and off (issue 36), against one COPY.
    d_fk=$(col consumer dev json copy_fk_rate) r_fk=$(col consumer real json copy_fk_rate)
    row "raw COPY with FK (the reference), rows/s" "$d_fk" "$r_fk" ""
    for ev in on off; do
        d_rate=$(col consumer dev json_ev $ev drain_rate_steady) r_rate=$(col consumer real json_ev $ev drain_rate_steady)
        row "consumer drain, events $ev (from assignment), orders/s" "$d_rate" "$r_rate" ""
        awk -v ev="$ev" -v a="$d_rate" -v b="$r_rate" -v fa="$d_fk" -v fb="$r_fk" 'BEGIN {
            printf "  %-44s %14.2f %14.2f\n", "  / COPY with FK, events " ev " (target >= 0.8)", (fa ? a / fa : 0), (fb ? b / fb : 0) }'
    done
    row "publisher lag at the end of the drain, ms" "$(col consumer dev json_ev on publisher_lag_s | awk '{ print $1 * 1000 }')" \
        "$(col consumer real json_ev on publisher_lag_s | awk '{ print $1 * 1000 }')" ""
fi
if [[ " $PARTS " == *" flashsale "* ]]; then
    row "flash sale: front answers/s during the burst" "$(col flashsale dev json front_rps)" "$(col flashsale real json front_rps)" ""
    row "flash sale: peak accepted (202/s, 100 ms)" "$(col flashsale dev json peak_accepted_rps)" "$(col flashsale real json peak_accepted_rps)" ""
fi
