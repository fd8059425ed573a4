/* order_event_change_pg: the PostgreSQL side of an admin's change of an event. See
 * order_event_change.h. */
#include "order_event_change.h"
#include "order_loader.h"
#include "sk_log.h"
#include "order_pg_exec.h"
#include "order_time.h"

#include <jansson.h>

#include <inttypes.h>
#include <libpq-fe.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int conflict(order_pg_job *job, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(job->conflict, sizeof(job->conflict), fmt, ap);
    va_end(ap);
    job->status = ORDER_PG_CONFLICT;
    return -1;
}

char *order_event_audit_json(const order_event_spec *s, int64_t stock_left)
{
    char starts[32], ends[32];
    order_time_format_rfc3339(s->starts_at_ms, starts, sizeof(starts));
    order_time_format_rfc3339(s->ends_at_ms, ends, sizeof(ends));
    json_t *lim = json_object();
    const char *names[3] = {"ip_rate", "user_rate", "event_rate"};
    const int64_t v[3] = {s->limits.ip_rate, s->limits.user_rate, s->limits.event_rate};
    for (int i = 0; lim && i < 3; i++)
        if (v[i] > 0)
            json_object_set_new(lim, names[i], json_integer(v[i]));
    json_t *o = json_pack("{s:s, s:I, s:I, s:s, s:s, s:i, s:o}", "name", s->name, "stock_total",
                          (json_int_t)s->stock, "stock_left", (json_int_t)stock_left, "starts_at",
                          starts, "ends_at", ends, "per_user_limit", s->per_user_limit, "limits",
                          lim ? lim : json_null());
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    return text;
}

/* One row of seckill_admin_audit in the caller's transaction (or alone). before may be
 * NULL. @returns 0, or -1 with the job failed. */
static int audit_insert(PGconn *c, order_pg_job *job, const char *act, const char *before,
                        const char *after)
{
    char id[24], actor[24];
    snprintf(id, sizeof(id), "%" PRIu64, job->id);
    snprintf(actor, sizeof(actor), "%" PRIu64, job->actor);
    const char *params[5] = {
        id,     /* $1 event id */
        actor,  /* $2 the token's sub */
        act,    /* $3 create, change, restock, pause, resume, end */
        before, /* $4 the fields before, JSON, NULL: none */
        after,  /* $5 the fields after, JSON */
    };
    return order_pg_job_exec(c, job, "insert audit",
                             "INSERT INTO seckill_admin_audit (event_id, actor, act, before, after) "
                             "VALUES ($1::bigint, $2::bigint, $3, $4::jsonb, $5::jsonb)",
                             5, params, PGRES_COMMAND_OK, NULL);
}

/* audit_insert of the event as it was, and `after_text`, or (NULL) as it is now. */
static int audit_of(PGconn *c, order_pg_job *job, const char *act, const order_event_spec *was,
                    int64_t was_left, const char *after_text)
{
    char *before = order_event_audit_json(was, was_left);
    char *after = after_text ? NULL : order_event_audit_json(&job->spec, job->stock_left);
    int rc = -1;
    if (!before || (!after && !after_text)) {
        job->status = ORDER_PG_ERROR;
        snprintf(job->err, sizeof(job->err), "audit: out of memory");
    } else {
        rc = audit_insert(c, job, act, before, after_text ? after_text : after);
    }
    free(before);
    free(after);
    return rc;
}

static int audit_change(PGconn *c, order_pg_job *job, const char *act,
                        const order_event_spec *was, int64_t was_left)
{
    return audit_of(c, job, act, was, was_left, NULL);
}

/* The patch applied to the stored event (job->spec), checked against its state.
 * @returns 0, or -1 with the job's status set. */
