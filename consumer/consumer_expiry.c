/* consumer_expiry: expiry and the release sweep. See consumer_expiry.h. */
#include "consumer_expiry.h"
#include "consumer_every.h"
#include "consumer_loop.h"

#include "order_iwrite.h"
#include "order_msg.h"
#include "order_recon_rule.h"
#include "rcluster.h"
#include "seckill_lua.h"
#include "sk_log.h"
#include "sk_pg.h"

#include <inttypes.h>
#include <libpq-fe.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct consumer_expiry {
    char *pg, *redis_url;
    long long interval_ms, batch, index_ttl_s;
    PGconn *conn;
    rcl_ctx *rc;
    char release_sha[41];
    consumer_every *thread; /* NULL until started */
    order_iwrite *iw;       /* the index status write of one release */
    atomic_uint_fast64_t expired_total, released_total;
    char err[256];
};

/* Expires what is due, in one statement: the due rows locked (skipping rows another
 * consumer or a front's pay/cancel holds), closed, and their units (each order's
 * quantity, issue 31) added back to their events' stock_left, all or nothing; answers
 * the orders expired. $1: the most rows. */
static const char SQL_EXPIRE[] =
    "WITH due AS ("
    "  SELECT order_id FROM seckill_order WHERE status = 'created' AND pay_by <= now()"
    "  ORDER BY pay_by LIMIT $1::int FOR UPDATE SKIP LOCKED),"
    " closed AS ("
    "  UPDATE seckill_order o SET status = 'expired', closed_at = now() FROM due"
    "  WHERE o.order_id = due.order_id AND o.status = 'created' RETURNING o.event_id, o.quantity),"
    " given AS ("
    "  UPDATE seckill_event e SET stock_left = e.stock_left + c.n"
    "  FROM (SELECT event_id, sum(quantity) AS n FROM closed GROUP BY event_id) c"
    "  WHERE e.id = c.event_id RETURNING c.n)"
    "SELECT count(*) FROM closed"; /* `given` runs all the same (a data-modifying WITH) */

/* Closed orders whose unit is still owed to the gate. $1: the most rows. */
static const char SQL_UNRELEASED[] =
    "SELECT o.order_id, o.event_id, o.user_id, o.status, e.rebuy_after_release, e.segments, "
    "e.ends_at > now(), o.quantity "
    "FROM seckill_order o JOIN seckill_event e ON e.id = o.event_id "
    "WHERE o.status IN ('cancelled', 'expired') AND o.released_at IS NULL "
    "ORDER BY o.closed_at LIMIT $1::int";

/* $1: the order ids whose release.lua answered, as a PostgreSQL array literal. */
static const char SQL_MARK[] =
    "UPDATE seckill_order SET released_at = now() "
    "WHERE order_id = ANY($1::bigint[]) AND released_at IS NULL";

consumer_expiry *consumer_expiry_new(const consumer_expiry_cfg *cfg)
{
    consumer_expiry *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->pg = strdup(cfg->pg ? cfg->pg : "");
    e->redis_url = strdup(cfg->redis_url ? cfg->redis_url : "");
    e->iw = order_iwrite_new(1);
    if (!e->pg || !e->redis_url || !e->iw) {
        free(e->pg);
        free(e->redis_url);
        order_iwrite_free(e->iw);
        free(e);
        return NULL;
    }
    e->interval_ms = cfg->interval_ms > 0 ? cfg->interval_ms : 500;
    e->batch = cfg->batch > 0 ? cfg->batch : 1000;
    e->index_ttl_s = cfg->index_ttl_s > 0 ? cfg->index_ttl_s : 604800;
    return e;
}

const char *consumer_expiry_errstr(const consumer_expiry *e)
{
    return e->err;
}

uint64_t consumer_expiry_expired_total(const consumer_expiry *e)
{
    return atomic_load(&((consumer_expiry *)e)->expired_total);
}

uint64_t consumer_expiry_released_total(const consumer_expiry *e)
{
    return atomic_load(&((consumer_expiry *)e)->released_total);
}

/* One statement with one text parameter, the most rows (e->batch). @returns 0 with
 * the rows in *r, or -1 (e->err set). */
static int pg_exec_batch(consumer_expiry *e, const char *what, const char *sql, PGresult **r)
{
    char lim[24];
    snprintf(lim, sizeof(lim), "%lld", e->batch);
    const char *params[1] = {lim /* $1 the most rows */};
    return sk_pg_exec(e->conn, what, sql, 1, params, PGRES_TUPLES_OK, r, e->err,
                      sizeof(e->err)) == SK_PG_OK ? 0 : -1;
}

