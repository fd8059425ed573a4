#!/usr/bin/env bash
# bench-consumer.sh: seckill-consumer drain rate against a raw COPY of the same rows.
#
# Loads N orders (default 1,000,000) into a private seckill-devkafka, then times
# seckill-consumer draining them into a fresh database; then times a raw COPY of the
# very same rows into an exact empty copy of seckill_order (same indexes, check and
# foreign key: the issue's reference) and into one without the foreign key (for
# information), in the same run. Prints a table and one JSON line.
# Needs .run/env sourced (the stack of `deploy/local.sh up`: its Redis for the order index;
# its PostgreSQL only with PG=stack, below); uses
# $SECKILL_BIN_DIR (a Release build for meaningful figures; override with BIN=...).
# The drain runs once per mode of ORDER_EVENTS (default "on off"): on, the order
# transitions emitted into the WAL and published by the consumer to
# seckill.order-events (issue 36), with the publisher's lag at the end (the time from
# the last order written until the slot confirmed everything before it); off, the
# triggers disabled and no publisher (the drain without order events). The ratio of
# the two is the cost of publishing.
# Knobs: N, EVENTS, PARTITIONS, BATCH_MAX (batch.max), WRITERS (db.writers), PORT, LOAD_BATCH,
# COPY_REF=0 (time the drain only, for A/B runs of consumer changes), KAFKA=dev (the
# private seckill-devkafka) or KAFKA=real (a private single-node Apache Kafka, KRaft,
# started by deploy/kafka/kafka.sh; bench/bench-kafka.sh runs both), WARMUP (KAFKA=real:
# orders of the untimed drain that warms the broker first, default N; 0: none).
# SECKILL_* in the environment reach the consumer (e.g. SECKILL_KAFKA_MAX_PARTITION_FETCH_BYTES).
set -euo pipefail

N=${N:-1000000}
EVENTS=${EVENTS:-256}
# librdkafka's mock cluster keeps about 5 MB per partition and drops older batches
# beyond that, so a million ~120-byte orders need many partitions.
PARTITIONS=${PARTITIONS:-64}
BATCH_MAX=${BATCH_MAX:-2000} # the consumer's default (batch.max)
WRITERS=${WRITERS:-2}
# Orders per second of ids (consumer-load --per-second: ids numbered as libidgen numbers
# them, so each of the order index's hashes, one per second of ids, holds a second of a
# sale, about one front's accept ceiling here); 0: densely, a million in one hash.
PER_SECOND=${PER_SECOND:-50000}
# Orders per partition in one produce request (consumer-load --batch): the record batches
# a front writes at a sale's peak are tens of orders; 10,000 gave 1 MB batches, whole
# runs of one writer's partitions in the consumer's queue (consumer_load.c).
LOAD_BATCH=${LOAD_BATCH:-100}
COPY_REF=${COPY_REF:-1}
ORDER_EVENTS=${ORDER_EVENTS:-on off}
for mode in $ORDER_EVENTS; do
    case $mode in on | off) ;; *) echo "bench-consumer: ORDER_EVENTS holds on and/or off" >&2; exit 2 ;; esac
done
KAFKA=${KAFKA:-dev}
case $KAFKA in dev | real) ;; *) echo "bench-consumer: KAFKA is dev or real" >&2; exit 2 ;; esac
KAFKA_SH=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/deploy/kafka/kafka.sh
# shellcheck source=deploy/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib.sh"
# The consumer's /metrics during the run.
PORT=${PORT:-$(sk_free_port)}
BIN=${BIN:-${SECKILL_BIN_DIR:?source .run/env first}}
# PG=private (default): a PostgreSQL of the bench's own, the stack's settings
# (SK_PG_TUNING), on a free port, for this run only. Why not the stack's: a logical slot's
# walsender decodes every database's WAL of its cluster, so the stack's own consumer's
# events reader decoded this run's writes as well, about 1.4 s of a core per 500,000
# orders taken from the drain (measured 2026-11-27: steady drain 60,746 against 68,833/s
# with it stopped). PG=stack: the stack's PostgreSQL (SECKILL_PG, SECKILL_PG_ADMIN).
PG=${PG:-private}
case $PG in private | stack) ;; *) echo "bench-consumer: PG is private or stack" >&2; exit 2 ;; esac
if [ "$PG" = stack ]; then
    : "${SECKILL_PG:?source .run/env first}" "${SECKILL_PG_ADMIN:?source .run/env first}"
