/* order_reconcile: the reconciler thread. See order_reconcile.h for the design. */
#include "order_reconcile.h"
#include "order_msg.h"
#include "order_recon_rule.h"
#include "rcluster.h"
#include "rlock.h"
#include "sk_kafka_conf.h"
#include "sk_log.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define KAFKA_TIMEOUT_MS 3000

typedef int32_t partitioner_fn(const rd_kafka_topic_t *rkt, const void *key, size_t keylen,
                               int32_t partition_cnt, void *rkt_opaque, void *msg_opaque);

typedef order_recon_mark mark;

struct order_reconciler {
    const order_config *cfg;
    const sk_cfg_kv *props;
    const order_scripts *scripts;
    order_metrics *metrics;
    int64_t msg_timeout_ms; /* the producer's message.timeout.ms */
    partitioner_fn *part;   /* NULL: PART_ANY */

    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;

    rlock_client_t *locks;
    rlock_t *lock;
    int leader;
    rcl_ctx *rc; /* plain or cluster (cfg->redis_url), routed by rcluster */
    PGconn *pg;
    rd_kafka_t *rk;
    rd_kafka_topic_t *rkt;
    int32_t nparts;
    mark *marks;    /* nparts */
    int64_t *cutoff; /* nparts: entries with ts + timeout + margin <= cutoff may go */
    /* Live events' segments whose gate (stock key) is missing in Redis, and since when
     * we know. A segment of a segmented event (k > 1) also keeps its snapshot of the
     * other segments (reload_segment): taken at snap_ms (0: not yet), their stock summed,
     * the order ids of their pending units. */
    struct lost {
        uint64_t id;
        unsigned seg, k;
        int64_t since_ms, snap_ms;
        long long snap_stock;
        char **snap_ids;
        size_t nsnap;
    } *lost;
    int nlost;
};

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *prop(const sk_cfg_kv *props, const char *key)
{
    const char *v = NULL;
    for (const sk_cfg_kv *kv = props; kv; kv = kv->next) /* the last one wins */
        if (strcmp(kv->key, key) == 0)
            v = kv->value;
    return v;
}

/* Drops every connection; the next scan opens them again. */
static void disconnect(order_reconciler *r)
{
    rcl_free(r->rc);
    r->rc = NULL;
    if (r->pg)
        PQfinish(r->pg);
    r->pg = NULL;
}

static int connect_kafka(order_reconciler *r)
{
    char why[512];
    /* Only to read the writer group's committed offsets and the watermarks: it never
     * subscribes, never joins the group, never commits. */
    const char *const defaults[] = {"client.id", "seckill-order-reconciler", NULL};
    const char *const forced[] = {"group.id", r->cfg->reconcile_group, "enable.auto.commit", "false",
                                  NULL};
    rd_kafka_conf_t *conf = sk_kafka_conf_new(SK_KAFKA_CONSUMER, defaults, r->props, forced, why,
                                              sizeof(why));
    if (!conf)
        goto bad;
    r->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, why, sizeof(why));
    if (!r->rk)
        goto bad;
    conf = NULL;
    r->rkt = rd_kafka_topic_new(r->rk, r->cfg->topic, NULL);
    if (!r->rkt) {
        rd_kafka_destroy(r->rk);
        r->rk = NULL;
        snprintf(why, sizeof(why), "topic handle");
        goto bad;
    }
    return 0;
bad:
    if (conf)
        rd_kafka_conf_destroy(conf);
    sk_log(SK_LOG_WARN, "reconciler_kafka_failed", "err=\"%s\"", why);
    return -1;
}

/* Reads the topic's partition count (it may grow). @returns 0 or -1. */
static int refresh_partitions(order_reconciler *r)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(r->rk, 0, r->rkt, &md, KAFKA_TIMEOUT_MS);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        sk_log(SK_LOG_WARN, "reconciler_kafka_failed", "what=metadata err=\"%s\"", rd_kafka_err2str(e));
        return -1;
    }
    int32_t n = (md->topic_cnt == 1 && !md->topics[0].err) ? md->topics[0].partition_cnt : 0;
    rd_kafka_metadata_destroy(md);
    if (n <= 0) {
        sk_log(SK_LOG_WARN, "reconciler_kafka_failed", "what=metadata err=\"no such topic\"");
        return -1;
    }
    if (n != r->nparts) {
        mark *m = calloc((size_t)n, sizeof(*m));
        int64_t *c = calloc((size_t)n, sizeof(*c));
        if (!m || !c) {
            free(m);
            free(c);
            return -1;
        }
        free(r->marks);
        free(r->cutoff);
        r->marks = m;
        r->cutoff = c;
        r->nparts = n;
    }
    return 0;
}

/* Fills r->cutoff[p] for every partition (INT64_MIN: nothing may be cancelled there).
 * Order matters: the time, then the high watermark, then the committed offset; the
 * caller reads PostgreSQL after this. @returns 0 or -1.
 *
 * The high watermarks come from rd_kafka_offsets_for_times() with the timestamp -1
 * ("latest"), one ListOffsets request per leader, not rd_kafka_query_watermark_offsets():
 * before librdkafka 2.3.0 (Debian 12 ships 2.0.2) the latter never returns while a
 * partition's leader is down (librdkafka #2588, fixed by #4460), which froze the
 * reconciler, and with it SIGTERM, for as long as a dead broker stayed the leader of
 * record. offsets_for_times honours its timeout. */
