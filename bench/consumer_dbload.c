/* consumer-dbload: the consumer's PostgreSQL write path alone, without Kafka, for
 * measuring changes to consumer_db (bench/bench-consumer.sh times the whole drain).
 *
 * Writes N synthetic orders (the messages consumer-load --per-second 0 produces:
 * order_id = order_base + i, event_id = event_base + i % events, user_id = 1 + i; no
 * Redis here, so the ids' seconds do not matter) through
 * consumer_db_write in batches of B, from W writer threads with one connection each,
 * event e going to writer (e % 64) % W as partition p goes to lane p % W in the
 * consumer. The database must exist (empty); it is migrated and given the events.
 * Prints the rate and the CPU per order of the writers' PostgreSQL backends (read
 * from /proc: run it on the database's host) and of this process (batch building
 * and JSON decoding included, Kafka not). */
#include "consumer_batch.h"
#include "consumer_db.h"
#include "sk_order_msg.h"
#include "sk_pg.h"

#include <getopt.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_WRITERS 16

typedef struct writer {
    int idx;
    const char *pg;
    long long orders, batch, events, writers;
    long long event_base, order_base;
    long long ts_ms;
    long long written;
    double tx_secs;
    int failed;
    pthread_t thread;
} writer;

/* Writers wait at `done` when finished, and keep their connections open until main
 * has read their backends' CPU time (`measured`). */
static pthread_barrier_t done, measured;