static int pg_ready(consumer_expiry *e)
{
    if (e->conn && PQstatus(e->conn) == CONNECTION_OK)
        return 0;
    PQfinish(e->conn);
    e->conn = sk_pg_connect(e->pg, "seckill-consumer/expiry", e->err, sizeof(e->err));
    return e->conn ? 0 : -1;
}

static int redis_ready(consumer_expiry *e)
{
    if (e->rc)
        return 0;
    if (!e->redis_url[0])
        return -1;
    struct timeval tv = {2, 0};
    e->rc = rcl_connect(e->redis_url, tv, e->err, sizeof(e->err));
    if (!e->rc)
        return -1;
    const char *body = seckill_lua_find("release");
    if (!body || rcl_script_add(e->rc, body, e->release_sha) != 0) {
        snprintf(e->err, sizeof(e->err), "release.lua: not embedded or out of memory");
        rcl_free(e->rc);
        e->rc = NULL;
        return -1;
    }
    return 0;
}

static long expire_due(consumer_expiry *e)
{
    PGresult *r;
    if (pg_exec_batch(e, "expire", SQL_EXPIRE, &r) != 0)
        return -1;
    long n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return n;
}

/* One unreleased row's two Redis commands (release.lua, then the index status field)
 * queued on the pipeline. */
static int queue_release(consumer_expiry *e, PGresult *r, int i)
{
    const char *oid = PQgetvalue(r, i, 0), *uid = PQgetvalue(r, i, 2);
    uint64_t order_id = strtoull(oid, NULL, 10), event_id = strtoull(PQgetvalue(r, i, 1), NULL, 10);
    const char *rebuy = PQgetvalue(r, i, 4)[0] == 't' ? "1" : "0";
    order_release_keys k; /* the buyer's home segment */
    order_release_keys_of(event_id, strtoull(uid, NULL, 10),
                          order_recon_segments_k(PQgetvalue(r, i, 5)), &k);
    const char *q = PQgetvalue(r, i, 7); /* the order's units (issue 31) */
    const char *argv[11] = {"EVALSHA", e->release_sha, "4", k.key[0], k.key[1], k.key[2],
                            k.key[3],  oid,            uid, rebuy,    q};
    size_t lens[11] = {7,           40,          1, k.len[0], k.len[1], k.len[2], k.len[3],
                       strlen(oid), strlen(uid), 1, strlen(q)};
    order_index_entry ie = {event_id, strtoull(uid, NULL, 10), 0,
                            order_index_status_letter(PQgetvalue(r, i, 3)), 0};
    order_iwrite_begin(e->iw, order_id, e->index_ttl_s);
    order_iwrite_add(e->iw, order_id, ORDER_INDEX_STATUS_SUFFIX, &ie);
    const char **hs, **ex;
    const size_t *hl, *exl;
    int hn = order_iwrite_hset(e->iw, &hs, &hl), xn = order_iwrite_expire(e->iw, &ex, &exl);
    if (rcl_append_argv(e->rc, 11, argv, lens) != 0 || rcl_append_argv(e->rc, hn, hs, hl) != 0 ||
        rcl_append_argv(e->rc, xn, ex, exl) != 0) {
        snprintf(e->err, sizeof(e->err), "%s", rcl_errstr(e->rc));
        return -1;
    }
    return 0;
}

/* Row i of the sweep's query, release.lua answered `rep`: 1 given back now (counted in
 * *given), 0 given back before: settled. -1, the gate is not loaded: settled only once the
 * sale has ended (no reload will come). While it is on sale the reconciler reloads it, and
 * this order may have closed after the reload read stock_left: its unit is then in neither
 * the reload's count nor its released set, so the release stays owed and a later sweep
 * gives it back (or finds it in the released set: 0). Settling it here would lose the
 * unit. @returns 1 settled, 0 still owed, -1 not an answer. */
static int sweep_answer(PGresult *r, int i, const redisReply *rep, long *given)
{
    if (rep->type != REDIS_REPLY_INTEGER)
        return -1;
    if (rep->integer < 0)
        return PQgetvalue(r, i, 6)[0] == 't' ? 0 : 1; /* column 6: the sale is on */
    *given += rep->integer == 1;
    return 1;
}

/* The sweep: what is owed to the gate goes back, then released_at. @returns the units
 * given back now, or -1. */