static int compute_cutoffs(order_reconciler *r)
{
    rd_kafka_topic_partition_list_t *hw = rd_kafka_topic_partition_list_new(r->nparts);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(r->nparts);
    int rc = -1;
    if (!hw || !l)
        goto out;
    for (int32_t p = 0; p < r->nparts; p++) {
        rd_kafka_topic_partition_list_add(hw, r->cfg->topic, p)->offset = RD_KAFKA_OFFSET_END;
        rd_kafka_topic_partition_list_add(l, r->cfg->topic, p);
    }
    int64_t t = wall_ms();
    rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(r->rk, hw, KAFKA_TIMEOUT_MS);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        sk_log(SK_LOG_WARN, "reconciler_kafka_failed", "what=watermarks err=\"%s\"", rd_kafka_err2str(e));
        goto out;
    }
    for (int i = 0; i < hw->cnt; i++) {
        if (hw->elems[i].err || hw->elems[i].offset < 0) {
            sk_log(SK_LOG_WARN, "reconciler_kafka_failed", "what=watermarks partition=%d err=\"%s\"",
                   (int)hw->elems[i].partition,
                   hw->elems[i].err ? rd_kafka_err2str(hw->elems[i].err) : "no offset");
            goto out;
        }
    }
    e = rd_kafka_committed(r->rk, l, KAFKA_TIMEOUT_MS);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        sk_log(SK_LOG_WARN, "reconciler_kafka_failed", "what=committed err=\"%s\"", rd_kafka_err2str(e));
        goto out;
    }
    for (int i = 0; i < l->cnt; i++) {
        int32_t p = l->elems[i].partition;
        rd_kafka_topic_partition_t *h = rd_kafka_topic_partition_list_find(hw, r->cfg->topic, p);
        if (p < 0 || p >= r->nparts || !h)
            continue;
        int64_t c = l->elems[i].err ? -1 : l->elems[i].offset;
        r->cutoff[p] = order_recon_cutoff(&r->marks[p], t, h->offset, c);
    }
    rc = 0;
out:
    if (l)
        rd_kafka_topic_partition_list_destroy(l);
    if (hw)
        rd_kafka_topic_partition_list_destroy(hw);
    return rc;
}

static int64_t event_cutoff(order_reconciler *r, uint64_t event_id)
{
    if (r->part) {
        char key[24];
        size_t klen = (size_t)snprintf(key, sizeof(key), "%" PRIu64, event_id);
        int32_t p = r->part(r->rkt, key, klen, r->nparts, NULL, NULL);
        if (p >= 0 && p < r->nparts)
            return r->cutoff[p];
    }
    int64_t min = INT64_MAX;
    for (int32_t p = 0; p < r->nparts; p++)
        if (r->cutoff[p] < min)
            min = r->cutoff[p];
    return min;
}

/* EVALSHA (rcluster loads the script on a node that answers NOSCRIPT). @returns the
 * integer answer, or INT64_MIN on error (r->rc is dropped on an I/O error). */
