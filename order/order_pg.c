/* order_pg: PostgreSQL job pool. See order_pg.h. */
#include "order_pg.h"
#include "order_event_change.h"
#include "order_pay_pg.h"
#include "order_pg_exec.h"

#include "sk_log.h"
#include "sk_pg.h"

#include <inttypes.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct order_pg {
    char *conninfo;
    int nthreads;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    order_pg_job *head, *tail;
    int queued;
    int stopping;
};

static void run_create_event(PGconn *c, order_pg_job *job)
{
    char id[24], stock[24], starts[24], ends[24], lim[12], win[12], segs[12];
    char rates[3][24], pow[24];
    const order_event_limits *ol = &job->spec.limits;
    const int64_t rv[3] = {ol->ip_rate, ol->user_rate, ol->event_rate};
    for (int i = 0; i < 3; i++) /* 0: no override, NULL in the row */
        snprintf(rates[i], sizeof(rates[i]), "%" PRId64, rv[i]);
    snprintf(pow, sizeof(pow), "%" PRId64, ol->challenge_bits);
    snprintf(id, sizeof(id), "%" PRIu64, job->id);
    snprintf(segs, sizeof(segs), "%d", job->spec.segments > 0 ? job->spec.segments : 1);
    snprintf(stock, sizeof(stock), "%" PRId64, job->spec.stock);
    snprintf(starts, sizeof(starts), "%" PRId64, job->spec.starts_at_ms);
    snprintf(ends, sizeof(ends), "%" PRId64, job->spec.ends_at_ms);
    snprintf(lim, sizeof(lim), "%d", job->spec.per_user_limit);
    snprintf(win, sizeof(win), "%d", job->spec.payment_window_s);
    /* the admin audit's row in the same statement (issue 32): who created it, and how */
    char actor[24], *after = order_event_audit_json(&job->spec, job->spec.stock);
    snprintf(actor, sizeof(actor), "%" PRIu64, job->actor);
    if (!after) {
        job->status = ORDER_PG_ERROR;
        snprintf(job->err, sizeof(job->err), "insert event: out of memory");
        return;
    }
    const char *params[15] = {
        id,             /* $1 event id from libidgen */
        job->spec.name, /* $2 name */
        stock,          /* $3 stock_total = stock_left at creation */
        starts,         /* $4 starts_at, ms since the epoch */
        ends,           /* $5 ends_at, ms since the epoch */
        lim,            /* $6 per_user_limit */
        win,            /* $7 payment_window_s */
        job->spec.rebuy_after_release ? "true" : "false", /* $8 rebuy_after_release */
        segs,           /* $9 segments */
        rv[0] > 0 ? rates[0] : NULL, /* $10 ip_rate override, NULL: the default */
        rv[1] > 0 ? rates[1] : NULL, /* $11 user_rate override */
        rv[2] > 0 ? rates[2] : NULL, /* $12 event_rate override */
        ol->challenge_bits != 0 ? pow : NULL, /* $13 challenge_bits (-1 a hidden path), NULL: none */
        actor,          /* $14 the admin's sub, for the audit */
        after,          /* $15 the event as created, JSON, for the audit */
    };
    if (order_pg_job_exec(
            c, job, "insert event",
            "WITH e AS (INSERT INTO seckill_event (id, name, stock_total, stock_left, starts_at, "
            "ends_at, per_user_limit, payment_window_s, rebuy_after_release, segments, ip_rate, "
            "user_rate, event_rate, challenge_bits) VALUES ($1::bigint, "
            "$2, $3::int, $3::int, to_timestamp($4::bigint / 1000.0), "
            "to_timestamp($5::bigint / 1000.0), $6::int, $7::int, $8::boolean, $9::int, $10::int, "
            "$11::int, $12::int, $13::int) RETURNING id) "
            "INSERT INTO seckill_admin_audit (event_id, actor, act, after) "
            "SELECT id, $14::bigint, 'create', $15::jsonb FROM e",
            15, params, PGRES_COMMAND_OK, NULL) == 0)
        job->status = ORDER_PG_OK;
    free(after);
}