static long sweep(consumer_expiry *e)
{
    PGresult *r;
    if (pg_exec_batch(e, "unreleased", SQL_UNRELEASED, &r) != 0)
        return -1;
    int n = PQntuples(r);
    if (n == 0 || redis_ready(e) != 0) {
        PQclear(r);
        return n == 0 ? 0 : -1;
    }
    /* "{id,id,...}": at most batch ids of 19 digits. */
    size_t cap = (size_t)n * 21 + 3, len = 1;
    char *ids = malloc(cap);
    int queued = 0, failed = 0, owed = 0, first_owed = 0;
    long given = 0;
    if (!ids) {
        snprintf(e->err, sizeof(e->err), "out of memory");
        PQclear(r);
        return -1;
    }
    ids[0] = '{';
    for (int i = 0; i < n && !failed; i++) {
        if (queue_release(e, r, i) != 0)
            failed = 1;
        else
            queued++;
    }
    for (int i = 0; i < queued; i++) {
        redisReply *rep[3] = {NULL, NULL, NULL};
        int ok = 1;
        for (int k = 0; k < 3; k++)
            if (rcl_get_reply(e->rc, &rep[k]) != 0 || rep[k]->type == REDIS_REPLY_ERROR)
                ok = 0;
        int a = ok ? sweep_answer(r, i, rep[0], &given) : -1;
        if (a == 1)
            len += (size_t)snprintf(ids + len, cap - len, "%s%s", len > 1 ? "," : "",
                                    PQgetvalue(r, i, 0));
        else if (a == 0 && owed++ == 0)
            first_owed = i;
        if (a < 0) {
            failed = 1;
            if (rep[0] && rep[0]->type == REDIS_REPLY_ERROR)
                snprintf(e->err, sizeof(e->err), "release.lua: %.200s", rep[0]->str);
            else
                snprintf(e->err, sizeof(e->err), "%s", rcl_errstr(e->rc));
        }
        for (int k = 0; k < 3; k++)
            freeReplyObject(rep[k]);
    }
    if (owed)
        sk_log(SK_LOG_INFO, "release_owed", "order_id=%s event_id=%s count=%d",
               PQgetvalue(r, first_owed, 0), PQgetvalue(r, first_owed, 1), owed);
    PQclear(r);
    snprintf(ids + len, cap - len, "}");
    if (len > 1) {
        const char *p_ids[1] = {ids};
        if (sk_pg_exec(e->conn, "mark released", SQL_MARK, 1, p_ids, PGRES_COMMAND_OK, NULL,
                       e->err, sizeof(e->err)) != SK_PG_OK)
            failed = 1;
    }
    free(ids);
    if (failed) {
        rcl_free(e->rc); /* the rest of the pipeline goes with it */
        e->rc = NULL;
        return given ? given : -1;
    }
    return given;
}

long consumer_expiry_round(consumer_expiry *e, long *released)
{
    *released = 0;
    if (pg_ready(e) != 0)
        return -1;
    long expired = expire_due(e);
    if (expired < 0)
        return -1;
    atomic_fetch_add(&e->expired_total, (uint64_t)expired);
    long given = sweep(e);
    if (given > 0) {
        atomic_fetch_add(&e->released_total, (uint64_t)given);
        *released = given;
    }
    return given < 0 ? -1 : expired;
}

/* One round on the task's thread: the larger of the two counts decides whether the next
 * round starts at once (consumer_every.h). */
static long expiry_tick(void *arg)
{
    consumer_expiry *e = arg;
    long released;
    long expired = consumer_expiry_round(e, &released);
    if (expired < 0)
        sk_log(SK_LOG_WARN, "expiry_failed", "err=\"%s\"", e->err);
    else if (expired > 0 || released > 0)
        sk_log(SK_LOG_INFO, "expiry", "expired=%ld released=%ld", expired, released);
    return expired > released ? expired : released;
}

int consumer_expiry_start(consumer_expiry *e, char *err, size_t errsz)
{
    e->thread = consumer_every_start(expiry_tick, e, e->interval_ms, e->batch, err, errsz);
    return e->thread ? 0 : -1;
}

void consumer_expiry_free(consumer_expiry *e)
{
    if (!e)
        return;
    consumer_every_stop(e->thread);
    PQfinish(e->conn);
    rcl_free(e->rc);
    order_iwrite_free(e->iw);
    free(e->pg);
    free(e->redis_url);
    free(e);
}

consumer_expiry *consumer_expiry_start_cfg(const struct consumer_cfg *cfg, char *err, size_t errsz)
{
    consumer_expiry_cfg ec = {cfg->pg, cfg->redis_url, cfg->expiry_interval_ms, cfg->expiry_batch,
                              cfg->index_ttl_s};
    consumer_expiry *e = consumer_expiry_new(&ec);
    if (!e) {
        snprintf(err, errsz, "expiry: out of memory");
        return NULL;
    }
    if (consumer_expiry_start(e, err, errsz) != 0) {
        consumer_expiry_free(e);
        return NULL;
    }
    return e;
}