static long long run_script(order_reconciler *r, int script, int nkeys, const char **keys, int nargs,
                            const char **args)
{
    const char **argv = calloc((size_t)(3 + nkeys + nargs), sizeof(*argv));
    if (!argv)
        return INT64_MIN;
    size_t n = 0;
    char nk[8];
    snprintf(nk, sizeof(nk), "%d", nkeys);
    argv[n++] = "EVALSHA";
    argv[n++] = r->scripts->sha[script];
    argv[n++] = nk;
    for (int i = 0; i < nkeys; i++)
        argv[n++] = keys[i];
    for (int i = 0; i < nargs; i++)
        argv[n++] = args[i];
    redisReply *rep = rcl_command_argv(r->rc, (int)n, argv, NULL);
    free(argv);
    long long v = INT64_MIN;
    if (!rep) {
        sk_log(SK_LOG_WARN, "reconciler_redis_failed", "err=\"%s\"", rcl_errstr(r->rc));
        rcl_free(r->rc);
        r->rc = NULL;
        return v;
    }
    if (rep->type == REDIS_REPLY_INTEGER)
        v = rep->integer;
    else
        sk_log(SK_LOG_WARN, "reconciler_redis_failed", "err=\"%s\"",
               rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
    freeReplyObject(rep);
    return v;
}

/* One event: its pending entries, checked against PostgreSQL. @returns 0 or -1 (a
 * connection failed: the scan stops, the next one starts again). */
static int reconcile_event(order_reconciler *r, uint64_t event_id, unsigned seg, int *confirmed,
                           int *cancelled)
{
    char kstock[ORDER_KEY_MAX], kbuyers[ORDER_KEY_MAX], kpending[ORDER_KEY_MAX];
    order_key_seg(event_id, seg, ORDER_KEY_STOCK, kstock, sizeof(kstock));
    order_key_seg(event_id, seg, ORDER_KEY_BUYERS, kbuyers, sizeof(kbuyers));
    order_key_seg(event_id, seg, ORDER_KEY_PENDING, kpending, sizeof(kpending));
    const char *hargv[2] = {"HGETALL", kpending};
    redisReply *h = rcl_command_argv(r->rc, 2, hargv, NULL);
    if (!h) {
        sk_log(SK_LOG_WARN, "reconciler_redis_failed", "err=\"%s\"", rcl_errstr(r->rc));
        rcl_free(r->rc);
        r->rc = NULL;
        return -1;
    }
    int rc = 0;
    if (h->type != REDIS_REPLY_ARRAY || h->elements < 2)
        goto out;
    /* Which of these orders are in PostgreSQL: one query, ids as a bigint[] literal. */
    size_t n = h->elements / 2;
    char *arr = malloc(n * 21 + 3);
    if (!arr) {
        rc = -1;
        goto out;
    }
    size_t off = 0;
    arr[off++] = '{';
    for (size_t i = 0; i < n; i++) {
        const char *id = h->element[2 * i]->str;
        if (strspn(id, "0123456789") != strlen(id) || strlen(id) > 20 || !*id)
            continue; /* not ours: never touched */
        off += (size_t)sprintf(arr + off, "%s%s", off > 1 ? "," : "", id);
    }
    arr[off++] = '}';
    arr[off] = 0;
    const int64_t cutoff = event_cutoff(r, event_id);
    const char *params[1] = {arr}; /* $1: the pending order ids */
    PGresult *res = PQexecParams(r->pg, "SELECT order_id::text FROM seckill_order WHERE order_id = ANY($1::bigint[])",
                                 1, NULL, params, NULL, NULL, 0);
    free(arr);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        sk_log(SK_LOG_WARN, "reconciler_pg_failed", "err=\"%s\"", PQerrorMessage(r->pg));
        PQclear(res);
        rc = -1;
        goto out;
    }
    const int64_t wait_ms = r->msg_timeout_ms + r->cfg->reconcile_margin_ms;
    for (size_t i = 0; i < n && r->rc; i++) {
        const char *id = h->element[2 * i]->str, *val = h->element[2 * i + 1]->str;
        int in_pg = 0;
        for (int j = 0; j < PQntuples(res) && !in_pg; j++)
            in_pg = strcmp(PQgetvalue(res, j, 0), id) == 0;
        if (in_pg) {
            const char *keys[1] = {kpending}, *args[1] = {id};
            if (run_script(r, ORDER_SCRIPT_CONFIRM, 1, keys, 1, args) == 1)
                (*confirmed)++;
            continue;
        }
        /* val is "user_id:ts_ms", or "user_id:ts_ms:c" for the claim of a segmented
         * event's borrowed unit (reserve.lua): cancel.lua releases a claim without stock,
         * and the borrowed unit's own entry, in its lending segment, is an ordinary one */
        const char *colon = strchr(val, ':');
        if (!colon || colon == val)
            continue;
        char user[24];
        size_t ulen = (size_t)(colon - val);
        if (ulen >= sizeof(user))
            continue;
        memcpy(user, val, ulen);
        user[ulen] = 0;
        char *end;
        errno = 0;
        long long ts = strtoll(colon + 1, &end, 10);
        if (errno || (*end && strcmp(end, ":c") != 0) || end == colon + 1)
            continue;
        if (!order_recon_may_cancel(ts, cutoff, wait_ms))
            continue; /* it may still land */
        const char *keys[3] = {kstock, kbuyers, kpending}, *args[2] = {id, user};
        if (run_script(r, ORDER_SCRIPT_CANCEL, 3, keys, 2, args) == 1) {
            (*cancelled)++;
            sk_log(SK_LOG_INFO, "reconciler_cancelled",
                   "event_id=%" PRIu64 " segment=%u order_id=%s user_id=%s age_ms=%lld%s", event_id,
                   seg, id, user, (long long)(wall_ms() - ts), *end ? " claim=yes" : "");
        }
    }
    PQclear(res);
    if (!r->rc)
        rc = -1;
out:
    freeReplyObject(h);
    return rc;
}

/* The event's lock (the loader's), its name into name; NULL when busy or out of memory. */
static rlock_t *event_lock(order_reconciler *r, uint64_t event_id, char *name, size_t namesz)
{
    snprintf(name, namesz, "seckill:{e%" PRIu64 "}:lock", event_id);
    rlock_t *lock = rlock_new(r->locks, name, RLOCK_SIMPLE);
    if (lock && rlock_try_lock(lock, 1000, 10000, NULL) != RLOCK_OK) {
        sk_log(SK_LOG_DEBUG, "event_lock_busy", "lock=%s err=\"%s\"", name, rlock_errstr(lock));
        rlock_free(lock);
        return NULL;
    }
    return lock;
}

static void event_unlock(rlock_t *lock, const char *name)
{
    if (rlock_unlock(lock) != RLOCK_OK)
        sk_log(SK_LOG_WARN, "reconciler_lock_failed", "lock=%s err=\"%s\"", name, rlock_errstr(lock));
    rlock_free(lock);
}