/* An event's columns from `col`: name, stock_total, stock_left, starts_at and ends_at in
 * ms, per_user_limit, segments, the rate overrides and the challenge's bits (0 when NULL)
 * (EVENT_COLUMNS below, the SELECT lists of run_get_event and the lists). */
static void event_row(const PGresult *res, int row, int col, order_event_spec *spec,
                      int64_t *stock_left)
{
    snprintf(spec->name, sizeof(spec->name), "%s", PQgetvalue(res, row, col));
    spec->stock = strtoll(PQgetvalue(res, row, col + 1), NULL, 10);
    *stock_left = strtoll(PQgetvalue(res, row, col + 2), NULL, 10);
    spec->starts_at_ms = strtoll(PQgetvalue(res, row, col + 3), NULL, 10);
    spec->ends_at_ms = strtoll(PQgetvalue(res, row, col + 4), NULL, 10);
    spec->per_user_limit = atoi(PQgetvalue(res, row, col + 5));
    spec->segments = atoi(PQgetvalue(res, row, col + 6));
    spec->limits.ip_rate = strtoll(PQgetvalue(res, row, col + 7), NULL, 10);
    spec->limits.user_rate = strtoll(PQgetvalue(res, row, col + 8), NULL, 10);
    spec->limits.event_rate = strtoll(PQgetvalue(res, row, col + 9), NULL, 10);
    spec->limits.challenge_bits = strtoll(PQgetvalue(res, row, col + 10), NULL, 10);
}

/* The columns event_row reads, in its order. */
#define EVENT_COLUMNS                                                                        \
    "name, stock_total, stock_left, (extract(epoch from starts_at) * 1000)::bigint, "        \
    "(extract(epoch from ends_at) * 1000)::bigint, per_user_limit, segments, "               \
    "coalesce(ip_rate, 0), coalesce(user_rate, 0), coalesce(event_rate, 0), "                \
    "coalesce(challenge_bits, 0)"

/* The first n rows of `res` (id, EVENT_COLUMNS) into job->rows (malloc'd; the caller of
 * the job frees it); res is cleared. */
static void list_rows(PGresult *res, size_t n, order_pg_job *job)
{
    job->rows = calloc(n ? n : 1, sizeof(*job->rows));
    if (!job->rows) {
        job->status = ORDER_PG_ERROR;
        snprintf(job->err, sizeof(job->err), "list events: out of memory");
        PQclear(res);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        order_evlist_row *r = &job->rows[i];
        r->id = strtoull(PQgetvalue(res, (int)i, 0), NULL, 10);
        event_row(res, (int)i, 1, &r->spec, &r->stock_left);
    }
    job->nrows = n;
    job->status = ORDER_PG_OK;
    PQclear(res);
}

static void run_get_event(PGconn *c, order_pg_job *job)
{
    char id[24];
    snprintf(id, sizeof(id), "%" PRIu64, job->id);
    const char *params[1] = {id /* $1 event id */};
    PGresult *res;
    if (order_pg_job_exec(
            c, job, "select event",
            "SELECT " EVENT_COLUMNS " FROM seckill_event WHERE id = $1::bigint",
            1, params, PGRES_TUPLES_OK, &res) != 0)
        return;
    if (PQntuples(res) == 0) {
        job->status = ORDER_PG_NOT_FOUND;
    } else {
        event_row(res, 0, 0, &job->spec, &job->stock_left);
        job->status = ORDER_PG_OK;
    }
    PQclear(res);
}

static void run_list_events(PGconn *c, order_pg_job *job)
{
    char lim[24];
    snprintf(lim, sizeof(lim), "%" PRIu64, job->id);
    const char *params[1] = {lim /* $1 the most rows */};
    PGresult *res;
    if (order_pg_job_exec(
            c, job, "list events",
            "SELECT id, " EVENT_COLUMNS " FROM seckill_event WHERE ends_at > now() "
            "AND archived_at IS NULL ORDER BY starts_at, id LIMIT $1::bigint",
            1, params, PGRES_TUPLES_OK, &res) != 0)
        return;
    list_rows(res, (size_t)PQntuples(res), job);
}