static int merge(order_pg_job *job, int has_orders)
{
    order_event_spec *s = &job->spec;
    const order_event_patch *p = &job->patch;
    int64_t now = job->now_ms;
    if (s->ends_at_ms <= now)
        return conflict(job, "the event has ended: it can no longer be changed");
    if (job->ending) {
        s->ends_at_ms = now;
        if (s->starts_at_ms >= now) /* never opened: an empty window ending now */
            s->starts_at_ms = now - 1;
        return 0;
    }
    if ((p->has & ORDER_PATCH_STARTS) && p->starts_at_ms != s->starts_at_ms) {
        if (s->starts_at_ms <= now + ORDER_CHANGE_START_GUARD_MS)
            return conflict(job, "the sale has opened (or opens within %d s): starts_at can "
                                 "no longer move",
                            ORDER_CHANGE_START_GUARD_MS / 1000);
        if (has_orders)
            return conflict(job, "orders were taken: starts_at can no longer move");
        s->starts_at_ms = p->starts_at_ms;
    }
    if (p->has & ORDER_PATCH_ENDS) {
        if (p->ends_at_ms <= now)
            return conflict(job, "ends_at must be in the future (POST .../end ends the sale "
                                 "now)");
        s->ends_at_ms = p->ends_at_ms;
    }
    if (s->ends_at_ms <= s->starts_at_ms)
        return conflict(job, "ends_at must be after starts_at");
    if (p->has & ORDER_PATCH_NAME)
        memcpy(s->name, p->name, sizeof(s->name));
    if (p->has & ORDER_PATCH_PER_USER) {
        /* Across 1 the gate's book-keeping changes (issue 31: the buyers hash alone, or
         * the units hash beside it), and orders already taken were counted the other
         * way: a buyer of "1 per customer" holds no units field. */
        if (has_orders && (p->per_user_limit > 1) != (s->per_user_limit > 1))
            return conflict(job, "orders were taken: per_user_limit can change between 1 and "
                                 "more than 1 only before the first order");
        s->per_user_limit = p->per_user_limit;
    }
    if (p->has & ORDER_PATCH_IP_RATE)
        s->limits.ip_rate = p->limits.ip_rate;
    if (p->has & ORDER_PATCH_USER_RATE)
        s->limits.user_rate = p->limits.user_rate;
    if (p->has & ORDER_PATCH_EVENT_RATE)
        s->limits.event_rate = p->limits.event_rate;
    return 0;
}

/* The row locked, with whether an order of it exists. @returns 0, or -1 with the job's
 * status set (NOT_FOUND or ERROR). */
static int select_locked(PGconn *c, order_pg_job *job, const char *id, int *has_orders)
{
    const char *params[1] = {id /* $1 event id */};
    PGresult *res;
    if (order_pg_job_exec(
            c, job, "select event for update",
            "SELECT name, stock_total, stock_left, "
            "(extract(epoch from starts_at) * 1000)::bigint, "
            "(extract(epoch from ends_at) * 1000)::bigint, per_user_limit, segments, "
            "coalesce(ip_rate, 0), coalesce(user_rate, 0), coalesce(event_rate, 0), "
            "EXISTS (SELECT 1 FROM seckill_order o WHERE o.event_id = e.id) "
            "FROM seckill_event e WHERE id = $1::bigint FOR UPDATE",
            1, params, PGRES_TUPLES_OK, &res) != 0)
        return -1;
    if (PQntuples(res) == 0) {
        PQclear(res);
        job->status = ORDER_PG_NOT_FOUND;
        return -1;
    }
    order_event_spec *s = &job->spec;
    snprintf(s->name, sizeof(s->name), "%s", PQgetvalue(res, 0, 0));
    s->stock = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
    job->stock_left = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
    s->starts_at_ms = strtoll(PQgetvalue(res, 0, 3), NULL, 10);
    s->ends_at_ms = strtoll(PQgetvalue(res, 0, 4), NULL, 10);
    s->per_user_limit = atoi(PQgetvalue(res, 0, 5));
    s->segments = atoi(PQgetvalue(res, 0, 6));
    s->limits.ip_rate = strtoll(PQgetvalue(res, 0, 7), NULL, 10);
    s->limits.user_rate = strtoll(PQgetvalue(res, 0, 8), NULL, 10);
    s->limits.event_rate = strtoll(PQgetvalue(res, 0, 9), NULL, 10);
    *has_orders = PQgetvalue(res, 0, 10)[0] == 't';
    PQclear(res);
    return 0;
}