/* Rebuilds a lost gate from PostgreSQL under the event's lock (the loader's lock), once
 * compute_cutoffs showed that everything sold before the loss is in PostgreSQL: stock =
 * stock_left, buyers = the users of its created orders. @returns 1 reloaded, 0 not
 * (loaded meanwhile, lock busy), -1 a connection failed. */
static int reload_event(order_reconciler *r, uint64_t event_id)
{
    char name[ORDER_KEY_MAX], a[24];
    rlock_t *lock = event_lock(r, event_id, name, sizeof(name));
    if (!lock)
        return 0;
    int rc = -1;
    snprintf(a, sizeof(a), "%" PRIu64, event_id);
    const char *params[1] = {a}; /* $1: the event id */
    PGresult *e = PQexecParams(r->pg,
                               "SELECT stock_left, (extract(epoch FROM starts_at) * 1000)::bigint, "
                               "(extract(epoch FROM ends_at) * 1000)::bigint, per_user_limit "
                               "FROM seckill_event WHERE id = $1",
                               1, NULL, params, NULL, NULL, 0);
    PGresult *u = PQexecParams(r->pg,
                               "SELECT user_id::text FROM seckill_order "
                               "WHERE event_id = $1 AND status = 'created'",
                               1, NULL, params, NULL, NULL, 0);
    const char **argv = NULL;
    if (PQresultStatus(e) != PGRES_TUPLES_OK || PQresultStatus(u) != PGRES_TUPLES_OK) {
        sk_log(SK_LOG_WARN, "reconciler_pg_failed", "err=\"%s\"", PQerrorMessage(r->pg));
        goto out;
    }
    rc = 0;
    if (PQntuples(e) != 1)
        goto out;
    int nu = PQntuples(u);
    argv = calloc((size_t)nu + 4, sizeof(*argv));
    if (!argv)
        goto out;
    for (int i = 0; i < 4; i++)
        argv[i] = PQgetvalue(e, 0, i);
    for (int i = 0; i < nu; i++)
        argv[4 + i] = PQgetvalue(u, i, 0);
    char ks[ORDER_KEY_MAX], km[ORDER_KEY_MAX], kb[ORDER_KEY_MAX];
    order_key(event_id, ORDER_KEY_STOCK, ks, sizeof(ks));
    order_key(event_id, ORDER_KEY_META, km, sizeof(km));
    order_key(event_id, ORDER_KEY_BUYERS, kb, sizeof(kb));
    const char *keys[3] = {ks, km, kb};
    long long v = run_script(r, ORDER_SCRIPT_EVENT_RELOAD, 3, keys, 4 + nu, argv);
    if (v == 1) {
        rc = 1;
        sk_log(SK_LOG_INFO, "event_reloaded", "event_id=%" PRIu64 " stock=%s buyers=%d", event_id,
               argv[0], nu);
    } else if (!r->rc)
        rc = -1;
out:
    free(argv);
    PQclear(e);
    PQclear(u);
    event_unlock(lock, name);
    return rc;
}

static void snap_drop(struct lost *l)
{
    for (size_t j = 0; j < l->nsnap; j++)
        free(l->snap_ids[j]);
    free(l->snap_ids);
    l->snap_ids = NULL;
    l->nsnap = 0;
    l->snap_ms = 0;
}

static void lost_free(struct lost *l, int n)
{
    for (int i = 0; l && i < n; i++)
        snap_drop(&l[i]);
    free(l);
}

/* A lost segment's snapshot of the other segments of its event (issue 19): their stock
 * summed (a missing one counts 0) and the order ids of their pending units (not claims),
 * at snap_ms, read after them. Once everything produced before snap_ms is in PostgreSQL
 * (the reload waits for that), every unit the snapshot shows taken is either in
 * stock_left's count or one of these ids not in PostgreSQL, so
 *   lost segment's stock = stock_left - snapshot stock - (ids not created in PostgreSQL)
 * and what the others sell after the snapshot only makes it smaller: never oversold.
 * @returns 0, or -1 when the connection failed. */
