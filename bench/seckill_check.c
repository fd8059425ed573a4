/* seckill-check: proves (or refutes) the guarantees of one flash sale after the fact.
 *
 *   seckill-check [--key=value ...] EVENT_ID ACCEPTED_FILE
 *
 * First it waits for the drain (with a deadline): until Redis holds no pending
 * reservation for the event and PostgreSQL holds at least as many rows as there were
 * 202s, or until both stop moving for `settle` seconds. Then it reads accepted.txt,
 * the event's rows and stock in PostgreSQL, its keys in Redis and the dead-letter
 * topic, and prints one line per guarantee with its figure (sc_judge). Exit status:
 * 0 every guarantee holds, 1 a violation (each is named), 2 it could not check. */
#include <hiredis/hiredis.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rcluster.h"
#include "sc_accepted.h"
#include "sc_db.h"
#include "sc_dlq.h"
#include "sc_judge.h"
#include "sc_redis.h"
#include "sk_config.h"
#include "sk_log.h"

typedef struct check_cfg {
    char *redis_url;
    char *pg;
    long long wait;
    long long settle;
    int dlq;
    char *dlq_topic;
    long long dlq_timeout;
    char *log_level;
} check_cfg;

#define F(x) offsetof(check_cfg, x)
static const sk_cfg_entry check_table[] = {
    {"redis.url", SK_CFG_SECRET, 0, 0, "redis://127.0.0.1:6379", "Redis of the gate (redis://[user:pass@]host:port/db, unix:///path, redis-cluster://host:port[,host:port...], or redis-sentinel://host:port[,...]/master_name)", F(redis_url)},
    {"pg", SK_CFG_STRING, 0, 0, "dbname=seckill", "PostgreSQL conninfo or URI", F(pg)},
    {"wait", SK_CFG_INT, 0, 3600, "120", "wait up to this many seconds for the drain before judging", F(wait)},
    {"settle", SK_CFG_INT, 1, 600, "5", "the drain is over early when rows and pending have not moved for this many seconds", F(settle)},
    {"dlq", SK_CFG_BOOL, 0, 0, "true", "check the dead-letter topic (needs kafka.bootstrap.servers, SECKILL_KAFKA_BROKERS)", F(dlq)},
    {"dlq.topic", SK_CFG_STRING, 0, 0, "seckill.orders.dlq", "dead-letter topic", F(dlq_topic)},
    {"dlq.timeout", SK_CFG_INT, 100, 600000, "15000", "milliseconds to read the dead-letter topic to its end", F(dlq_timeout)},
    {"log.level", SK_CFG_STRING, 0, 0, "warn", "debug, info, warn or error", F(log_level)},
    {NULL, 0, 0, 0, NULL, NULL, 0},
};
#undef F

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: seckill-check [--config FILE] [--key=value ...] EVENT_ID ACCEPTED_FILE\n\n"
            "Checks the guarantees of one flash sale against Redis, PostgreSQL and the dead-letter\n"
            "topic, once the drain is over. One line per guarantee with its figure.\n"
            "Exit status: 0 all hold, 1 a guarantee is violated, 2 could not check.\n\n"
            "Settings (precedence: default < --config file < environment < arguments):\n");
    sk_config_print_help(out, check_table, 0);
}

static int parse_args(int argc, char **argv, check_cfg *cfg, sk_cfg_kv **kafka,
                      const char **pos, int *npos)
{
    char err[512];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strcmp(argv[i], "--help-markdown") == 0) {
            sk_config_print_help(stdout, check_table, 1);
            exit(0);
        }
    }
    if (sk_config_load(check_table, cfg, sk_config_args_path(argc, argv), kafka, err,
                       sizeof(err)) != 0 ||
        sk_config_args(check_table, cfg, kafka, 1, argc, argv, pos, 2, npos, err,
                       sizeof(err)) != 0) {
        fprintf(stderr, "seckill-check: %s\n", err);
        return -1;
    }
    if (*npos != 2) {
        usage(stderr);
        return -1;
    }
    return 0;
}

/* Waits for the drain: pending empty and every 202 in PostgreSQL, or nothing moving for
 * `settle` seconds once the rows are all there, or the deadline. */
static int wait_drain(const check_cfg *cfg, PGconn *pg, rcl_ctx *rc, uint64_t event_id,
                      uint64_t accepted, double *waited)
{
    double start = now_s(), deadline = start + (double)cfg->wait, still_since = start;
    long long prev_rows = -2, prev_pending = -2;
    char err[512];
    int drained = 0;
    for (;;) {
        int present;
        long long stock, pending = -1, buyers;
        long long rows = sc_db_count(pg, event_id, err, sizeof(err));
        if (rows < 0)
            sk_log(SK_LOG_WARN, "pg_count_failed", "err=\"%s\"", err);
        if (sc_redis_figures(rc, event_id, &present, &stock, &pending, &buyers, err, sizeof(err)) != 0) {
            sk_log(SK_LOG_WARN, "redis_failed", "err=\"%s\"", err);
            pending = -1;
        }
        double t = now_s();
        if (pending == 0 && rows >= (long long)accepted) {
            drained = 1;
            break;
        }
        if (rows != prev_rows || pending != prev_pending)
            still_since = t;
        else if (rows >= (long long)accepted && t - still_since >= (double)cfg->settle)
            break; /* every row is there but reservations stay pending: judged below */
        if (t >= deadline || g_stop)
            break;
        prev_rows = rows;
        prev_pending = pending;
        sk_log(SK_LOG_DEBUG, "waiting", "rows=%lld accepted=%llu pending=%lld", rows,
               (unsigned long long)accepted, pending);
        struct timespec ts = {0, 200000000};
        nanosleep(&ts, NULL);
    }
    *waited = now_s() - start;
    return drained;
}