static int update_row(PGconn *c, order_pg_job *job, const char *id)
{
    const order_event_spec *s = &job->spec;
    char starts[24], ends[24], lim[12], rates[3][24];
    const int64_t rv[3] = {s->limits.ip_rate, s->limits.user_rate, s->limits.event_rate};
    for (int i = 0; i < 3; i++)
        snprintf(rates[i], sizeof(rates[i]), "%" PRId64, rv[i]);
    snprintf(starts, sizeof(starts), "%" PRId64, s->starts_at_ms);
    snprintf(ends, sizeof(ends), "%" PRId64, s->ends_at_ms);
    snprintf(lim, sizeof(lim), "%d", s->per_user_limit);
    const char *params[8] = {
        id,                          /* $1 event id */
        s->name,                     /* $2 name */
        starts,                      /* $3 starts_at, ms since the epoch */
        ends,                        /* $4 ends_at, ms since the epoch */
        lim,                         /* $5 per_user_limit */
        rv[0] > 0 ? rates[0] : NULL, /* $6 ip_rate override, NULL: the default */
        rv[1] > 0 ? rates[1] : NULL, /* $7 user_rate override */
        rv[2] > 0 ? rates[2] : NULL, /* $8 event_rate override */
    };
    return order_pg_job_exec(c, job, "update event",
                             "UPDATE seckill_event SET name = $2, "
                             "starts_at = to_timestamp($3::bigint / 1000.0), "
                             "ends_at = to_timestamp($4::bigint / 1000.0), "
                             "per_user_limit = $5::int, ip_rate = $6::int, user_rate = $7::int, "
                             "event_rate = $8::int WHERE id = $1::bigint",
                             8, params, PGRES_COMMAND_OK, NULL);
}

static void rollback(PGconn *c)
{
    if (PQstatus(c) == CONNECTION_OK) { /* its own failure changes nothing: the job's stands */
        char ignored[8];
        sk_pg_exec(c, "rollback", "ROLLBACK", 0, NULL, PGRES_COMMAND_OK, NULL, ignored,
                   sizeof(ignored));
    }
}

/* BEGIN, then the event's row locked into job (select_locked); id gets the event id's
 * text. @returns 0 inside the transaction, or -1 with it rolled back and the job's
 * status set. */
static int begin_locked(PGconn *c, order_pg_job *job, char id[24], int *has_orders)
{
    job->conflict[0] = '\0';
    if (order_pg_job_exec(c, job, "begin", "BEGIN", 0, NULL, PGRES_COMMAND_OK, NULL) != 0)
        return -1;
    snprintf(id, 24, "%" PRIu64, job->id);
    *has_orders = 0;
    if (select_locked(c, job, id, has_orders) != 0) {
        rollback(c);
        return -1;
    }
    return 0;
}

void order_event_change_pg(void *pgconn, order_pg_job *job)
{
    PGconn *c = pgconn;
    char id[24];
    int has_orders;
    if (begin_locked(c, job, id, &has_orders) != 0)
        return;
    order_event_spec was = job->spec;
    if (merge(job, has_orders) != 0 || update_row(c, job, id) != 0 ||
        audit_change(c, job, job->ending ? "end" : "change", &was, job->stock_left) != 0)
        goto rollback;
    if (order_pg_job_exec(c, job, "commit", "COMMIT", 0, NULL, PGRES_COMMAND_OK, NULL) != 0)
        return;
    job->status = ORDER_PG_OK;
    return;
rollback:
    rollback(c);
}

/* ---- restock ------------------------------------------------------------------------ */

/* The delta the body asks for, checked against the row. @returns 0, or -1 with the job's
 * status set. */