static int take_snapshot(order_reconciler *r, struct lost *l)
{
    long long sum = 0;
    char **ids = NULL;
    size_t n = 0, cap = 0;
    for (unsigned j = 0; j < l->k; j++) {
        if (j == l->seg)
            continue;
        char ks[ORDER_KEY_MAX], kp[ORDER_KEY_MAX];
        order_key_seg(l->id, j, ORDER_KEY_STOCK, ks, sizeof(ks));
        order_key_seg(l->id, j, ORDER_KEY_PENDING, kp, sizeof(kp));
        const char *g[2] = {"GET", ks}, *h[2] = {"HGETALL", kp};
        redisReply *a = rcl_command_argv(r->rc, 2, g, NULL);
        redisReply *b = a ? rcl_command_argv(r->rc, 2, h, NULL) : NULL;
        int ok = b && b->type == REDIS_REPLY_ARRAY;
        if (ok && a->type == REDIS_REPLY_STRING)
            sum += strtoll(a->str, NULL, 10);
        for (size_t i = 0; ok && i + 1 < b->elements; i += 2) {
            const redisReply *v = b->element[i + 1];
            if (v->type != REDIS_REPLY_STRING || (v->len >= 2 && strcmp(v->str + v->len - 2, ":c") == 0))
                continue;
            if (n == cap) {
                char **m = realloc(ids, (cap = cap ? 2 * cap : 64) * sizeof(*ids));
                ok = m != NULL;
                if (m)
                    ids = m;
            }
            if (ok && !(ids[n++] = strdup(b->element[i]->str)))
                ok = 0, n--;
        }
        if (a)
            freeReplyObject(a);
        if (b)
            freeReplyObject(b);
        if (!ok) {
            sk_log(SK_LOG_WARN, "reconciler_redis_failed", "err=\"%s\"", rcl_errstr(r->rc));
            for (size_t i = 0; i < n; i++)
                free(ids[i]);
            free(ids);
            return -1;
        }
    }
    l->snap_ms = wall_ms();
    l->snap_stock = sum;
    l->snap_ids = ids;
    l->nsnap = n;
    sk_log(SK_LOG_INFO, "segment_snapshot", "event_id=%" PRIu64 " segment=%u others_stock=%lld others_pending=%zu",
           l->id, l->seg, sum, n);
    return 0;
}

/* Rebuilds a lost segment from PostgreSQL and its snapshot (take_snapshot), under the
 * event's lock: its stock as take_snapshot says, its buyers the users of created orders
 * whose home it is, K in its meta before event_reload.lua writes the stock key.
 * @returns 1 reloaded, 0 not, -1 a connection failed. */
static int reload_segment(order_reconciler *r, struct lost *l)
{
    char name[ORDER_KEY_MAX], a[24];
    rlock_t *lock = event_lock(r, l->id, name, sizeof(name));
    if (!lock)
        return 0;
    int rc = -1;
    snprintf(a, sizeof(a), "%" PRIu64, l->id);
    /* the snapshot's ids as a bigint[] literal */
    char *arr = malloc(l->nsnap * 22 + 3);
    const char **argv = NULL;
    PGresult *e = NULL, *u = NULL, *c = NULL;
    if (!arr)
        goto out;
    size_t off = 0;
    arr[off++] = '{';
    for (size_t i = 0; i < l->nsnap; i++)
        if (strspn(l->snap_ids[i], "0123456789") == strlen(l->snap_ids[i]) && strlen(l->snap_ids[i]) <= 20 &&
            l->snap_ids[i][0])
            off += (size_t)sprintf(arr + off, "%s%s", off > 1 ? "," : "", l->snap_ids[i]);
    arr[off++] = '}';
    arr[off] = 0;
    const char *p1[1] = {a}, *p2[2] = {a, arr};
    e = PQexecParams(r->pg,
                     "SELECT stock_left, (extract(epoch FROM starts_at) * 1000)::bigint, "
                     "(extract(epoch FROM ends_at) * 1000)::bigint, per_user_limit "
                     "FROM seckill_event WHERE id = $1",
                     1, NULL, p1, NULL, NULL, 0);
    u = PQexecParams(r->pg, "SELECT user_id::text FROM seckill_order WHERE event_id = $1 AND status = 'created'",
                     1, NULL, p1, NULL, NULL, 0);
    c = PQexecParams(r->pg,
                     "SELECT count(*) FROM seckill_order WHERE event_id = $1 AND status = 'created' "
                     "AND order_id = ANY($2::bigint[])",
                     2, NULL, p2, NULL, NULL, 0);
    if (PQresultStatus(e) != PGRES_TUPLES_OK || PQresultStatus(u) != PGRES_TUPLES_OK ||
        PQresultStatus(c) != PGRES_TUPLES_OK) {
        sk_log(SK_LOG_WARN, "reconciler_pg_failed", "err=\"%s\"", PQerrorMessage(r->pg));
        goto out;
    }
    rc = 0;
    if (PQntuples(e) != 1)
        goto out;
    long long in_pg = strtoll(PQgetvalue(c, 0, 0), NULL, 10);
    long long stock = strtoll(PQgetvalue(e, 0, 0), NULL, 10) - l->snap_stock - ((long long)l->nsnap - in_pg);
    if (stock < 0)
        stock = 0;
    char stock_s[24], k_s[12];
    snprintf(stock_s, sizeof(stock_s), "%lld", stock);
    snprintf(k_s, sizeof(k_s), "%u", l->k);
    int nu = PQntuples(u), nb = 0;
    argv = calloc((size_t)nu + 4, sizeof(*argv));
    if (!argv)
        goto out;
    argv[0] = stock_s;
    for (int i = 1; i < 4; i++)
        argv[i] = PQgetvalue(e, 0, i);
    for (int i = 0; i < nu; i++) {
        const char *user = PQgetvalue(u, i, 0);
        if (order_seg_home(strtoull(user, NULL, 10), l->k) == l->seg)
            argv[4 + nb++] = user;
    }
    char ks[ORDER_KEY_MAX], km[ORDER_KEY_MAX], kb[ORDER_KEY_MAX];
    order_key_seg(l->id, l->seg, ORDER_KEY_STOCK, ks, sizeof(ks));
    order_key_seg(l->id, l->seg, ORDER_KEY_META, km, sizeof(km));
    order_key_seg(l->id, l->seg, ORDER_KEY_BUYERS, kb, sizeof(kb));
    /* K first: reserve.lua answers "not loaded" until the stock key exists, and then
     * must find the event's K in this segment's meta */
    const char *hs[4] = {"HSET", km, "segments", k_s};
    redisReply *h = rcl_command_argv(r->rc, 4, hs, NULL);
    if (!h) {
        rc = -1;
        goto out;
    }
    freeReplyObject(h);
    const char *keys[3] = {ks, km, kb};
    long long v = run_script(r, ORDER_SCRIPT_EVENT_RELOAD, 3, keys, 4 + nb, argv);
    if (v == 1) {
        rc = 1;
        sk_log(SK_LOG_INFO, "event_reloaded",
               "event_id=%" PRIu64 " segment=%u stock=%lld buyers=%d others_stock=%lld others_pending=%zu in_pg=%lld",
               l->id, l->seg, stock, nb, l->snap_stock, l->nsnap, in_pg);
    } else if (!r->rc)
        rc = -1;
out:
    free(arr);
    free(argv);
    PQclear(e);
    PQclear(u);
    PQclear(c);
    event_unlock(lock, name);
    return rc;
}