static double now_s(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *writer_run(void *arg)
{
    writer *w = arg;
    consumer_db *db = consumer_db_new(w->pg);
    consumer_batch *b = consumer_batch_new();
    if (!db || !b) {
        w->failed = 1;
        goto out;
    }
    for (long long i = 0; i < w->orders;) {
        consumer_batch_clear(b);
        for (; i < w->orders && (long long)consumer_batch_count(b) < w->batch; i++) {
            long long e = i % w->events;
            int32_t part = (int32_t)(e % 64);
            if (part % w->writers != w->idx)
                continue;
            char key[24], val[SK_ORDER_MSG_MAX];
            int kn = snprintf(key, sizeof(key), "%lld", w->event_base + e);
            sk_order_msg m = {.order_id = (uint64_t)(w->order_base + i),
                              .event_id = (uint64_t)(w->event_base + e),
                              .user_id = (uint64_t)(1 + i), .ts_ms = w->ts_ms, .quantity = 1};
            size_t vn = sk_order_msg_encode(&m, val, sizeof(val)); /* the front's encoder */
            if (consumer_batch_add(b, part, i, key, (size_t)kn, val, (size_t)vn) != 0) {
                w->failed = 1;
                goto out;
            }
        }
        if (consumer_batch_count(b) == 0)
            break;
        if (consumer_batch_dedup(b) < 0) {
            w->failed = 1;
            goto out;
        }
        consumer_db_result res;
        double t0 = now_s(CLOCK_MONOTONIC);
        if (consumer_db_write(db, b, &res) != 0) {
            fprintf(stderr, "consumer-dbload: writer %d: %s\n", w->idx, consumer_db_errstr(db));
            w->failed = 1;
            goto out;
        }
        w->tx_secs += now_s(CLOCK_MONOTONIC) - t0;
        w->written += res.created + res.rejected;
    }
out:
    pthread_barrier_wait(&done);
    pthread_barrier_wait(&measured);
    consumer_batch_free(b);
    consumer_db_free(db);
    return NULL;
}

/* CPU seconds (user + system) of a process, from /proc; 0 if unreadable. */
static double proc_cpu(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold blanks */
    unsigned long long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return 0;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* CPU seconds of every backend of seckill-consumer's (application_name "seckill-consumer/..."). */
static double backends_cpu(PGconn *c)
{
    char err[256];
    PGresult *r = NULL;
    double s = 0;
    if (sk_pg_exec(c, "backends",
                   "SELECT pid FROM pg_stat_activity "
                   "WHERE application_name LIKE 'seckill-consumer/%'",
                   0, NULL, PGRES_TUPLES_OK, &r, err, sizeof(err)) == SK_PG_OK)
        for (int i = 0; i < PQntuples(r); i++)
            s += proc_cpu(atol(PQgetvalue(r, i, 0)));
    PQclear(r);
    return s;
}

int main(int argc, char **argv)
{
    const char *pg = getenv("SECKILL_PG");
    long long orders = 200000, batch = 1000, events = 256, writers = 2;
    static const struct option opts[] = {
        {"pg", required_argument, 0, 'p'},      {"orders", required_argument, 0, 'n'},
        {"batch", required_argument, 0, 'b'},   {"events", required_argument, 0, 'e'},
        {"writers", required_argument, 0, 'w'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "p:n:b:e:w:h", opts, NULL)) != -1) {
        switch (o) {
        case 'p': pg = optarg; break;
        case 'n': orders = atoll(optarg); break;
        case 'b': batch = atoll(optarg); break;
        case 'e': events = atoll(optarg); break;
        case 'w': writers = atoll(optarg); break;
        default:
            fprintf(o == 'h' ? stdout : stderr,
                    "usage: consumer-dbload [--pg CONNINFO] [--orders N] [--batch B] [--events E] [--writers W]\n");
            return o == 'h' ? 0 : 2;
        }
    }
    if (!pg || orders <= 0 || batch <= 0 || events <= 0 || writers < 1 || writers > MAX_WRITERS) {
        fprintf(stderr, "consumer-dbload: --pg (or SECKILL_PG), --orders > 0, --batch > 0, --events > 0, 1 <= --writers <= %d\n",
                MAX_WRITERS);
        return 2;
    }
    consumer_db *mig = consumer_db_new(pg);
    if (!mig || consumer_db_migrate(mig) < 0) {
        fprintf(stderr, "consumer-dbload: migrate: %s\n", mig ? consumer_db_errstr(mig) : "out of memory");
        return 1;
    }
    consumer_db_free(mig);
    char err[256];
    PGconn *c = sk_pg_connect(pg, "seckill-bench/dbload", err, sizeof(err));
    if (!c) {
        fprintf(stderr, "consumer-dbload: %s\n", err);
        return 1;
    }
    char sql[512], ev_n[24], stock[24];
    snprintf(ev_n, sizeof(ev_n), "%lld", events);
    snprintf(stock, sizeof(stock), "%lld", orders / events + 1);
    const char *params[] = {ev_n, stock};
    snprintf(sql, sizeof(sql),
             "INSERT INTO seckill_event (id, name, stock_total, stock_left, starts_at, ends_at)"
             " SELECT 7000000000 + g, 'dbload', $2::int, $2::int, now(), now() + interval '1 day'"
             " FROM generate_series(0, $1::int - 1) g ON CONFLICT DO NOTHING");
    if (sk_pg_exec(c, "events", sql, 2, params, PGRES_COMMAND_OK, NULL, err, sizeof(err)) != 0) {
        fprintf(stderr, "consumer-dbload: %s\n", err);
        return 1;
    }
    /* Statistics as autovacuum would have them a minute into a sale: they decide how
     * the foreign-key check reads seckill_event (see consumer/README.md). Both best effort:
     * CHECKPOINT needs a superuser's conninfo. */
    sk_pg_exec(c, "analyze", "ANALYZE seckill_event", 0, NULL, PGRES_COMMAND_OK, NULL, err,
               sizeof(err));
    sk_pg_exec(c, "checkpoint", "CHECKPOINT", 0, NULL, PGRES_COMMAND_OK, NULL, err, sizeof(err));

    writer ws[MAX_WRITERS];
    memset(ws, 0, sizeof(ws));
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    double cpu0 = now_s(CLOCK_PROCESS_CPUTIME_ID), t0 = now_s(CLOCK_MONOTONIC);
    pthread_barrier_init(&done, NULL, (unsigned)writers + 1);
    pthread_barrier_init(&measured, NULL, (unsigned)writers + 1);
    for (int i = 0; i < writers; i++) {
        ws[i] = (writer){.idx = i, .pg = pg, .orders = orders, .batch = batch, .events = events,
                         .writers = writers, .event_base = 7000000000LL,
                         .order_base = 7000000000000LL,
                         .ts_ms = (long long)wall.tv_sec * 1000 + wall.tv_nsec / 1000000};
        if (pthread_create(&ws[i].thread, NULL, writer_run, &ws[i]) != 0) {
            fprintf(stderr, "consumer-dbload: cannot start a thread\n");
            return 1;
        }
    }
    pthread_barrier_wait(&done);
    double secs = now_s(CLOCK_MONOTONIC) - t0, cpu = now_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    double backend_cpu = backends_cpu(c);
    pthread_barrier_wait(&measured);
    long long written = 0;
    double tx = 0;
    int failed = 0;
    for (int i = 0; i < writers; i++) {
        pthread_join(ws[i].thread, NULL);
        written += ws[i].written;
        tx += ws[i].tx_secs;
        failed |= ws[i].failed;
    }
    PQfinish(c);
    if (failed || written != orders) {
        fprintf(stderr, "consumer-dbload: wrote %lld of %lld orders\n", written, orders);
        return 1;
    }
    printf("{\"bench\":\"consumer-dbload\",\"orders\":%lld,\"batch\":%lld,\"writers\":%lld,\"secs\":%.3f,"
           "\"rate\":%.0f,\"tx_busy\":%.2f,\"backend_us_per_order\":%.2f,\"client_us_per_order\":%.2f}\n",
           orders, batch, writers, secs, (double)orders / secs, tx / (secs * (double)writers),
           1e6 * backend_cpu / (double)orders, 1e6 * cpu / (double)orders);
    return 0;
}