/* The ended events, newest end first, a page at a time (GET /api/v1/events?state=ended,
 * admin): read per call, since it is an operator's, not a buyer's, and it grows with
 * every sale. One row past the page says whether there is a next one. Archived events
 * are left out: the list is for picking what still needs an operator. */
static void run_list_ended(PGconn *c, order_pg_job *job)
{
    char off[24], lim[24];
    snprintf(off, sizeof(off), "%" PRId64, job->offset);
    snprintf(lim, sizeof(lim), "%" PRId64, job->limit + 1);
    const char *params[2] = {off /* $1 offset */, lim /* $2 the page's size plus one */};
    PGresult *res;
    if (order_pg_job_exec(
            c, job, "list ended events",
            "SELECT id, " EVENT_COLUMNS " FROM seckill_event WHERE ends_at <= now() "
            "AND archived_at IS NULL ORDER BY ends_at DESC, id DESC "
            "OFFSET $1::bigint LIMIT $2::bigint",
            2, params, PGRES_TUPLES_OK, &res) != 0)
        return;
    size_t n = (size_t)PQntuples(res);
    job->more = n > (size_t)job->limit;
    list_rows(res, job->more ? (size_t)job->limit : n, job);
}

static void run_get_order(PGconn *c, order_pg_job *job)
{
    char id[24];
    snprintf(id, sizeof(id), "%" PRIu64, job->id);
    const char *params[1] = {id /* $1 order id */};
    PGresult *res;
    if (order_pg_job_exec(
            c, job, "select order",
            "SELECT event_id, user_id, status, "
            "coalesce((extract(epoch from pay_by) * 1000)::bigint, 0) "
            "FROM seckill_order WHERE order_id = $1::bigint",
            1, params, PGRES_TUPLES_OK, &res) != 0)
        return;
    if (PQntuples(res) == 0) {
        job->status = ORDER_PG_NOT_FOUND;
    } else {
        job->event_id = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
        job->user_id = strtoull(PQgetvalue(res, 0, 1), NULL, 10);
        snprintf(job->order_status, sizeof(job->order_status), "%s", PQgetvalue(res, 0, 2));
        job->pay_by_ms = strtoll(PQgetvalue(res, 0, 3), NULL, 10);
        job->status = ORDER_PG_OK;
    }
    PQclear(res);
}

/* The order a user holds (or held) in an event, once the event's Redis keys expired (the
 * orders list, order_read.c): the latest that took a unit, as the buyers hash named it. */
static void run_user_order(PGconn *c, order_pg_job *job)
{
    char ev[24], user[24];
    snprintf(ev, sizeof(ev), "%" PRIu64, job->event_id);
    snprintf(user, sizeof(user), "%" PRIu64, job->user_id);
    const char *params[2] = {ev /* $1 event id */, user /* $2 user id */};
    PGresult *res;
    if (order_pg_job_exec(c, job, "select user order",
                          "SELECT order_id, status FROM seckill_order "
                          "WHERE event_id = $1::bigint AND user_id = $2::bigint "
                          "AND status <> 'rejected' ORDER BY order_id DESC LIMIT 1",
                          2, params, PGRES_TUPLES_OK, &res) != 0)
        return;
    if (PQntuples(res) == 0) {
        job->status = ORDER_PG_NOT_FOUND;
    } else {
        job->id = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
        snprintf(job->order_status, sizeof(job->order_status), "%s", PQgetvalue(res, 0, 1));
        job->status = ORDER_PG_OK;
    }
    PQclear(res);
}