/* Takes (or keeps) the lock. @returns 1 leader now, 0 not. */
static int lead(order_reconciler *r)
{
    char err[256];
    if (!r->locks) {
        rlock_client_opts o = {.connect_timeout_ms = (int)r->cfg->redis_timeout_ms,
                               .watchdog_timeout_ms = (int)r->cfg->reconcile_lock_timeout_ms};
        r->locks = rlock_client_new(r->cfg->redis_url, &o, err, sizeof(err));
        if (!r->locks) {
            sk_log(SK_LOG_WARN, "reconciler_lock_failed", "err=\"%s\"", err);
            return 0;
        }
    }
    if (!r->lock && !(r->lock = rlock_new(r->locks, r->cfg->reconcile_lock, RLOCK_SIMPLE)))
        return 0;
    if (r->leader && rlock_is_held(r->lock))
        return 1;
    if (r->leader) {
        /* Expired, deleted (Redis flushed or failed over) or taken: this handle still
         * counts itself the holder, so a fresh one competes again. */
        sk_log(SK_LOG_WARN, "reconciler_lock_lost", "lock=%s", r->cfg->reconcile_lock);
        rlock_unlock(r->lock); /* answers NOT_HELD; clears the handle's hold */
        rlock_free(r->lock);
        r->lock = rlock_new(r->locks, r->cfg->reconcile_lock, RLOCK_SIMPLE);
        r->leader = 0;
        if (!r->lock)
            return 0;
    }
    int lrc = rlock_try_lock(r->lock, 0, 0, NULL); /* lease 0: the watchdog keeps it */
    if (lrc == RLOCK_OK) {
        r->leader = 1;
        sk_log(SK_LOG_INFO, "reconciler_leader", "lock=%s watchdog_ms=%lld", r->cfg->reconcile_lock,
               r->cfg->reconcile_lock_timeout_ms);
    } else if (lrc != RLOCK_ERR_TIMEOUT)
        sk_log(SK_LOG_WARN, "reconciler_lock_failed", "err=\"%s\"", rlock_errstr(r->lock));
    return r->leader;
}

