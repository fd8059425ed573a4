/* sb_pg: the PostgreSQL row sampler of seckill-bench. See sb_pg.h. */
#include "sb_pg.h"

#include "sk_pg.h"

#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct sb_pg {
    PGconn *conn;
    char event_id[24];
    uint64_t start_ns;
    int period_ms;
    pthread_t thread;
    atomic_int stop;
    atomic_llong rows;
    atomic_llong first_rows;
    atomic_ullong errors;
    sb_db_sample *v; /* written by the sampler only */
    size_t n, cap;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int64_t sample_once(sb_pg *p)
{
    /* $1: the event id, as text (bigint) */
    const char *params[1] = {p->event_id};
    PGresult *r = NULL;
    char err[256];
    int64_t rows = -1;
    if (sk_pg_exec(p->conn, "sample", "SELECT count(*) FROM seckill_order WHERE event_id = $1", 1,
                   params, PGRES_TUPLES_OK, &r, err, sizeof(err)) == SK_PG_OK && PQntuples(r) == 1)
        rows = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    if (rows < 0 && PQstatus(p->conn) == CONNECTION_BAD)
        PQreset(p->conn); /* one try per period: the next sample tells (same bounds) */
    return rows;
}

static void *sampler_main(void *arg)
{
    sb_pg *p = arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!atomic_load(&p->stop)) {
        uint64_t t = now_ns();
        int64_t rows = sample_once(p);
        if (rows < 0) {
            atomic_fetch_add(&p->errors, 1);
        } else {
            if (p->n == p->cap) {
                size_t cap = p->cap ? p->cap * 2 : 1024;
                sb_db_sample *v = realloc(p->v, cap * sizeof(*v));
                if (v) {
                    p->v = v;
                    p->cap = cap;
                }
            }
            if (p->n < p->cap) {
                p->v[p->n].t_ms = t > p->start_ns ? (t - p->start_ns) / 1000000ull : 0;
                p->v[p->n].rows = rows;
                p->n++;
            }
            if (atomic_load(&p->first_rows) < 0)
                atomic_store(&p->first_rows, rows);
            atomic_store(&p->rows, rows);
        }
        /* Absolute deadlines: the period does not drift by the query's own time. */
        next.tv_nsec += (long)p->period_ms * 1000000L;
        while (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    return NULL;
}

sb_pg *sb_pg_start(const char *conninfo, uint64_t event_id, uint64_t start_ns, int period_ms,
                   char *err, size_t errsz)
{
    sb_pg *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, errsz, "out of memory");
        return NULL;
    }
    snprintf(p->event_id, sizeof(p->event_id), "%llu", (unsigned long long)event_id);
    p->start_ns = start_ns;
    p->period_ms = period_ms > 0 ? period_ms : 100;
    atomic_init(&p->stop, 0);
    atomic_init(&p->rows, -1);
    atomic_init(&p->first_rows, -1);
    atomic_init(&p->errors, 0);
    /* sk_pg's message names host and database, never the password. */
    if (!(p->conn = sk_pg_connect(conninfo, "seckill-bench/sampler", err, errsz))) {
        free(p);
        return NULL;
    }
    if (pthread_create(&p->thread, NULL, sampler_main, p) != 0) {
        snprintf(err, errsz, "cannot start the sampler thread");
        PQfinish(p->conn);
        free(p);
        return NULL;
    }
    return p;
}

int64_t sb_pg_rows(const sb_pg *p)
{
    return p ? atomic_load(&((sb_pg *)p)->rows) : -1;
}

int64_t sb_pg_first_rows(const sb_pg *p)
{
    return p ? atomic_load(&((sb_pg *)p)->first_rows) : -1;
}

uint64_t sb_pg_errors(const sb_pg *p)
{
    return p ? atomic_load(&((sb_pg *)p)->errors) : 0;
}

void sb_pg_stop(sb_pg *p, sb_db_sample **samples, size_t *n)
{
    if (samples)
        *samples = NULL;
    if (n)
        *n = 0;
    if (!p)
        return;
    atomic_store(&p->stop, 1);
    pthread_join(p->thread, NULL);
    PQfinish(p->conn);
    if (samples) {
        *samples = p->v;
        *n = p->n;
    } else {
        free(p->v);
    }
    free(p);
}
