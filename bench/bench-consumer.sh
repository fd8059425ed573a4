#!/usr/bin/env bash
# bench-consumer.sh: seckill-consumer drain rate against a raw COPY of the same rows.
#
# Loads N orders (default 1,000,000) into a private seckill-devkafka, then times
# seckill-consumer draining them into a fresh database; then times a raw COPY of the
# very same rows into an exact empty copy of seckill_order (same indexes, check and
# foreign key: the issue's reference) and into one without the foreign key (for
# information), in the same run. Prints a table and one JSON line.
# Needs the stack of `deploy/local.sh up` (PostgreSQL) and .run/env sourced; uses
# $SECKILL_BIN_DIR (a Release build for meaningful figures; override with BIN=...).
# Knobs: N, EVENTS, PARTITIONS, BATCH_MAX (batch.max), WRITERS (db.writers), PORT,
# COPY_REF=0 (time the drain only, for A/B runs of consumer changes), KAFKA=dev (the
# private seckill-devkafka) or KAFKA=real (a private single-node Apache Kafka, KRaft,
# started by deploy/kafka/kafka.sh; bench/bench-kafka.sh runs both). SECKILL_* in the
# environment reach the consumer (e.g. SECKILL_KAFKA_MAX_PARTITION_FETCH_BYTES).
set -euo pipefail

N=${N:-1000000}
EVENTS=${EVENTS:-256}
# librdkafka's mock cluster keeps about 5 MB per partition and drops older batches
# beyond that, so a million ~120-byte orders need many partitions.
PARTITIONS=${PARTITIONS:-64}
BATCH_MAX=${BATCH_MAX:-1000}
WRITERS=${WRITERS:-2}
COPY_REF=${COPY_REF:-1}
KAFKA=${KAFKA:-dev}
case $KAFKA in dev | real) ;; *) echo "bench-consumer: KAFKA is dev or real" >&2; exit 2 ;; esac
KAFKA_SH=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/deploy/kafka/kafka.sh
# shellcheck source=deploy/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib.sh"
# The consumer's /metrics during the run.
PORT=${PORT:-$(sk_free_port)}
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
    if [ "$KAFKA" = real ]; then
        "$KAFKA_SH" stop "$work/kafka" 2>/dev/null || true
    else
        [ -n "$kpid" ] && kill "$kpid" 2>/dev/null && wait "$kpid" 2>/dev/null || true
    fi
    psql "$SECKILL_PG_ADMIN" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

now() { date +%s.%N; }
pg() { psql "$SECKILL_PG dbname=$DB" -qAtX "$@"; }

if [ "$KAFKA" = real ]; then
    # Two free ports (client, controller).
    kport=$(sk_free_ports 2) || { echo "bench-consumer: no free port for Kafka" >&2; exit 1; }
    "$KAFKA_SH" start "$work/kafka" "$kport" 1 2>"$work/kafka.log" || { cat "$work/kafka.log" >&2; exit 1; }
    "$KAFKA_SH" topic "$work/kafka" seckill.orders "$PARTITIONS"
    "$KAFKA_SH" topic "$work/kafka" seckill.orders.dlq 6
    brokers=$(cat "$work/kafka/bootstrap")
    kpid=$(cat "$work/kafka/node-1.pid")
else
    "$BIN/seckill-devkafka" --partitions "$PARTITIONS" --bootstrap-file "$work/bootstrap" \
        >/dev/null 2>"$work/devkafka.log" &
    kpid=$!
    sk_wait 10 test -s "$work/bootstrap" || { echo "bench-consumer: seckill-devkafka did not start" >&2; exit 1; }
    brokers=$(cat "$work/bootstrap")
fi

psql "$SECKILL_PG_ADMIN" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null
psql "$SECKILL_PG_ADMIN" -qc "CREATE DATABASE $DB OWNER seckill" >/dev/null
SECKILL_PG="$SECKILL_PG dbname=$DB" "$BIN/seckill-consumer" migrate 2>/dev/null
stock=$(( N / EVENTS + 1 ))
pg -c "INSERT INTO seckill_event (id, name, stock_total, stock_left, starts_at, ends_at)
       SELECT 7000000000 + g, 'bench', $stock, $stock, now(), now() + interval '1 day'
       FROM generate_series(0, $EVENTS - 1) g"

echo "bench-consumer: loading $N orders ($EVENTS events, $PARTITIONS partitions, Kafka: $KAFKA)" >&2
"$BIN/consumer-load" --brokers "$brokers" --count "$N" --events "$EVENTS" \
    --copy-file "$work/orders.tsv" >&2

