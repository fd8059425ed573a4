#!/usr/bin/env bash
# bench-consumer.sh: seckill-consumer drain rate against a raw COPY of the same rows.
#
# Loads N orders (default 1,000,000) into a private seckill-devkafka, then times
# seckill-consumer draining them into a fresh database; then times a raw COPY of the
# very same rows into an empty copy of seckill_order (LIKE ... INCLUDING ALL: same
# indexes, no foreign key), in the same run. Prints a table and one JSON line.
# Needs the stack of `deploy/local.sh up` (PostgreSQL) and .run/env sourced; uses
# $SECKILL_BIN_DIR (a Release build for meaningful figures; override with BIN=...).
# Knobs: N, EVENTS, PARTITIONS, BATCH_MAX (batch.max), WRITERS (db.writers), PORT.
set -euo pipefail

N=${N:-1000000}
EVENTS=${EVENTS:-256}
# librdkafka's mock cluster keeps about 5 MB per partition and drops older batches
# beyond that, so a million ~120-byte orders need many partitions.
PARTITIONS=${PARTITIONS:-64}
BATCH_MAX=${BATCH_MAX:-1000}
WRITERS=${WRITERS:-2}
# The consumer's /metrics during the run: the first port of 38100..38199 nobody answers on.
free_port() {
    local p
    for p in $(seq 38100 38199); do
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
    done
    echo 0
}
PORT=${PORT:-$(free_port)}
BIN=${BIN:-${SECKILL_BIN_DIR:?source .run/env first}}
: "${SECKILL_PG:?source .run/env first}" "${SECKILL_PG_ADMIN:?source .run/env first}"
DB=sk_bench_consumer
for b in seckill-consumer seckill-devkafka consumer-load; do
    [ -x "$BIN/$b" ] || { echo "bench-consumer: $BIN/$b is not built" >&2; exit 1; }
done