fi
DB=sk_bench_consumer
for b in seckill-consumer seckill-devkafka consumer-load; do
    [ -x "$BIN/$b" ] || { echo "bench-consumer: $BIN/$b is not built" >&2; exit 1; }
done

work=$(mktemp -d /tmp/sk-bench-consumer.XXXXXX)
kpid="" cpid="" pgdir=""
# The private Kafka (at the end, and before the COPY reference: see there).
stop_kafka() {
    if [ "$KAFKA" = real ]; then
        "$KAFKA_SH" stop "$work/kafka" 2>/dev/null || true
    else
        [ -n "$kpid" ] && kill "$kpid" 2>/dev/null && wait "$kpid" 2>/dev/null || true
    fi
    kpid=""
}
cleanup() {
    [ -n "$cpid" ] && kill "$cpid" 2>/dev/null && wait "$cpid" 2>/dev/null || true
    if [ -n "$pgdir" ]; then
        sk_as_pg "$(sk_pg_bin)/pg_ctl" -D "$pgdir/data" -m immediate -w stop >/dev/null 2>&1 || true
        rm -rf "$pgdir"
    fi
    stop_kafka
    # A private PostgreSQL went whole above; the stack's keeps no bench database.
    [ "$PG" = stack ] && { drop_db || true; }
    rm -rf "$work"
}
trap cleanup EXIT

# A slot being streamed blocks DROP DATABASE, even WITH (FORCE): its walsender goes first.
drop_db() {
    psql "$SECKILL_PG_ADMIN" -qAtX -c "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots
        WHERE database = '$DB' AND active_pid IS NOT NULL" >/dev/null 2>&1 || true
    for _ in $(seq 50); do
        psql "$SECKILL_PG_ADMIN" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "bench-consumer: cannot drop $DB" >&2
    return 1
}
now() { date +%s.%N; }
pg() { psql "$SECKILL_PG dbname=$DB" -qAtX "$@"; }

# The Apache Kafka broker is a JVM started for this run: in its first minutes it compiles
# its hot paths, and the drain paid for it (its C2 compiler thread took 1.9 s of CPU in
# 8 s of a drain with the events on, from /proc's per-thread times; docs/benchmarks.md
# round 14), which a broker that has been serving for a while does not. So an untimed
# drain of WARMUP orders through the same paths (the fetch, the events' produce, the
# group's commits) goes first, on topics of its own. As many as the timed drain: after
# 300,000 the compiler still took 1.5 s of 8, after 1,000,000 0.2 to 0.6 s of each 5.
WARMUP=${WARMUP:-$N}
[ "$KAFKA" = real ] || WARMUP=0
if [ "$KAFKA" = real ]; then
    # Two free ports (client, controller).
    kport=$(sk_free_ports 2) || { echo "bench-consumer: no free port for Kafka" >&2; exit 1; }
    "$KAFKA_SH" start "$work/kafka" "$kport" 1 2>"$work/kafka.log" || { cat "$work/kafka.log" >&2; exit 1; }
    "$KAFKA_SH" topic "$work/kafka" seckill.orders "$PARTITIONS"
    "$KAFKA_SH" topic "$work/kafka" seckill.orders.dlq 6
    # The events topic too: the broker creates none by itself (auto.create.topics.enable
    # false), and without it the publisher never got an acknowledgement (0 published).
    "$KAFKA_SH" topic "$work/kafka" seckill.order-events 6
    if [ "$WARMUP" -gt 0 ]; then
        "$KAFKA_SH" topic "$work/kafka" seckill.orders.warmup "$PARTITIONS"
        "$KAFKA_SH" topic "$work/kafka" seckill.order-events.warmup 6
    fi
    brokers=$(cat "$work/kafka/bootstrap")
    kpid=$(cat "$work/kafka/node-1.pid")