void order_pg_run(void *pgconn, order_pg_job *job)
{
    PGconn *c = pgconn;
    job->err[0] = '\0';
    switch (job->kind) {
    case ORDER_PG_CREATE_EVENT:
        run_create_event(c, job);
        break;
    case ORDER_PG_GET_EVENT:
        run_get_event(c, job);
        break;
    case ORDER_PG_GET_ORDER:
        run_get_order(c, job);
        break;
    case ORDER_PG_USER_ORDER:
        run_user_order(c, job);
        break;
    case ORDER_PG_LIST_EVENTS:
        run_list_events(c, job);
        break;
    case ORDER_PG_LIST_ENDED:
        run_list_ended(c, job);
        break;
    case ORDER_PG_PAY_ORDER:
    case ORDER_PG_CANCEL_ORDER:
        order_pay_pg_run(c, job);
        break;
    case ORDER_PG_MARK_RELEASED:
        order_pay_pg_mark_released(c, job);
        break;
    case ORDER_PG_CHANGE_EVENT:
        order_event_change_pg(c, job);
        break;
    case ORDER_PG_RESTOCK_EVENT:
        order_event_restock_pg(c, job);
        break;
    case ORDER_PG_AUDIT_EVENT:
        order_event_audit_pg(c, job);
        break;
    case ORDER_PG_READ_AUDIT:
        order_event_audit_read_pg(c, job);
        break;
    case ORDER_PG_REMOVE_EVENT:
        order_event_remove_pg(c, job);
        break;
    default:
        job->status = ORDER_PG_ERROR;
        snprintf(job->err, sizeof(job->err), "unknown job");
    }
}

/* Opens the pool thread's connection. @returns it, or NULL with job failed and the
 * failure logged (the message names host and port, never the password). */
static PGconn *pool_connect(order_pg *p, order_pg_job *job)
{
    PGconn *c = sk_pg_connect(p->conninfo, "seckill-order/pg", job->err, sizeof(job->err));
    if (!c) {
        job->status = ORDER_PG_ERROR;
        sk_log(SK_LOG_WARN, "pg_connect_failed", "app=seckill-order/pg err=\"%s\"", job->err);
    }
    return c;
}

static void *pool_main(void *arg)
{
    order_pg *p = arg;
    PGconn *c = NULL;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->cond, &p->mu);
        order_pg_job *job = p->head;
        if (job) {
            p->head = job->next;
            if (!p->head)
                p->tail = NULL;
            p->queued--;
        }
        pthread_mutex_unlock(&p->mu);
        if (!job)
            break; /* stopping and the queue is empty */
        if (c && PQstatus(c) != CONNECTION_OK) {
            PQfinish(c);
            c = NULL;
        }
        if (!c)
            c = pool_connect(p, job);
        if (c) {
            order_pg_run(c, job);
            /* A query that failed on a broken connection (or found no answer within its
             * deadline, which closes it): one retry on a fresh one. Every job here is a
             * single statement that is safe to repeat (the insert of a new id either
             * happened, then the retry fails on the key, or not), or a pay/cancel
             * transaction whose repeat reads what the first one did (order_pay_pg.h: a
             * repeat answers the same, and a release it cannot know it owes is the
             * release sweep's). */
            if (job->status == ORDER_PG_ERROR && PQstatus(c) != CONNECTION_OK) {
                PQfinish(c);
                if ((c = pool_connect(p, job)) != NULL)
                    order_pg_run(c, job);
            }
        }
        job->done(job);
    }
    PQfinish(c);
    return NULL;
}

order_pg *order_pg_new(const char *conninfo, int threads)
{
    order_pg *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->conninfo = strdup(conninfo);
    p->threads = calloc((size_t)threads, sizeof(pthread_t));
    if (!p->conninfo || !p->threads) {
        free(p->conninfo);
        free(p->threads);
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cond, NULL);
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&p->threads[i], NULL, pool_main, p) != 0)
            break;
        p->nthreads++;
    }
    if (p->nthreads == 0) {
        order_pg_free(p);
        return NULL;
    }
    return p;
}

int order_pg_submit(order_pg *p, order_pg_job *job, int max_queue)
{
    job->next = NULL;
    pthread_mutex_lock(&p->mu);
    if (p->stopping || p->queued >= max_queue) {
        pthread_mutex_unlock(&p->mu);
        return -1;
    }
    if (p->tail)
        p->tail->next = job;
    else
        p->head = job;
    p->tail = job;
    p->queued++;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

void order_pg_free(order_pg *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cond);
    free(p->threads);
    free(p->conninfo);
    free(p);
}