work=$(mktemp -d /tmp/sk-bench-consumer.XXXXXX)
kpid="" cpid=""
cleanup() {
    [ -n "$cpid" ] && kill "$cpid" 2>/dev/null && wait "$cpid" 2>/dev/null || true
    [ -n "$kpid" ] && kill "$kpid" 2>/dev/null && wait "$kpid" 2>/dev/null || true
    psql "$SECKILL_PG_ADMIN" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

now() { date +%s.%N; }
pg() { psql "$SECKILL_PG dbname=$DB" -qAtX "$@"; }

"$BIN/seckill-devkafka" --partitions "$PARTITIONS" --bootstrap-file "$work/bootstrap" \
    >/dev/null 2>"$work/devkafka.log" &
kpid=$!
for _ in $(seq 200); do [ -s "$work/bootstrap" ] && break; sleep 0.05; done
brokers=$(cat "$work/bootstrap")

psql "$SECKILL_PG_ADMIN" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null
psql "$SECKILL_PG_ADMIN" -qc "CREATE DATABASE $DB OWNER seckill" >/dev/null
SECKILL_PG="$SECKILL_PG dbname=$DB" "$BIN/seckill-consumer" migrate 2>/dev/null
stock=$(( N / EVENTS + 1 ))
pg -c "INSERT INTO seckill_event (id, name, stock_total, stock_left, starts_at, ends_at)
       SELECT 7000000000 + g, 'bench', $stock, $stock, now(), now() + interval '1 day'
       FROM generate_series(0, $EVENTS - 1) g"

echo "bench-consumer: loading $N orders ($EVENTS events, $PARTITIONS partitions)" >&2
"$BIN/consumer-load" --brokers "$brokers" --count "$N" --events "$EVENTS" \
    --copy-file "$work/orders.tsv" >&2

# Drain: from the consumer's start (group join included) and from its first commit.
t0=$(now)
SECKILL_PG="$SECKILL_PG dbname=$DB" SECKILL_KAFKA_BROKERS="$brokers" SECKILL_HTTP_PORT="$PORT" \
    SECKILL_GROUP_ID=bench SECKILL_BATCH_MAX="$BATCH_MAX" SECKILL_DB_WRITERS="$WRITERS" SECKILL_LOG_LEVEL=warn \
    "$BIN/seckill-consumer" 2>"$work/consumer.log" &
cpid=$!
t1=""
done_rows=0
while :; do
    done_rows=$(pg -c "SELECT sum(stock_total - stock_left) FROM seckill_event")
    [ -z "$t1" ] && [ "$done_rows" -gt 0 ] && t1=$(now) && first_rows=$done_rows
    [ "$done_rows" -ge "$N" ] && break
    kill -0 "$cpid" 2>/dev/null || { echo "bench-consumer: consumer died" >&2; cat "$work/consumer.log" >&2; exit 1; }
    sleep 0.1
done
t2=$(now)
metrics=$(curl -fsS "http://127.0.0.1:$PORT/metrics" || true)
m() { awk -v k="$1" '$1 == k { print $2 }' <<<"$metrics"; }
tx_sum=$(m seckill_consumer_transaction_seconds_sum); tx_n=$(m seckill_consumer_transaction_seconds_count)
bs_sum=$(m seckill_consumer_batch_size_sum); bs_n=$(m seckill_consumer_batch_size_count)
# The consumer's own CPU time (user + system), to tell its cost from PostgreSQL's.
read -r -a st <"/proc/$cpid/stat"
cpu_s=$(awk -v u="${st[13]}" -v s="${st[14]}" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (u + s) / hz }')
kill -TERM "$cpid"; wait "$cpid" || true; cpid=""
rows=$(pg -c "SELECT count(*) FROM seckill_order")
[ "$rows" -eq "$N" ] || { echo "bench-consumer: $rows rows, expected $N" >&2; exit 1; }

# Raw COPY of the same rows into an empty copy of the table.
pg -c "CREATE TABLE bench_copy (LIKE seckill_order INCLUDING ALL)"
t3=$(now)
pg -c "\\copy bench_copy FROM '$work/orders.tsv'"
t4=$(now)
copied=$(pg -c "SELECT count(*) FROM bench_copy")

awk -v n="$N" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v t3="$t3" -v t4="$t4" -v first="$first_rows" \
    -v copied="$copied" -v batch="$BATCH_MAX" -v parts="$PARTITIONS" -v writers="$WRITERS" \
    -v cpu_s="$cpu_s" -v tx_sum="${tx_sum:-0}" -v tx_n="${tx_n:-0}" -v bs_sum="${bs_sum:-0}" -v bs_n="${bs_n:-0}" 'BEGIN {
    total = t2 - t0; steady = t2 - t1; copy = t4 - t3
    rate_total = n / total; rate_steady = (n - first) / steady; rate_copy = copied / copy
    printf "%-34s %12s %12s\n", "measure", "seconds", "orders/s"
    printf "%-34s %12.2f %12.0f\n", "consumer drain (incl. group join)", total, rate_total
    printf "%-34s %12.2f %12.0f\n", "consumer drain (after 1st commit)", steady, rate_steady
    printf "%-34s %12.2f %12.0f\n", "raw COPY, same rows", copy, rate_copy
    printf "%-34s %12s %11.0f%%\n", "consumer / COPY (steady)", "", 100 * rate_steady / rate_copy
    if (tx_n > 0)
        printf "batches %d, mean size %.0f, mean transaction %.1f ms (writers %d, batch.max %d)\n",
            tx_n, bs_sum / (bs_n ? bs_n : 1), 1000 * tx_sum / tx_n, writers, batch
    printf "consumer process CPU %.2f s (%.1f us per order)\n", cpu_s, 1e6 * cpu_s / n
    printf "{\"bench\":\"consumer\",\"orders\":%d,\"batch_max\":%d,\"writers\":%d,\"partitions\":%d,\"drain_s\":%.3f,\"drain_steady_s\":%.3f,\"drain_rate\":%.0f,\"drain_rate_steady\":%.0f,\"consumer_cpu_s\":%.2f,\"copy_s\":%.3f,\"copy_rate\":%.0f,\"ratio_steady\":%.3f}\n",
        n, batch, writers, parts, total, steady, rate_total, rate_steady, cpu_s, copy, rate_copy, rate_steady / rate_copy
}'