else
    "$BIN/seckill-devkafka" --partitions "$PARTITIONS" --bootstrap-file "$work/bootstrap" \
        >/dev/null 2>"$work/devkafka.log" &
    kpid=$!
    sk_wait 10 test -s "$work/bootstrap" || { echo "bench-consumer: seckill-devkafka did not start" >&2; exit 1; }
    brokers=$(cat "$work/bootstrap")
fi

if [ "$PG" = private ]; then
    pgbin=$(sk_pg_bin) || { echo "bench-consumer: no PostgreSQL server (deploy/local.sh deps)" >&2; exit 1; }
    pgport=$(sk_free_port) || { echo "bench-consumer: no free port for PostgreSQL" >&2; exit 1; }
    pgdir=$(mktemp -d /tmp/sk-bench-pg.XXXXXX)
    [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$pgdir"
    sk_as_pg "$pgbin/initdb" -D "$pgdir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
    sk_as_pg "$pgbin/pg_ctl" -D "$pgdir/data" -l "$pgdir/postgres.log" -w -t 60 \
        -o "-p $pgport -k $pgdir -c listen_addresses=127.0.0.1 $SK_PG_TUNING" start >/dev/null ||
        { cat "$pgdir/postgres.log" >&2; exit 1; }
    SECKILL_PG_ADMIN="host=127.0.0.1 port=$pgport dbname=postgres user=postgres"
    SECKILL_PG="host=127.0.0.1 port=$pgport user=seckill"
    psql "$SECKILL_PG_ADMIN" -qc "CREATE ROLE seckill LOGIN REPLICATION" >/dev/null
fi
drop_db
psql "$SECKILL_PG_ADMIN" -qc "CREATE DATABASE $DB OWNER seckill" >/dev/null
SECKILL_PG="$SECKILL_PG dbname=$DB" SECKILL_EVENTS_TOPIC= "$BIN/seckill-consumer" migrate 2>/dev/null
stock=$(( N / EVENTS + 1 ))
pg -c "INSERT INTO seckill_event (id, name, stock_total, stock_left, starts_at, ends_at)
       SELECT 7000000000 + g, 'bench', $stock, $stock, now(), now() + interval '1 day'
       FROM generate_series(0, $EVENTS - 1) g"

echo "bench-consumer: loading $N orders ($EVENTS events, $PARTITIONS partitions, Kafka: $KAFKA)" >&2
"$BIN/consumer-load" --brokers "$brokers" --count "$N" --events "$EVENTS" --per-second "$PER_SECOND" \
    --batch "$LOAD_BATCH" \
    --copy-file "$work/orders.tsv" >&2

# Each timed part starts after a CHECKPOINT, so a checkpoint's flush does not land in
# one part only; the checkpoints and autovacuums seen during each part are printed.
checkpoint() { psql "$SECKILL_PG_ADMIN dbname=$DB" -qAtX -c "CHECKPOINT"; }
ckpts() { pg -c "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter"; }
rollbacks() { pg -c "SELECT xact_rollback FROM pg_stat_database WHERE datname = current_database()"; }
autovacs() { pg -c "SELECT coalesce(sum(autovacuum_count + autoanalyze_count), 0) FROM pg_stat_user_tables"; }
# orders_created_total from the consumer's /metrics through bash's /dev/tcp: polling
# must not spawn a process (psql, curl) ten times a second on a 2-core machine.
created_total() { # -> "created dead-lettered"
    local line n=0 d=0 v
    exec 3<>"/dev/tcp/127.0.0.1/$PORT" || { echo 0 0; return; }
    printf 'GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n' >&3
    while IFS= read -r line <&3; do
        line=${line%$'\r'}
        [[ $line == "seckill_consumer_orders_created_total "* ]] && n=${line##* }
        if [[ $line == "seckill_consumer_dead_letters_total{"* ]]; then
            v=${line##* }
            d=$((d + ${v%.*}))
        fi
    done
    exec 3<&-
    echo "$n $d"
}
# The machine's CPU ticks so far, "busy total" (all cores; /proc/stat's first line, read
# by bash's own read: no process per sample).
machine_ticks() {
    local _cpu us ni sy id io irq sirq st
    read -r _cpu us ni sy id io irq sirq st _ </proc/stat
    echo "$((us + ni + sy + irq + sirq + st)) $((us + ni + sy + id + io + irq + sirq + st))"
}
# The stack Redis's pid (the order index the consumer writes), when it runs on this
# machine: its CPU is part of the drain's cost. Empty otherwise.
redis_pid() {
    local p
    p=$(redis-cli -u "${SECKILL_REDIS_URL:-redis://127.0.0.1:6379}" info server 2>/dev/null |
        awk -F: '/^process_id:/ { print $2 + 0 }')
    [ -n "$p" ] && [ -r "/proc/$p/stat" ] && echo "$p"
}
rpid=$(redis_pid || true)
# cpu_since PID SECONDS: the CPU seconds PID used since sk_cpu_seconds gave SECONDS.
cpu_since() { awk -v a="$(sk_cpu_seconds "$1")" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }

# The ts= of a consumer log line (UTC, ms) as epoch seconds.
log_time() {
    local ts
    ts=$(grep -m1 "event=$1" "$work/consumer.log" | sed -n 's/^ts=\([^ ]*\)Z.*/\1/p')
    [ -n "$ts" ] && date -u -d "$ts" +%s.%N
}


# Drain: from the consumer's start (group join included) and from the moment its
# partitions are assigned (group join excluded, everything else included). One per
# mode, each into an emptied seckill_order with the stock restored, from the topic's
# start (a group of its own). Its figures go to the variables named <figure>_<mode>.
slot_drop() {
    pg -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
           WHERE database = current_database() AND NOT active" >/dev/null
}
drain() { # mode
    local mode=$1 topic="" t0 t1 t2 t3 lag=0 lsn published=0
    pg -c "TRUNCATE seckill_order" -c "UPDATE seckill_event SET stock_left = stock_total" >/dev/null
    slot_drop
    if [ "$mode" = on ]; then
        topic=seckill.order-events
        pg -c "ALTER TABLE seckill_order ENABLE TRIGGER seckill_order_emit_ins" \
           -c "ALTER TABLE seckill_order ENABLE TRIGGER seckill_order_emit_upd"
        # The slot before the first write, as `seckill-consumer migrate` makes it.
        SECKILL_PG="$SECKILL_PG dbname=$DB" "$BIN/seckill-consumer" migrate 2>/dev/null
    else
        pg -c "ALTER TABLE seckill_order DISABLE TRIGGER seckill_order_emit_ins" \
           -c "ALTER TABLE seckill_order DISABLE TRIGGER seckill_order_emit_upd"
    fi
    psql "$SECKILL_PG_ADMIN dbname=$DB" -qAtX -c "VACUUM ANALYZE" >/dev/null
    checkpoint
    local ck0 av0 rb0 ck1 av1 rb1 cpu_kafka0
    ck0=$(ckpts) av0=$(autovacs) rb0=$(rollbacks)
    cpu_kafka0=$(sk_cpu_seconds "$kpid")
    local cpu_redis0=0 m0="" m1 c0=0
    [ -n "$rpid" ] && cpu_redis0=$(sk_cpu_seconds "$rpid")
    : >"$work/consumer.log"
    t0=$(now)
    SECKILL_PG="$SECKILL_PG dbname=$DB" SECKILL_KAFKA_BROKERS="$brokers" SECKILL_HTTP_PORT="$PORT" \
        SECKILL_GROUP_ID="bench-$mode" SECKILL_BATCH_MAX="$BATCH_MAX" SECKILL_DB_WRITERS="$WRITERS" \
        SECKILL_LOG_LEVEL=info SECKILL_EVENTS_TOPIC="$topic" SECKILL_MIGRATE=false \
        "$BIN/seckill-consumer" 2>"$work/consumer.log" &
    cpid=$!
    # A poll costs about 10 ms of CPU (bash reads the socket a byte at a time): every
    # 50 ms that was 17% of a core taken from the drain it measures. So the pause between
    # polls is a quarter of the time left at the rate seen so far, between 20 and 500 ms:
    # a few polls a second in the bulk, the end still seen within 20-50 ms.
    # Shell arithmetic on $EPOCHREALTIME in microseconds (its digits: the separator follows
    # the locale): no process per poll but the read.
    local pause_ms=100 t_us c prev_c=0 prev_us=${EPOCHREALTIME//[!0-9]/}
    while :; do
        read -r created dead < <(created_total 2>/dev/null || echo 0 0)
        [ "${created:-0}" -ge "$N" ] && break
        t_us=${EPOCHREALTIME//[!0-9]/} c=${created:-0}
        # The machine's ticks from the first order written (the group join left out).
        if [ -z "$m0" ] && ((c > 0)); then m0=$(machine_ticks) c0=$c; fi
        pause_ms=100
        if ((c > prev_c && t_us > prev_us)); then # ms left at the rate seen, / 4
            pause_ms=$(( (N - c) * (t_us - prev_us) / (c - prev_c) / 4000 ))
        fi
        ((pause_ms < 20)) && pause_ms=20
        ((pause_ms > 500)) && pause_ms=500
        prev_c=$c prev_us=$t_us
        # A dead letter means the run is wrong (e.g. unsigned messages for a consumer
        # with order.msg_keys): say so rather than wait for a count never reached.
        [ "${dead:-0}" -eq 0 ] || { echo "bench-consumer: $dead dead letters: $(grep -m1 -o 'error=[a-z_]*' "$work/consumer.log")" >&2; exit 1; }
        kill -0 "$cpid" 2>/dev/null || { echo "bench-consumer: consumer died" >&2; cat "$work/consumer.log" >&2; exit 1; }
        sleep "$(printf '0.%03d' "$pause_ms")"
    done
    t2=$(now)
    m1=$(machine_ticks)
    ck1=$(ckpts) av1=$(autovacs) rb1=$(rollbacks)
    if [ "$mode" = on ]; then
        # The publisher's lag: until the slot confirmed the WAL written by the drain's end.
        lsn=$(pg -c "SELECT pg_current_wal_lsn()")
        for _ in $(seq 1200); do
            [ "$(pg -c "SELECT coalesce(bool_and(confirmed_flush_lsn >= '$lsn'), false)
                        FROM pg_replication_slots WHERE database = current_database()")" = t ] && break
            sleep 0.05
        done
        t3=$(now)
        lag=$(awk -v a="$t2" -v b="$t3" 'BEGIN { printf "%.2f", b - a }')
    fi
    t1=$(log_time partitions_assigned)
    [ -n "$t1" ] || { echo "bench-consumer: no partitions_assigned in the consumer log" >&2; exit 1; }
    metrics=$(curl -fsS "http://127.0.0.1:$PORT/metrics" || true)
    m() { awk -v k="$1" '$1 == k { print $2 }' <<<"$metrics"; }
    published=$(m seckill_consumer_events_published_total)
    # CPU time (user + system) of the consumer, of its PostgreSQL backends (the writers'
    # connections and the slot's walsender, in this database only: the stack's own
    # consumer beside the bench is not counted) and of the dev Kafka during the drain.
    # The walsender's share alone too: it decodes every row change of the database's
    # WAL to find the transitions' messages (pgoutput then drops the rows).
    local cpu_pg=0 cpu_ws=0 b ws
    ws=$(pg -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'walsender' AND datname = current_database()")
    for b in $(pg -c "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'seckill-consumer/%' AND datname = current_database()"); do
        cpu_pg=$(awk -v a="$cpu_pg" -v b="$(sk_cpu_seconds "$b")" 'BEGIN { printf "%.2f", a + b }')
    done
    for b in $ws; do
        cpu_ws=$(awk -v a="$cpu_ws" -v b="$(sk_cpu_seconds "$b")" 'BEGIN { printf "%.2f", a + b }')
    done
    printf -v "cpu_ws_$mode" '%s' "$cpu_ws"
    printf -v "total_$mode" '%s' "$(awk -v a="$t0" -v b="$t2" 'BEGIN { printf "%.3f", b - a }')"
    printf -v "steady_$mode" '%s' "$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.3f", b - a }')"
    printf -v "cpu_c_$mode" '%s' "$(sk_cpu_seconds "$cpid")"
    printf -v "cpu_pg_$mode" '%s' "$cpu_pg"
    printf -v "cpu_k_$mode" '%s' "$(cpu_since "$kpid" "$cpu_kafka0")"
    local cpu_r=0
    [ -n "$rpid" ] && cpu_r=$(cpu_since "$rpid" "$cpu_redis0")
    printf -v "cpu_r_$mode" '%s' "$cpu_r"
    # The whole machine from the first order written to the last: its cores' busy share
    # and its CPU per order, every process counted (what the drain has to fit in).
    local mb0 mt0 mb1 mt1
    [ -n "$m0" ] || m0=$m1 c0=$N
    read -r mb0 mt0 <<<"$m0"
    read -r mb1 mt1 <<<"$m1"
    printf -v "mbusy_$mode" '%s' "$(awk -v b=$((mb1 - mb0)) -v t=$((mt1 - mt0)) 'BEGIN { printf "%.2f", (t > 0 ? b / t : 0) }')"
    printf -v "mcpu_$mode" '%s' "$(awk -v b=$((mb1 - mb0)) -v hz="$(getconf CLK_TCK)" -v n=$((N - c0)) 'BEGIN { printf "%.2f", (n > 0 ? 1e6 * b / hz / n : 0) }')"
    printf -v "txs_$mode" '%s' "$(m seckill_consumer_transaction_seconds_sum)"
    printf -v "txn_$mode" '%s' "$(m seckill_consumer_transaction_seconds_count)"
    printf -v "rb_$mode" '%s' $((rb1 - rb0))
    printf -v "ck_$mode" '%s' $((ck1 - ck0))
    printf -v "av_$mode" '%s' $((av1 - av0))
    printf -v "lag_$mode" '%s' "$lag"
    printf -v "pub_$mode" '%s' "${published:-0}"
    kill -TERM "$cpid"; wait "$cpid" || true; cpid=""
    local rows
    rows=$(pg -c "SELECT count(*) FROM seckill_order")
    [ "$rows" -eq "$N" ] || { echo "bench-consumer: $rows rows, expected $N" >&2; exit 1; }
    slot_drop
}
# The broker's warm-up (WARMUP above): WARMUP orders of ids of their own drained with the
# events on into the same database, then emptied; nothing of it is timed.
warm_broker() {
    echo "bench-consumer: warming the broker up: $WARMUP orders, events on (untimed)" >&2
    "$BIN/consumer-load" --brokers "$brokers" --topic seckill.orders.warmup --count "$WARMUP" \
        --events "$EVENTS" --order-base 8000000000000 --per-second "$PER_SECOND" \
        --batch "$LOAD_BATCH" >/dev/null
    pg -c "TRUNCATE seckill_order" >/dev/null
    slot_drop
    SECKILL_PG="$SECKILL_PG dbname=$DB" "$BIN/seckill-consumer" migrate 2>/dev/null
    SECKILL_PG="$SECKILL_PG dbname=$DB" SECKILL_KAFKA_BROKERS="$brokers" SECKILL_HTTP_PORT="$PORT" \
        SECKILL_GROUP_ID=bench-warmup SECKILL_TOPIC=seckill.orders.warmup \
        SECKILL_EVENTS_TOPIC=seckill.order-events.warmup \
        SECKILL_MIGRATE=false "$BIN/seckill-consumer" 2>"$work/warmup.log" &
    cpid=$!
    local created dead
    for _ in $(seq 1200); do # at most 2 minutes
        read -r created dead < <(created_total 2>/dev/null || echo 0 0)
        [ "${created:-0}" -ge "$WARMUP" ] && break
        kill -0 "$cpid" 2>/dev/null || { echo "bench-consumer: the warm-up's consumer died" >&2; cat "$work/warmup.log" >&2; exit 1; }
        sleep 0.1
    done
    [ "${created:-0}" -ge "$WARMUP" ] || { echo "bench-consumer: the warm-up did not drain" >&2; exit 1; }
    kill -TERM "$cpid"; wait "$cpid" || true; cpid=""
    slot_drop
}
[ "$WARMUP" -gt 0 ] && warm_broker
for mode in $ORDER_EVENTS; do
    echo "bench-consumer: drain with order events $mode" >&2
    drain "$mode"
done

# Kafka is done with: the COPY below needs none, and an idle JVM broker still compiles
# and collects in the background, CPU the reference would not get.
stop_kafka

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
# consumer-load writes the message's columns; the drain also writes pay_by (the payment
# window, deploy/sql/002), so the reference does too: the file's column list, pay_by
# appended (the table has more columns since 001: a COPY without a list fails).
COPY_COLS="order_id, event_id, user_id, status, created_at, kafka_partition, kafka_offset, pay_by"
awk -v p="$(date -u -d '+15 min' '+%Y-%m-%d %H:%M:%S+00')" '{ print $0 "\t" p }' \
    "$work/orders.tsv" >"$work/orders_copy.tsv"
timed_copy() { # table [PGOPTIONS] -> seconds
    checkpoint
    local a b
    a=$(now)
    PGOPTIONS=${2:-} pg -c "\\copy $1 ($COPY_COLS) FROM '$work/orders_copy.tsv'"
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

# One line per mode, then the reference and the ratios.
report() { # mode
    local m=$1 v
    for v in total steady cpu_c cpu_pg cpu_ws cpu_k cpu_r mbusy mcpu txs txn rb ck av lag pub; do
        eval "r_$v=\${${v}_$m:-0}"
    done
    awk -v mode="$m" -v n="$N" -v total="$r_total" -v steady="$r_steady" -v cfk="$copy_fk" -v cnofk="$copy_nofk" \
        -v cpu_c="$r_cpu_c" -v cpu_pg="$r_cpu_pg" -v cpu_ws="$r_cpu_ws" -v cpu_k="$r_cpu_k" -v cpu_r="$r_cpu_r" -v mbusy="$r_mbusy" -v mcpu="$r_mcpu" -v redis="${rpid:+1}" -v cores="$(getconf _NPROCESSORS_ONLN)" -v txs="${r_txs:-0}" -v txn="${r_txn:-0}" \
        -v rb="$r_rb" -v ck="$r_ck" -v av="$r_av" -v lag="$r_lag" -v pub="${r_pub:-0}" -v writers="$WRITERS" \
        -v kafka="$KAFKA" -v batch="$BATCH_MAX" -v parts="$PARTITIONS" -v load="$load" 'BEGIN {
        rt = n / total; rs = n / steady; rfk = cfk > 0 ? n / cfk : 0; rnofk = cnofk > 0 ? n / cnofk : 0
        printf "%-42s %10.2f %10.0f\n", "drain, events " mode " (incl. group join)", total, rt
        printf "%-42s %10.2f %10.0f\n", "drain, events " mode " (from assignment)", steady, rs
        if (rfk > 0)
            printf "%-42s %10s %9.0f%%\n", "  / COPY with FK (the target: 80%)", "", 100 * rs / rfk
        if (mode == "on")
            printf "  published %d transitions; publisher lag at the end %.2f s\n", pub, lag
        if (txn > 0)
            printf "  batches %d, mean transaction %.1f ms, writers busy %.0f%%\n", txn, 1000 * txs / txn,
                100 * txs / (writers * steady)
        printf "  CPU per order: consumer %.1f us, its PostgreSQL backends %.1f us (the slot'"'"'s walsender %.1f), Kafka (%s) %.1f us\n",
            1e6 * cpu_c / n, 1e6 * cpu_pg / n, 1e6 * cpu_ws / n, kafka, 1e6 * cpu_k / n
        if (redis)
            printf "  Redis (the order index) %.1f us per order\n", 1e6 * cpu_r / n
        printf "  the machine from the first order written: %.0f%% of its cores busy, %.1f us of CPU per order (every process)\n",
            100 * mbusy, mcpu
        # The budget: at 80% of the COPY rate, this many us of all the cores per order.
        if (rfk > 0)
            printf "  at 80%% of COPY the %d cores give %.1f us per order, %.1f at this run'"'"'s busy share\n",
                cores, 1e6 * cores / (0.8 * rfk), 1e6 * cores * mbusy / (0.8 * rfk)
        printf "  checkpoints %d, autovacuums %d, rollbacks %d during the drain\n", ck, av, rb
        printf "{\"bench\":\"consumer\",\"kafka\":\"%s\",\"events\":\"%s\",\"orders\":%d,\"batch_max\":%d,\"writers\":%d,\"partitions\":%d,\"drain_s\":%.3f,\"drain_steady_s\":%.3f,\"drain_rate\":%.0f,\"drain_rate_steady\":%.0f,\"consumer_cpu_s\":%.2f,\"pg_cpu_s\":%.2f,\"walsender_cpu_s\":%.2f,\"kafka_cpu_s\":%.2f,\"redis_cpu_s\":%.2f,\"machine_busy\":%.2f,\"machine_cpu_us\":%.2f,\"rollbacks\":%d,\"autovacuums\":%d,\"published\":%d,\"publisher_lag_s\":%.2f,\"copy_fk_rate\":%.0f,\"copy_nofk_rate\":%.0f,\"ratio_fk\":%.3f,\"ratio_nofk\":%.3f,\"loadavg\":\"%s\"}\n",
            kafka, mode, n, batch, writers, parts, total, steady, rt, rs, cpu_c, cpu_pg, cpu_ws, cpu_k, cpu_r, mbusy, mcpu, rb, av, pub, lag, rfk, rnofk,
            rfk ? rs / rfk : 0, rnofk ? rs / rnofk : 0, load
    }'
}
printf "%-42s %10s %10s\n" "measure" "seconds" "orders/s"
if [ "$copy_fk" != 0 ]; then
    awk -v n="$N" -v cfk="$copy_fk" -v cfks="$copy_fk_seq" -v cfki="$copy_fk_idx" -v cnofk="$copy_nofk" \
        -v ckc=$((ck3 - ck2 - 2)) -v avc=$((av3 - av2)) 'BEGIN {
        printf "%-42s %10.2f %10.0f\n", "raw COPY, exact copy (with FK)", cfk, n / cfk
        printf "  (FK check by sequential scan %.2f s, by the primary key %.2f s: the faster counts)\n", cfks, cfki
        printf "%-42s %10.2f %10.0f\n", "raw COPY, without the FK", cnofk, n / cnofk
        printf "  checkpoints %d, autovacuums %d during the COPYs\n", ckc, avc
    }'
fi
for mode in $ORDER_EVENTS; do report "$mode"; done
if [[ " $ORDER_EVENTS " == *" on "* && " $ORDER_EVENTS " == *" off "* ]]; then
    awk -v on="$steady_on" -v off="$steady_off" -v pon="$cpu_pg_on" -v poff="$cpu_pg_off" -v n="$N" 'BEGIN {
        printf "the cost of publishing: steady drain with events on / off = %.2f; backends +%.1f us per order\n",
            off / on, 1e6 * (pon - poff) / n }'
fi
echo "load average $load"