static void scan(order_reconciler *r)
{
    int leader = lead(r);
    atomic_store_explicit(&r->metrics->reconcile_leader, leader, memory_order_relaxed);
    if (!leader)
        return;
    char err[256];
    if (!r->rc) {
        struct timeval tv = {(time_t)(r->cfg->redis_timeout_ms / 1000),
                             (suseconds_t)((r->cfg->redis_timeout_ms % 1000) * 1000)};
        r->rc = rcl_connect(r->cfg->redis_url, tv, err, sizeof(err));
        if (!r->rc) {
            sk_log(SK_LOG_WARN, "reconciler_redis_failed", "err=\"%s\"", err);
            return;
        }
        for (int i = 0; i < ORDER_SCRIPT_COUNT; i++) {
            char sha[41]; /* registered for rcluster's NOSCRIPT fallback */
            if (rcl_script_add(r->rc, r->scripts->body[i], sha) != 0) {
                disconnect(r);
                return;
            }
        }
    }
    if (!r->pg || PQstatus(r->pg) != CONNECTION_OK) {
        if (r->pg)
            PQfinish(r->pg);
        r->pg = PQconnectdb(r->cfg->pg);
        if (PQstatus(r->pg) != CONNECTION_OK) {
            /* PQerrorMessage never holds the password */
            sk_log(SK_LOG_WARN, "reconciler_pg_failed", "err=\"%s\"", PQerrorMessage(r->pg));
            PQfinish(r->pg);
            r->pg = NULL;
            return;
        }
    }
    if (!r->rk && connect_kafka(r) != 0)
        return;
    /* Events that may still have reservations (their sale ended less than horizon ago),
     * and whether the sale is still on (a lost gate is rebuilt only then). */
    char hz[24];
    snprintf(hz, sizeof(hz), "%lld", r->cfg->reconcile_horizon_s);
    const char *params[1] = {hz}; /* $1: horizon in seconds */
    PGresult *ev = PQexecParams(r->pg,
                                "SELECT id::text, ends_at > now(), segments FROM seckill_event "
                                "WHERE ends_at > now() - make_interval(secs => $1::int)",
                                1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(ev) != PGRES_TUPLES_OK) {
        sk_log(SK_LOG_WARN, "reconciler_pg_failed", "err=\"%s\"", PQerrorMessage(r->pg));
        PQclear(ev);
        PQfinish(r->pg);
        r->pg = NULL;
        return;
    }
    /* Only events with something pending, or a lost gate, cost a Kafka round trip. Each
     * segment of a segmented event (issue 19) is looked at alone: its keys are in its
     * own slot. */
    int nev = PQntuples(ev), any = 0, nlost = 0, nseg = 0;
    for (int i = 0; i < nev; i++) {
        int k = atoi(PQgetvalue(ev, i, 2));
        nseg += k > 1 && k <= ORDER_SEGMENTS_MAX ? k : 1;
    }
    struct pend {
        uint64_t id;
        unsigned seg;
    } *ids = calloc((size_t)nseg + 1, sizeof(*ids));
    struct lost *lost = calloc((size_t)nseg + 1, sizeof(*lost));
    if (!ids || !lost) {
        free(ids);
        free(lost);
        PQclear(ev);
        return;
    }
    int64_t now = wall_ms();
    for (int i = 0; i < nev && r->rc; i++) {
        uint64_t id = strtoull(PQgetvalue(ev, i, 0), NULL, 10);
        int live = PQgetvalue(ev, i, 1)[0] == 't';
        int kk = atoi(PQgetvalue(ev, i, 2));
        unsigned k = kk > 1 && kk <= ORDER_SEGMENTS_MAX ? (unsigned)kk : 1;
        for (unsigned seg = 0; seg < k && r->rc; seg++) {
            char kp[ORDER_KEY_MAX], ks[ORDER_KEY_MAX];
            order_key_seg(id, seg, ORDER_KEY_PENDING, kp, sizeof(kp));
            order_key_seg(id, seg, ORDER_KEY_STOCK, ks, sizeof(ks));
            /* One round trip: both keys are in the segment's slot. */
            const char *hl[2] = {"HLEN", kp}, *ex[2] = {"EXISTS", ks};
            redisReply *n = NULL, *x = NULL;
            if (rcl_append_argv(r->rc, 2, hl, NULL) != 0 || rcl_append_argv(r->rc, 2, ex, NULL) != 0 ||
                rcl_get_reply(r->rc, &n) != 0 || rcl_get_reply(r->rc, &x) != 0) {
                sk_log(SK_LOG_WARN, "reconciler_redis_failed", "err=\"%s\"", rcl_errstr(r->rc));
                if (n)
                    freeReplyObject(n);
                disconnect(r);
                break;
            }
            if (n->type == REDIS_REPLY_INTEGER && n->integer > 0)
                ids[any++] = (struct pend){id, seg};
            if (live && x->type == REDIS_REPLY_INTEGER && x->integer == 0) {
                /* Known lost since an earlier scan: keep that time (the earliest is what
                 * the wait below is counted from) and the snapshot taken since. */
                struct lost *l = &lost[nlost++];
                *l = (struct lost){.id = id, .seg = seg, .k = k, .since_ms = now};
                for (int j = 0; j < r->nlost; j++)
                    if (r->lost[j].id == id && r->lost[j].seg == seg) {
                        struct lost *o = &r->lost[j];
                        l->since_ms = o->since_ms;
                        l->snap_ms = o->snap_ms;
                        l->snap_stock = o->snap_stock;
                        l->snap_ids = o->snap_ids;
                        l->nsnap = o->nsnap;
                        o->snap_ids = NULL;
                        o->nsnap = 0;
                    }
                if (l->since_ms == now)
                    sk_log(SK_LOG_WARN, "event_gate_lost", "event_id=%" PRIu64 " segment=%u", id, seg);
            }
            freeReplyObject(n);
            freeReplyObject(x);
        }
    }
    PQclear(ev);
    lost_free(r->lost, r->nlost);
    r->lost = lost;
    r->nlost = nlost;
    int confirmed = 0, cancelled = 0, reloaded = 0;
    if ((any || nlost) && r->rc && refresh_partitions(r) == 0 && compute_cutoffs(r) == 0) {
        for (int i = 0; i < any; i++)
            if (reconcile_event(r, ids[i].id, ids[i].seg, &confirmed, &cancelled) != 0) {
                disconnect(r);
                break;
            }
        const int64_t wait_ms = r->msg_timeout_ms + r->cfg->reconcile_margin_ms;
        for (int i = 0; i < nlost && r->rc && r->pg; i++) {
            struct lost *l = &lost[i];
            int rr;
            if (l->k > 1) {
                /* one lost segment of an event at a time, the lowest first: its snapshot
                 * counts the others (a lost one as 0) */
                if (i > 0 && lost[i - 1].id == l->id) {
                    snap_drop(l); /* taken while that one was live: stale once it is rebuilt */
                    continue;
                }
                if (!l->snap_ms) {
                    if (take_snapshot(r, l) != 0) {
                        disconnect(r);
                        break;
                    }
                    continue;
                }
                if (!order_recon_may_cancel(l->snap_ms, event_cutoff(r, l->id), wait_ms)) {
                    sk_log(SK_LOG_DEBUG, "segment_wait", "event_id=%" PRIu64 " segment=%u snap_ms=%lld cutoff=%lld",
                           l->id, l->seg, (long long)l->snap_ms, (long long)event_cutoff(r, l->id));
                    continue; /* what was sold before the snapshot may still reach PostgreSQL */
                }
                rr = reload_segment(r, l);
            } else {
                if (!order_recon_may_cancel(l->since_ms, event_cutoff(r, l->id), wait_ms))
                    continue; /* what was sold before the loss may still reach PostgreSQL */
                rr = reload_event(r, l->id);
            }
            if (rr > 0)
                reloaded++;
            else if (rr < 0) {
                disconnect(r);
                break;
            }
        }
    }
    free(ids);
    atomic_fetch_add_explicit(&r->metrics->reconcile_confirmed, (uint64_t)confirmed, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->metrics->reconcile_cancelled, (uint64_t)cancelled, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->metrics->reconcile_reloaded, (uint64_t)reloaded, memory_order_relaxed);
    if (confirmed || cancelled || reloaded)
        sk_log(SK_LOG_INFO, "reconciled", "events=%d confirmed=%d cancelled=%d reloaded=%d", any,
               confirmed, cancelled, reloaded);
}