# Each timed part starts after a CHECKPOINT, so a checkpoint's flush does not land in
# one part only; the checkpoints and autovacuums seen during each part are printed.
checkpoint() { psql "$SECKILL_PG_ADMIN dbname=$DB" -qAtX -c "CHECKPOINT"; }
ckpts() { pg -c "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter"; }
rollbacks() { pg -c "SELECT xact_rollback FROM pg_stat_database WHERE datname = current_database()"; }
autovacs() { pg -c "SELECT coalesce(sum(autovacuum_count + autoanalyze_count), 0) FROM pg_stat_user_tables"; }
# orders_created_total from the consumer's /metrics through bash's /dev/tcp: polling
# must not spawn a process (psql, curl) ten times a second on a 2-core machine.
created_total() {
    local line n=0
    exec 3<>"/dev/tcp/127.0.0.1/$PORT" || { echo 0; return; }
    printf 'GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n' >&3
    while IFS= read -r line <&3; do
        [[ $line == "seckill_consumer_orders_created_total "* ]] && n=${line##* }
    done
    exec 3<&-
    echo "${n%$'\r'}"
}
# The ts= of a consumer log line (UTC, ms) as epoch seconds.
log_time() {
    local ts
    ts=$(grep -m1 "event=$1" "$work/consumer.log" | sed -n 's/^ts=\([^ ]*\)Z.*/\1/p')
    [ -n "$ts" ] && date -u -d "$ts" +%s.%N
}


# Drain: from the consumer's start (group join included) and from the moment its
# partitions are assigned (group join excluded, everything else included).
checkpoint
ck0=$(ckpts) av0=$(autovacs) rb0=$(rollbacks)
cpu_kafka0=$(sk_cpu_seconds "$kpid")
t0=$(now)
SECKILL_PG="$SECKILL_PG dbname=$DB" SECKILL_KAFKA_BROKERS="$brokers" SECKILL_HTTP_PORT="$PORT" \
    SECKILL_GROUP_ID=bench SECKILL_BATCH_MAX="$BATCH_MAX" SECKILL_DB_WRITERS="$WRITERS" SECKILL_LOG_LEVEL=info \
    "$BIN/seckill-consumer" 2>"$work/consumer.log" &
cpid=$!
while :; do
    created=$(created_total 2>/dev/null || echo 0)
    [ "${created:-0}" -ge "$N" ] && break
    kill -0 "$cpid" 2>/dev/null || { echo "bench-consumer: consumer died" >&2; cat "$work/consumer.log" >&2; exit 1; }
    sleep 0.05
done
t2=$(now)
ck1=$(ckpts) av1=$(autovacs) rb1=$(rollbacks)
t1=$(log_time partitions_assigned)
[ -n "$t1" ] || { echo "bench-consumer: no partitions_assigned in the consumer log" >&2; exit 1; }
metrics=$(curl -fsS "http://127.0.0.1:$PORT/metrics" || true)
m() { awk -v k="$1" '$1 == k { print $2 }' <<<"$metrics"; }
tx_sum=$(m seckill_consumer_transaction_seconds_sum); tx_n=$(m seckill_consumer_transaction_seconds_count)
bs_sum=$(m seckill_consumer_batch_size_sum); bs_n=$(m seckill_consumer_batch_size_count)
# CPU time (user + system) of the consumer, of its PostgreSQL backends (the writers'
# connections) and of the dev Kafka during the drain: what an order costs, whoever pays.
cpu_consumer=$(sk_cpu_seconds "$cpid")
cpu_pg=0
for b in $(pg -c "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'seckill-consumer/%'"); do
    cpu_pg=$(awk -v a="$cpu_pg" -v b="$(sk_cpu_seconds "$b")" 'BEGIN { printf "%.2f", a + b }')
done
cpu_kafka=$(awk -v a="$(sk_cpu_seconds "$kpid")" -v b="$cpu_kafka0" 'BEGIN { printf "%.2f", a - b }')
kill -TERM "$cpid"; wait "$cpid" || true; cpid=""
rows=$(pg -c "SELECT count(*) FROM seckill_order")
[ "$rows" -eq "$N" ] || { echo "bench-consumer: $rows rows, expected $N" >&2; exit 1; }

# Raw COPY of the same rows into empty copies of seckill_order: first an exact copy
# (same columns, defaults, check, indexes and the foreign key to the populated
# seckill_event: the issue's reference), then one without the foreign key (LIKE ...
# INCLUDING ALL copies none), for information. The drain's dead tuples are vacuumed
# first, so an autovacuum of them does not land in the COPY.
if [ "$COPY_REF" = 1 ]; then
psql "$SECKILL_PG_ADMIN dbname=$DB" -qAtX -c "VACUUM ANALYZE"
pg -c "CREATE TABLE bench_copy_fk (LIKE seckill_order INCLUDING ALL,
                                  FOREIGN KEY (event_id) REFERENCES seckill_event (id))"