static int restock_delta(order_pg_job *job, int64_t *delta)
{
    const order_event_spec *s = &job->spec;
    if (s->ends_at_ms <= job->now_ms)
        return conflict(job, "the event has ended: its stock can no longer change");
    *delta = job->total >= 0 ? job->total - s->stock : job->add;
    if (s->stock + *delta > INT32_MAX)
        return conflict(job, "stock_total would be over %d", INT32_MAX);
    if (job->stock_left + *delta < 0) { /* PostgreSQL's figure lags the gate's: never lower */
        job->available = job->stock_left;
        return conflict(job, "only %lld units are unsold: units held by orders are never "
                             "taken back", (long long)job->stock_left);
    }
    return 0;
}

void order_event_restock_pg(void *pgconn, order_pg_job *job)
{
    PGconn *c = pgconn;
    job->available = 0;
    char id[24], d[24];
    int has_orders;
    int64_t delta = 0;
    if (begin_locked(c, job, id, &has_orders) != 0)
        return;
    if (restock_delta(job, &delta) != 0)
        goto rollback;
    order_event_spec was = job->spec;
    int64_t was_left = job->stock_left;
    job->spec.stock += delta; /* as it will be: the audit's after */
    job->stock_left += delta;
    if (audit_change(c, job, "restock", &was, was_left) != 0)
        goto rollback;
    if (delta != 0) {
        snprintf(d, sizeof(d), "%" PRId64, delta);
        const char *params[2] = {id /* $1 event id */, d /* $2 units, may be negative */};
        if (order_pg_job_exec(c, job, "restock event",
                              "UPDATE seckill_event SET stock_total = stock_total + $2::int, "
                              "stock_left = stock_left + $2::int WHERE id = $1::bigint",
                              2, params, PGRES_COMMAND_OK, NULL) != 0)
            goto rollback;
        unsigned k = job->spec.segments > 1 ? (unsigned)job->spec.segments : 1;
        int rc = order_loader_restock(job->loader, job->id, k, delta, &job->available, job->err,
                                      sizeof(job->err));
        if (rc == 2) {
            conflict(job, "only %lld units are unsold in the gate: units held by orders are "
                          "never taken back", (long long)job->available);
            goto rollback;
        }
        if (rc == 0) {
            snprintf(job->conflict, sizeof(job->conflict),
                     "the event's gate is not loaded in Redis: retry once it is rebuilt");
            job->status = ORDER_PG_RETRY;
            goto rollback;
        }
        if (rc < 0) {
            job->status = ORDER_PG_ERROR;
            goto rollback;
        }
    }
    if (order_pg_job_exec(c, job, "commit", "COMMIT", 0, NULL, PGRES_COMMAND_OK, NULL) != 0) {
        /* the gate moved, the row did not: move the gate back (the pool may run the job
         * again on a new connection, which then starts from a gate as before) */
        int64_t ignored;
        char err[160];
        if (delta != 0 && order_loader_restock(job->loader, job->id,
                                               job->spec.segments > 1
                                                   ? (unsigned)job->spec.segments
                                                   : 1,
                                               -delta, &ignored, err, sizeof(err)) != 1)
            sk_log(SK_LOG_ERROR, "restock_undo_failed",
                   "event_id=%" PRIu64 " delta=%" PRId64 " err=\"%s\" note=\"the gate and "
                   "PostgreSQL differ by delta: seckill-check names it\"",
                   job->id, delta, err);
        return;
    }
    job->status = ORDER_PG_OK;
    return;
rollback:
    rollback(c);
}

void order_event_audit_pg(void *pgconn, order_pg_job *job)
{
    if (audit_insert(pgconn, job, job->act, NULL, job->audit_after) == 0)
        job->status = ORDER_PG_OK;
}