static void *reconcile_main(void *arg)
{
    order_reconciler *r = arg;
    pthread_mutex_lock(&r->mu);
    while (!r->stop) {
        pthread_mutex_unlock(&r->mu);
        scan(r);
        pthread_mutex_lock(&r->mu);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        int64_t ns = until.tv_nsec + (r->cfg->reconcile_interval_ms % 1000) * 1000000;
        until.tv_sec += r->cfg->reconcile_interval_ms / 1000 + ns / 1000000000;
        until.tv_nsec = ns % 1000000000;
        while (!r->stop && pthread_cond_timedwait(&r->cv, &r->mu, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

static partitioner_fn *partitioner_by_name(const char *name, int *ok)
{
    static const struct {
        const char *name;
        partitioner_fn *fn;
    } tab[] = {
        {"consistent_random", rd_kafka_msg_partitioner_consistent_random},
        {"consistent", rd_kafka_msg_partitioner_consistent},
        {"murmur2_random", rd_kafka_msg_partitioner_murmur2_random},
        {"murmur2", rd_kafka_msg_partitioner_murmur2},
        {"fnv1a_random", rd_kafka_msg_partitioner_fnv1a_random},
        {"fnv1a", rd_kafka_msg_partitioner_fnv1a},
    };
    *ok = 1;
    if (!name)
        return rd_kafka_msg_partitioner_consistent_random; /* librdkafka's default */
    for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
        if (strcmp(tab[i].name, name) == 0)
            return tab[i].fn;
    *ok = 0; /* random: an event's orders spread over every partition */
    return NULL;
}

order_reconciler *order_reconciler_start(const order_config *cfg, const sk_cfg_kv *props,
                                         const order_scripts *scripts, order_metrics *metrics,
                                         char *err, size_t errsz)
{
    order_reconciler *r = calloc(1, sizeof(*r));
    if (!r) {
        snprintf(err, errsz, "out of memory");
        return NULL;
    }
    r->cfg = cfg;
    r->props = props;
    r->scripts = scripts;
    r->metrics = metrics;
    /* The producer's default (order_kafka.c) unless kafka.* says otherwise. */
    const char *mt = prop(props, "message.timeout.ms");
    if (!mt)
        mt = prop(props, "delivery.timeout.ms");
    r->msg_timeout_ms = mt ? strtoll(mt, NULL, 10) : 10000;
    if (r->msg_timeout_ms <= 0) /* 0 is librdkafka's "infinite": never certain */
        r->msg_timeout_ms = INT64_MAX / 4;
    int ok;
    r->part = partitioner_by_name(prop(props, "partitioner"), &ok);
    (void)ok;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    if (pthread_create(&r->thread, NULL, reconcile_main, r) != 0) {
        snprintf(err, errsz, "cannot start the reconciler thread");
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cv);
        free(r);
        return NULL;
    }
    return r;
}

void order_reconciler_stop(order_reconciler *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    if (r->leader && r->lock)
        rlock_unlock(r->lock); /* the next instance takes over at its next scan */
    rlock_free(r->lock);
    rlock_client_free(r->locks);
    disconnect(r);
    if (r->rkt)
        rd_kafka_topic_destroy(r->rkt);
    if (r->rk)
        rd_kafka_destroy(r->rk);
    free(r->marks);
    free(r->cutoff);
    lost_free(r->lost, r->nlost);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}