pg -c "CREATE TABLE bench_copy_nofk (LIKE seckill_order INCLUDING ALL)"
timed_copy() { # table [PGOPTIONS] -> seconds
    checkpoint
    local a b
    a=$(now)
    PGOPTIONS=${2:-} pg -c "\\copy $1 FROM '$work/orders.tsv'"
    b=$(now)
    [ "$(pg -c "SELECT count(*) FROM $1")" -eq "$N" ] || { echo "bench-consumer: $1 short" >&2; exit 1; }
    pg -c "TRUNCATE $1"
    awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b - a }'
}
ck2=$(ckpts) av2=$(autovacs)
# The foreign-key check is a query on seckill_event, planned by its size: on the
# vacuumed 256-row table PostgreSQL picks a sequential scan (every check reads every
# event), while the drain's checks go through the primary key. The reference gets
# the better of the two plans (enable_seqscan=off forces the index).
copy_fk_seq=$(timed_copy bench_copy_fk)
copy_fk_idx=$(timed_copy bench_copy_fk "-c enable_seqscan=off")
copy_fk=$(awk -v a="$copy_fk_seq" -v b="$copy_fk_idx" 'BEGIN { print (a < b ? a : b) }')
copy_nofk=$(timed_copy bench_copy_nofk)
ck3=$(ckpts) av3=$(autovacs)
ck3=$((ck3 - 1)) # the third CHECKPOINT
else
    copy_fk=0 copy_fk_seq=0 copy_fk_idx=0 copy_nofk=0 ck2=0 ck3=2 av2=0 av3=0
fi
load=$(cut -d' ' -f1-3 /proc/loadavg)

awk -v n="$N" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v cfk="$copy_fk" -v cfks="$copy_fk_seq" -v cfki="$copy_fk_idx" -v cnofk="$copy_nofk" \
    -v batch="$BATCH_MAX" -v parts="$PARTITIONS" -v writers="$WRITERS" -v load="$load" -v kafka="$KAFKA" \
    -v rbd=$((rb1 - rb0)) -v ckd=$((ck1 - ck0)) -v avd=$((av1 - av0)) -v ckc=$((ck3 - ck2 - 2)) -v avc=$((av3 - av2)) \
    -v cpu_s="$cpu_consumer" -v cpu_pg="$cpu_pg" -v cpu_k="$cpu_kafka" -v tx_sum="${tx_sum:-0}" -v tx_n="${tx_n:-0}" -v bs_sum="${bs_sum:-0}" -v bs_n="${bs_n:-0}" 'BEGIN {
    total = t2 - t0; steady = t2 - t1
    rate_total = n / total; rate_steady = n / steady; rate_fk = cfk > 0 ? n / cfk : 0; rate_nofk = cnofk > 0 ? n / cnofk : 0
    printf "%-38s %10s %10s\n", "measure", "seconds", "orders/s"
    printf "%-38s %10.2f %10.0f\n", "consumer drain (incl. group join)", total, rate_total
    printf "%-38s %10.2f %10.0f\n", "consumer drain (from assignment)", steady, rate_steady
    if (cfk > 0) {
        printf "%-38s %10.2f %10.0f\n", "raw COPY, exact copy (with FK)", cfk, rate_fk
        printf "  (FK check by sequential scan %.2f s, by the primary key %.2f s: the faster counts)\n", cfks, cfki
        printf "%-38s %10.2f %10.0f\n", "raw COPY, without the FK", cnofk, rate_nofk
        printf "%-38s %10s %9.0f%%\n", "drain / COPY with FK (the target)", "", 100 * rate_steady / rate_fk
        printf "%-38s %10s %9.0f%%\n", "drain / COPY without FK", "", 100 * rate_steady / rate_nofk
    }
    if (tx_n > 0)
        printf "batches %d, mean size %.0f, mean transaction %.1f ms, writers busy %.0f%% (writers %d, batch.max %d)\n",
            tx_n, bs_sum / (bs_n ? bs_n : 1), 1000 * tx_sum / tx_n, 100 * tx_sum / (writers * steady), writers, batch
    printf "CPU per order: consumer %.1f us, its PostgreSQL backends %.1f us, Kafka (%s) %.1f us\n",
        1e6 * cpu_s / n, 1e6 * cpu_pg / n, kafka, 1e6 * cpu_k / n
    printf "other checkpoints / autovacuums: drain %d / %d, COPYs %d / %d; rollbacks in the drain %d; load average %s\n",
        ckd, avd, ckc, avc, rbd, load
    printf "{\"bench\":\"consumer\",\"kafka\":\"%s\",\"orders\":%d,\"batch_max\":%d,\"writers\":%d,\"partitions\":%d,\"drain_s\":%.3f,\"drain_steady_s\":%.3f,\"drain_rate\":%.0f,\"drain_rate_steady\":%.0f,\"consumer_cpu_s\":%.2f,\"pg_cpu_s\":%.2f,\"kafka_cpu_s\":%.2f,\"copy_fk_s\":%.3f,\"copy_fk_seqscan_s\":%.3f,\"copy_fk_index_s\":%.3f,\"copy_fk_rate\":%.0f,\"copy_nofk_s\":%.3f,\"copy_nofk_rate\":%.0f,\"ratio_fk\":%.3f,\"ratio_nofk\":%.3f,\"loadavg\":\"%s\"}\n",
        kafka, n, batch, writers, parts, total, steady, rate_total, rate_steady, cpu_s, cpu_pg, cpu_k, cfk, cfks, cfki, rate_fk, cnofk, rate_nofk,
        rate_fk ? rate_steady / rate_fk : 0, rate_nofk ? rate_steady / rate_nofk : 0, load
}'