int main(int argc, char **argv)
{
    check_cfg cfg;
    memset(&cfg, 0, sizeof(cfg));
    sk_cfg_kv *kafka = NULL;
    const char *pos[2];
    int npos, status = 2;
    char err[512];
    sc_ids acc = {0};
    sc_row *rows = NULL;
    size_t nrows = 0;
    PGconn *pg = NULL;
    rcl_ctx *rc = NULL;
    sk_log_init("seckill-check", SK_LOG_WARN);
    if (parse_args(argc, argv, &cfg, &kafka, pos, &npos) != 0)
        goto out;
    sk_log_level lvl;
    if (sk_log_level_parse(cfg.log_level, &lvl) == 0)
        sk_log_min_level = lvl;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);

    sc_figures f;
    memset(&f, 0, sizeof(f));
    char *end;
    f.event_id = strtoull(pos[0], &end, 10);
    if (*end || f.event_id == 0) {
        fprintf(stderr, "seckill-check: EVENT_ID must be a decimal id, not \"%s\"\n", pos[0]);
        goto out;
    }
    if (sc_ids_load(pos[1], &acc, err, sizeof(err)) != 0) {
        fprintf(stderr, "seckill-check: %s\n", err);
        goto out;
    }
    f.accepted = acc.n;
    f.accepted_repeated = acc.repeated;
    f.accepted_bad_lines = acc.bad_lines;

    if (!(pg = sc_db_connect(cfg.pg, err, sizeof(err)))) {
        fprintf(stderr, "seckill-check: postgresql: %s\n", err);
        goto out;
    }
    /* A plain URL or a cluster's (rcluster routes each event's keys to their master). */
    rc = rcl_connect(cfg.redis_url, (struct timeval){5, 0}, err, sizeof(err));
    if (!rc) {
        fprintf(stderr, "seckill-check: redis: %s\n", err);
        goto out;
    }
    f.drained = wait_drain(&cfg, pg, rc, f.event_id, f.accepted, &f.waited_s);

    /* Read Redis after PostgreSQL: a reservation confirmed in between would otherwise be
     * counted in neither; read this way round it can only be counted in both (and the
     * drain is over by now, so nothing moves). */
    if (sc_db_load(pg, f.event_id, &f.event_found, &f.stock_total, &f.stock_left,
                   &f.per_user_limit, &rows, &nrows, err, sizeof(err)) != 0) {
        fprintf(stderr, "seckill-check: %s\n", err);
        goto out;
    }
    if (sc_match(&acc, rows, nrows, &f) != 0) {
        fprintf(stderr, "seckill-check: out of memory\n");
        goto out;
    }
    f.redis_ok = sc_redis_figures(rc, f.event_id, &f.stock_present, &f.redis_stock, &f.pending,
                                  &f.buyers, err, sizeof(err)) == 0;
    if (!f.redis_ok)
        fprintf(stderr, "seckill-check: %s\n", err);
    f.redis_released = -1;
    if (f.redis_ok && sc_redis_released(rc, f.event_id, &f.redis_released, err, sizeof(err)) != 0)
        fprintf(stderr, "seckill-check: %s\n", err);
    snprintf(f.dlq_topic, sizeof(f.dlq_topic), "%s", cfg.dlq_topic);
    if (cfg.dlq) {
        char eid[24];
        snprintf(eid, sizeof(eid), "%llu", (unsigned long long)f.event_id);
        if (!kafka) {
            fprintf(stderr, "seckill-check: dlq: no kafka.bootstrap.servers (SECKILL_KAFKA_BROKERS)\n");
            f.dlq_checked = -1;
        } else if (sc_dlq_count(kafka, cfg.dlq_topic, eid, (int)cfg.dlq_timeout, &f.dlq, err,
                                sizeof(err)) != 0) {
            fprintf(stderr, "seckill-check: dlq: %s\n", err);
            f.dlq_checked = -1;
        } else {
            f.dlq_checked = 1;
        }
    }
    status = sc_judge(&f, stdout) ? 1 : 0;
out:
    fflush(stdout);
    free(rows);
    sc_ids_free(&acc);
    rcl_free(rc);
    PQfinish(pg);
    sk_config_free(check_table, &cfg, kafka);
    return status;
}