void order_event_audit_read_pg(void *pgconn, order_pg_job *job)
{
    PGconn *c = pgconn;
    char id[24], off[24], lim[24];
    snprintf(id, sizeof(id), "%" PRIu64, job->id);
    snprintf(off, sizeof(off), "%" PRId64, job->offset);
    snprintf(lim, sizeof(lim), "%" PRId64, job->limit);
    const char *params[3] = {id /* $1 event id */, off /* $2 offset */, lim /* $3 limit */};
    PGresult *res;
    if (order_pg_job_exec(
            c, job, "read audit",
            "SELECT coalesce(json_agg(json_build_object("
            "'at', to_char(a.at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
            "'actor', a.actor::text, 'act', a.act, 'before', a.before, 'after', a.after) "
            "ORDER BY a.id), '[]'::json)::text, "
            "EXISTS (SELECT 1 FROM seckill_admin_audit x WHERE x.event_id = $1::bigint "
            "ORDER BY x.id OFFSET $2::bigint + $3::bigint LIMIT 1) "
            "FROM (SELECT * FROM seckill_admin_audit WHERE event_id = $1::bigint "
            "ORDER BY id OFFSET $2::bigint LIMIT $3::bigint) a",
            3, params, PGRES_TUPLES_OK, &res) != 0)
        return;
    job->audit_json = strdup(PQgetvalue(res, 0, 0));
    job->more = PQgetvalue(res, 0, 1)[0] == 't';
    PQclear(res);
    if (!job->audit_json) {
        job->status = ORDER_PG_ERROR;
        snprintf(job->err, sizeof(job->err), "read audit: out of memory");
        return;
    }
    job->status = ORDER_PG_OK;
}

/* ---- removal ------------------------------------------------------------------------ */

static int archive_row(PGconn *c, order_pg_job *job, const char *id, const order_event_spec *was)
{
    const char *params[1] = {id /* $1 event id */};
    PGresult *res;
    if (order_pg_job_exec(c, job, "archive event",
                          "UPDATE seckill_event SET archived_at = now() "
                          "WHERE id = $1::bigint AND archived_at IS NULL",
                          1, params, PGRES_COMMAND_OK, &res) != 0)
        return -1;
    int n = atoi(PQcmdTuples(res));
    PQclear(res);
    if (n == 0)
        return conflict(job, "the event is archived already");
    job->removed = 2;
    return audit_of(c, job, "archive", was, job->stock_left, "{\"archived\": true}");
}

static int delete_row(PGconn *c, order_pg_job *job, const char *id, const order_event_spec *was)
{
    const char *params[1] = {id /* $1 event id */};
    if (order_pg_job_exec(c, job, "delete event", "DELETE FROM seckill_event WHERE id = $1::bigint",
                          1, params, PGRES_COMMAND_OK, NULL) != 0)
        return -1;
    job->removed = 1;
    return audit_of(c, job, "delete", was, job->stock_left, "null");
}

void order_event_remove_pg(void *pgconn, order_pg_job *job)
{
    PGconn *c = pgconn;
    job->removed = 0;
    char id[24];
    int has_orders;
    if (begin_locked(c, job, id, &has_orders) != 0)
        return;
    order_event_spec was = job->spec;
    if (was.ends_at_ms > job->now_ms) {
        conflict(job, "the sale is on: end it first (POST .../end), then remove it");
        goto rollback;
    }
    int rc = 2; /* archive unless the gate shows no order ever taken */
    if (!has_orders) {
        int64_t held = 0;
        unsigned k = was.segments > 1 ? (unsigned)was.segments : 1;
        rc = order_loader_remove(job->loader, job->id, k, &held, job->err, sizeof(job->err));
        if (rc < 0) {
            job->status = ORDER_PG_ERROR;
            goto rollback;
        }
    }
    if ((rc == 1 ? delete_row(c, job, id, &was) : archive_row(c, job, id, &was)) != 0)
        goto rollback;
    if (order_pg_job_exec(c, job, "commit", "COMMIT", 0, NULL, PGRES_COMMAND_OK, NULL) != 0)
        return; /* deleted keys of an ended event stay deleted: a retry finds none */
    job->status = ORDER_PG_OK;
    return;
rollback:
    rollback(c);
}
