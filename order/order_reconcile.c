/* order_reconcile: the reconciler thread: the leader lock, Redis (the pending hashes and
 * the gate scripts) and the order of a scan. Its PostgreSQL and Kafka clients are
 * order_recon_pg and order_recon_kafka, its decisions order_recon_rule. See
 * order_reconcile.h for the design. */
#include "order_reconcile.h"
#include "order_msg.h"
#include "order_recon_kafka.h"
#include "order_recon_expire.h"
#include "order_recon_pg.h"
#include "order_recon_rule.h"
#include "order_time.h"
#include "rcluster.h"
#include "rlock.h"
#include "sk_log.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

struct order_reconciler {
    const order_config *cfg;
    const order_scripts *scripts;
    order_metrics *metrics;
    int64_t wait_ms; /* the producer's message.timeout.ms + reconcile.margin_ms */

    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;

    rlock_client_t *locks;
    rlock_t *lock;
    int leader;
    rcl_ctx *rc; /* plain or cluster (cfg->redis_url), routed by rcluster */
    order_recon_pg *pg;
    order_recon_kafka *kafka;
    order_recon_lost *lost; /* live events' segments whose gate is missing in Redis */
    int nlost;
    order_recon_expire *expire; /* the clean-up after a sale (issue 32 item 5) */
};

/* One segment of an event (segment 0 of a K = 1 event: the event's own keys). */
typedef struct recon_seg {
    uint64_t id;
    unsigned seg;
} recon_seg;

/* What one scan did, for the metrics and the log line. */
typedef struct scan_counts {
    int confirmed, cancelled, reloaded;
} scan_counts;

/* Drops the Redis and PostgreSQL connections; the next scan opens them again. */
static void disconnect(order_reconciler *r)
{
    rcl_free(r->rc);
    r->rc = NULL;
    order_recon_pg_disconnect(r->pg);
}

/* Drops Redis after a failed command (logged with its error). */
static void redis_failed(order_reconciler *r)
{
    sk_log(SK_LOG_WARN, "reconciler_redis_failed", "err=\"%s\"", rcl_errstr(r->rc));
    rcl_free(r->rc);
    r->rc = NULL;
}

/* EVALSHA (rcluster loads the script on a node that answers NOSCRIPT). @returns the
 * integer answer, or INT64_MIN on error (r->rc is dropped on an I/O error). */
static long long run_script(order_reconciler *r, int script, int nkeys,
                            const char *const *keys, int nargs, const char *const *args)
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
        redis_failed(r);
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

/* One pending entry of segment s (field id, value "user_id:ts_ms", or "user_id:ts_ms:c"
 * for the claim of a segmented event's borrowed unit: cancel.lua releases a claim
 * without stock, and the borrowed unit's own entry, in its lender, is an ordinary one;
 * ":q" before it for q > 1 units, which cancel.lua reads itself), its order stored or not.
 * keys: stock, buyers, pending, units (cancel.lua's). */
static void settle_entry(order_reconciler *r, recon_seg s, const char *const keys[4],
                         const char *id, const char *val, int stored, int64_t cutoff,
                         scan_counts *sc)
{
    char user[24];
    int64_t ts = 0;
    int claim = 0;
    if (!stored && order_recon_pending_parse(val, user, sizeof(user), &ts, &claim) != 0)
        return; /* malformed: left alone */
    switch (order_recon_decide(stored, ts, cutoff, r->wait_ms)) {
    case ORDER_RECON_CONFIRM: {
        const char *k[1] = {keys[2]}, *args[1] = {id};
        if (run_script(r, ORDER_SCRIPT_CONFIRM, 1, k, 1, args) == 1)
            sc->confirmed++;
        break;
    }
    case ORDER_RECON_CANCEL: {
        const char *args[2] = {id, user};
        if (run_script(r, ORDER_SCRIPT_CANCEL, 4, keys, 2, args) == 1) {
            sc->cancelled++;
            sk_log(SK_LOG_INFO, "reconciler_cancelled",
                   "event_id=%" PRIu64 " segment=%u order_id=%s user_id=%s age_ms=%lld%s", s.id,
                   s.seg, id, user, (long long)(order_time_now_ms() - ts), claim ? " claim=yes" : "");
        }
        break;
    }
    case ORDER_RECON_KEEP:
        break; /* it may still land */
    }
}

/* One segment of an event: its pending entries, checked against PostgreSQL (read after
 * the cutoffs). @returns 0 or -1 (a connection failed: the scan stops, the next one
 * starts again). */
static int reconcile_event(order_reconciler *r, recon_seg s, scan_counts *sc)
{
    char kstock[ORDER_KEY_MAX], kbuyers[ORDER_KEY_MAX], kpending[ORDER_KEY_MAX],
        kunits[ORDER_KEY_MAX];
    order_key_seg(s.id, s.seg, ORDER_KEY_STOCK, kstock, sizeof(kstock));
    order_key_seg(s.id, s.seg, ORDER_KEY_BUYERS, kbuyers, sizeof(kbuyers));
    order_key_seg(s.id, s.seg, ORDER_KEY_PENDING, kpending, sizeof(kpending));
    order_key_seg(s.id, s.seg, ORDER_KEY_UNITS, kunits, sizeof(kunits));
    const char *hargv[2] = {"HGETALL", kpending};
    redisReply *h = rcl_command_argv(r->rc, 2, hargv, NULL);
    if (!h) {
        redis_failed(r);
        return -1;
    }
    int rc = 0;
    size_t n = h->type == REDIS_REPLY_ARRAY ? h->elements / 2 : 0;
    const char **ids = n ? calloc(n, sizeof(*ids)) : NULL;
    unsigned char *stored = n ? calloc(n, 1) : NULL;
    if (n && (!ids || !stored))
        rc = -1;
    for (size_t i = 0; rc == 0 && i < n; i++)
        ids[i] = h->element[2 * i]->str;
    const int64_t cutoff = order_recon_kafka_event_cutoff(r->kafka, s.id);
    if (rc == 0 && n && order_recon_pg_stored(r->pg, ids, n, stored) != 0)
        rc = -1;
    const char *keys[4] = {kstock, kbuyers, kpending, kunits};
    for (size_t i = 0; rc == 0 && i < n && r->rc; i++)
        if (order_recon_is_order_id(ids[i])) /* anything else is not ours: never touched */
            settle_entry(r, s, keys, ids[i], h->element[2 * i + 1]->str, stored[i], cutoff, sc);
    if (!r->rc)
        rc = -1;
    free(ids);
    free(stored);
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
 * the cutoffs showed that everything sold before the loss is in PostgreSQL: stock =
 * stock_left, buyers = the users of its created orders. @returns 1 reloaded, 0 not
 * (loaded meanwhile, lock busy), -1 a connection failed. */
static int reload_event(order_reconciler *r, uint64_t event_id)
{
    char name[ORDER_KEY_MAX];
    rlock_t *lock = event_lock(r, event_id, name, sizeof(name));
    if (!lock)
        return 0;
    order_recon_gate g;
    int rc = order_recon_pg_gate(r->pg, event_id, &g);
    if (rc == 1) {
        char ks[ORDER_KEY_MAX], km[ORDER_KEY_MAX], kb[ORDER_KEY_MAX], kr[ORDER_KEY_MAX], ku[ORDER_KEY_MAX];
        order_key(event_id, ORDER_KEY_STOCK, ks, sizeof(ks));
        order_key(event_id, ORDER_KEY_META, km, sizeof(km));
        order_key(event_id, ORDER_KEY_BUYERS, kb, sizeof(kb));
        order_key(event_id, ORDER_KEY_RELEASED, kr, sizeof(kr));
        order_key(event_id, ORDER_KEY_UNITS, ku, sizeof(ku));
        const char *keys[5] = {ks, km, kb, kr, ku};
        long long v = run_script(r, ORDER_SCRIPT_EVENT_RELOAD, 5, keys,
                                 ORDER_RECON_GATE_FIXED + g.nbuyers + g.nclosed, g.argv);
        if (v == 1)
            sk_log(SK_LOG_INFO, "event_reloaded",
                   "event_id=%" PRIu64 " stock=%s buyers=%d released=%d", event_id, g.argv[0],
                   g.nbuyers, g.nclosed);
        rc = v == 1 ? 1 : r->rc ? 0 : -1;
    }
    order_recon_gate_clear(&g);
    event_unlock(lock, name);
    return rc;
}

/* Adds segment j's part of l's snapshot (take_snapshot): its stock to *sum (a missing key
 * counts 0) and the order ids of its pending units (claims hold none). @returns 0, or -1
 * (logged; Redis failed or OOM). */
static int snapshot_segment(order_reconciler *r, order_recon_lost *l, unsigned j, long long *sum)
{
    char ks[ORDER_KEY_MAX], kp[ORDER_KEY_MAX], kr[ORDER_KEY_MAX];
    order_key_seg(l->id, j, ORDER_KEY_STOCK, ks, sizeof(ks));
    order_key_seg(l->id, j, ORDER_KEY_PENDING, kp, sizeof(kp));
    order_key_seg(l->id, j, ORDER_KEY_RELEASED, kr, sizeof(kr));
    /* The released set before the stock: a release landing in between is then counted
     * in the stock and as owed (one unit too few: safe), never in neither (one too many). */
    const char *sm[2] = {"SMEMBERS", kr}, *g[2] = {"GET", ks}, *h[2] = {"HGETALL", kp};
    redisReply *rel = rcl_command_argv(r->rc, 2, sm, NULL);
    redisReply *a = rel ? rcl_command_argv(r->rc, 2, g, NULL) : NULL;
    redisReply *b = a ? rcl_command_argv(r->rc, 2, h, NULL) : NULL;
    int ok = b && b->type == REDIS_REPLY_ARRAY && rel->type == REDIS_REPLY_ARRAY;
    if (ok && a->type == REDIS_REPLY_STRING) {
        *sum += strtoll(a->str, NULL, 10);
        l->snap_present |= (uint64_t)1 << j;
        for (size_t i = 0; ok && i < rel->elements; i++)
            if (rel->element[i]->type == REDIS_REPLY_STRING)
                ok = order_recon_snap_add_released(l, rel->element[i]->str) == 0;
    }
    for (size_t i = 0; ok && i + 1 < b->elements; i += 2) {
        const redisReply *v = b->element[i + 1];
        if (v->type != REDIS_REPLY_STRING || order_recon_is_claim(v->str, v->len))
            continue;
        /* once per unit (issue 31): the snapshot counts units, and so does the count of
         * those that landed (order_recon_pg_taken_count) */
        for (int q = order_recon_pending_units(v->str); ok && q > 0; q--)
            ok = order_recon_snap_add(l, b->element[i]->str) == 0;
    }
    if (rel)
        freeReplyObject(rel);
    if (a)
        freeReplyObject(a);
    if (b)
        freeReplyObject(b);
    if (!ok)
        sk_log(SK_LOG_WARN, "reconciler_redis_failed", "err=\"%s\"", rcl_errstr(r->rc));
    return ok ? 0 : -1;
}

/* A lost segment's snapshot of the other segments of its event (issue 19): their stock
 * summed and the order ids of their pending units, at snap_ms, read after them. Once
 * everything produced before snap_ms is in PostgreSQL (the reload waits for that), every
 * unit the snapshot shows taken is either in stock_left's count or one of these ids not
 * in PostgreSQL: order_recon_segment_stock. @returns 0, or -1 when the connection failed
 * (no snapshot kept). */
static int take_snapshot(order_reconciler *r, order_recon_lost *l)
{
    long long sum = 0;
    for (unsigned j = 0; j < l->k; j++)
        if (j != l->seg && snapshot_segment(r, l, j, &sum) != 0) {
            order_recon_snap_drop(l);
            return -1;
        }
    order_recon_snap_sort_released(l);
    l->snap_ms = order_time_now_ms();
    l->snap_stock = sum;
    sk_log(SK_LOG_INFO, "segment_snapshot",
           "event_id=%" PRIu64 " segment=%u others_stock=%lld others_pending=%zu", l->id, l->seg,
           sum, l->nsnap);
    return 0;
}

/* Writes a lost segment back (reload_segment, under the event's lock): K into its meta,
 * then event_reload.lua with `stock`, g's buyers and closed orders homed on it. g->argv
 * is rearranged (argv[0] replaced for the call, the homed entries kept). @returns 1 reloaded, 0 not, -1 a connection failed. */
static int segment_write(order_reconciler *r, const order_recon_lost *l, order_recon_gate *g,
                         long long stock, long long in_pg)
{
    char stock_s[24], k_s[12];
    snprintf(stock_s, sizeof(stock_s), "%lld", stock);
    snprintf(k_s, sizeof(k_s), "%u", l->k);
    g->argv[0] = stock_s;
    /* Only what is homed on this segment: its buyers, and the closed orders whose
     * release.lua looks in its released set (moved down behind the kept buyers). */
    int nb = order_recon_buyers_homed(g->argv + ORDER_RECON_GATE_FIXED, g->nbuyers, l->seg, l->k);
    int nc = order_recon_closed_homed(g->argv + ORDER_RECON_GATE_FIXED + g->nbuyers, g->closed_users, g->nclosed,
                                      l->seg, l->k);
    memmove(g->argv + ORDER_RECON_GATE_FIXED + nb, g->argv + ORDER_RECON_GATE_FIXED + g->nbuyers, (size_t)nc * sizeof(*g->argv));
    snprintf(g->nbuyers_s, sizeof(g->nbuyers_s), "%d", nb);
    g->nbuyers = nb;
    g->nclosed = nc;
    char ks[ORDER_KEY_MAX], km[ORDER_KEY_MAX], kb[ORDER_KEY_MAX], kr[ORDER_KEY_MAX], ku[ORDER_KEY_MAX];
    order_key_seg(l->id, l->seg, ORDER_KEY_STOCK, ks, sizeof(ks));
    order_key_seg(l->id, l->seg, ORDER_KEY_META, km, sizeof(km));
    order_key_seg(l->id, l->seg, ORDER_KEY_BUYERS, kb, sizeof(kb));
    order_key_seg(l->id, l->seg, ORDER_KEY_RELEASED, kr, sizeof(kr));
    order_key_seg(l->id, l->seg, ORDER_KEY_UNITS, ku, sizeof(ku));
    /* K first: reserve.lua answers "not loaded" until the stock key exists, and then
     * must find the event's K in this segment's meta */
    const char *hs[4] = {"HSET", km, "segments", k_s};
    redisReply *h = rcl_command_argv(r->rc, 4, hs, NULL);
    if (!h) {
        redis_failed(r);
        return -1;
    }
    freeReplyObject(h);
    const char *keys[5] = {ks, km, kb, kr, ku};
    long long v = run_script(r, ORDER_SCRIPT_EVENT_RELOAD, 5, keys, ORDER_RECON_GATE_FIXED + nb + nc, g->argv);
    g->argv[0] = NULL; /* stock_s dies here */
    if (v != 1)
        return r->rc ? 0 : -1;
    sk_log(SK_LOG_INFO, "event_reloaded",
           "event_id=%" PRIu64 " segment=%u stock=%lld buyers=%d released=%d others_stock=%lld others_pending=%zu in_pg=%lld",
           l->id, l->seg, stock, nb, nc, l->snap_stock, l->nsnap, in_pg);
    return 1;
}

/* Rebuilds a lost segment from PostgreSQL and its snapshot (take_snapshot), under the
 * event's lock: its stock as order_recon_segment_stock says, its buyers the users of
 * created orders whose home it is. @returns 1 reloaded, 0 not, -1 a connection failed. */
static int reload_segment(order_reconciler *r, const order_recon_lost *l)
{
    char name[ORDER_KEY_MAX];
    rlock_t *lock = event_lock(r, l->id, name, sizeof(name));
    if (!lock)
        return 0;
    order_recon_gate g;
    long long in_pg = 0;
    int rc = order_recon_pg_gate(r->pg, l->id, &g);
    if (rc == 1 && order_recon_pg_taken_count(r->pg, l->id, (const char *const *)l->snap_ids,
                                              l->nsnap, &in_pg) != 0)
        rc = -1;
    if (rc == 1) {
        /* stock_left counts every closed order's unit; those owed to a live segment go
         * there (release.lua), not here */
        long long owed = order_recon_owed_elsewhere(g.argv + ORDER_RECON_GATE_FIXED + g.nbuyers, g.closed_users,
                                                    g.nclosed, l);
        long long stock = order_recon_segment_stock(strtoll(g.argv[0], NULL, 10) - owed,
                                                    l->snap_stock, l->nsnap, in_pg);
        rc = segment_write(r, l, &g, stock, in_pg);
        if (owed)
            sk_log(SK_LOG_INFO, "segment_owed", "event_id=%" PRIu64 " segment=%u owed_elsewhere=%lld",
                   l->id, l->seg, owed);
    }
    order_recon_gate_clear(&g);
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

/* Opens Redis (the scripts registered for rcluster's NOSCRIPT fallback), PostgreSQL and
 * the Kafka handle, whichever is not up. @returns 0, or -1 (logged). */
static int connect_all(order_reconciler *r)
{
    if (!r->rc) {
        char err[256];
        struct timeval tv = {(time_t)(r->cfg->redis_timeout_ms / 1000),
                             (suseconds_t)((r->cfg->redis_timeout_ms % 1000) * 1000)};
        r->rc = rcl_connect(r->cfg->redis_url, tv, err, sizeof(err));
        if (!r->rc) {
            sk_log(SK_LOG_WARN, "reconciler_redis_failed", "err=\"%s\"", err);
            return -1;
        }
        for (int i = 0; i < ORDER_SCRIPT_COUNT; i++) {
            char sha[41];
            if (rcl_script_add(r->rc, r->scripts->body[i], sha) != 0) {
                disconnect(r);
                return -1;
            }
        }
    }
    if (order_recon_pg_connect(r->pg) != 0)
        return -1;
    return order_recon_kafka_connect(r->kafka);
}

/* One segment's Redis state in one round trip (both keys are in the segment's slot):
 * *pending entries, *gate 1 if its stock key exists. @returns 0, or -1 (Redis dropped). */
static int event_state(order_reconciler *r, recon_seg s, long long *pending, int *gate)
{
    char kp[ORDER_KEY_MAX], ks[ORDER_KEY_MAX];
    order_key_seg(s.id, s.seg, ORDER_KEY_PENDING, kp, sizeof(kp));
    order_key_seg(s.id, s.seg, ORDER_KEY_STOCK, ks, sizeof(ks));
    const char *hl[2] = {"HLEN", kp}, *ex[2] = {"EXISTS", ks};
    redisReply *n = NULL, *x = NULL;
    if (rcl_append_argv(r->rc, 2, hl, NULL) != 0 || rcl_append_argv(r->rc, 2, ex, NULL) != 0 ||
        rcl_get_reply(r->rc, &n) != 0 || rcl_get_reply(r->rc, &x) != 0) {
        sk_log(SK_LOG_WARN, "reconciler_redis_failed", "err=\"%s\"", rcl_errstr(r->rc));
        if (n)
            freeReplyObject(n);
        disconnect(r);
        return -1;
    }
    *pending = n->type == REDIS_REPLY_INTEGER ? n->integer : 0;
    *gate = !(x->type == REDIS_REPLY_INTEGER && x->integer == 0);
    freeReplyObject(n);
    freeReplyObject(x);
    return 0;
}

/* Sorts the recent events' segments (each segment of a segmented event is looked at
 * alone: its keys are in its own slot) into those with pending entries (segs, the count
 * returned) and the live ones whose gate is lost (r->lost, replaced; a segment known lost
 * keeps its time and snapshot). Only these cost a Kafka round trip. nseg is the events'
 * segments in all. @returns the number of segs, or -1 (nothing to do this scan). */
static int survey(order_reconciler *r, const order_recon_event *ev, int nev, int nseg,
                  recon_seg *segs)
{
    order_recon_lost *lost = calloc((size_t)nseg + 1, sizeof(*lost));
    if (!lost)
        return -1;
    int any = 0, nlost = 0;
    int64_t now = order_time_now_ms();
    for (int i = 0; i < nev && r->rc; i++)
        for (unsigned seg = 0; seg < ev[i].k && r->rc; seg++) {
            recon_seg s = {ev[i].id, seg};
            long long pending = 0;
            int gate = 1;
            if (event_state(r, s, &pending, &gate) != 0)
                break;
            if (pending > 0)
                segs[any++] = s;
            if (!ev[i].live || gate)
                continue;
            order_recon_lost *l = &lost[nlost++];
            *l = (order_recon_lost){.id = s.id, .seg = seg, .k = ev[i].k};
            if (order_recon_lost_carry(r->lost, r->nlost, l, now) == now)
                sk_log(SK_LOG_WARN, "event_gate_lost", "event_id=%" PRIu64 " segment=%u", s.id, seg);
        }
    order_recon_lost_free(r->lost, r->nlost);
    r->lost = lost;
    r->nlost = nlost;
    return any;
}

/* The lost gate r->lost[i]: a K = 1 event is reloaded once everything sold before the
 * loss is in PostgreSQL. A segment (K > 1) first gets its snapshot, then is rebuilt once
 * everything sold before the snapshot is in PostgreSQL; one lost segment of an event at a
 * time, the lowest first (its snapshot counts the others, a lost one as 0).
 * @returns 1 reloaded, 0 not (yet), -1 a connection failed. */
static int settle_lost(order_reconciler *r, int i)
{
    order_recon_lost *l = &r->lost[i];
    const int64_t cutoff = order_recon_kafka_event_cutoff(r->kafka, l->id);
    if (l->k <= 1) {
        if (!order_recon_may_cancel(l->since_ms, cutoff, r->wait_ms))
            return 0; /* what was sold before the loss may still reach PostgreSQL */
        return reload_event(r, l->id);
    }
    if (i > 0 && r->lost[i - 1].id == l->id) {
        order_recon_snap_drop(l); /* taken while that one was live: stale once it is rebuilt */
        return 0;
    }
    if (!l->snap_ms)
        return take_snapshot(r, l) != 0 ? -1 : 0;
    if (!order_recon_may_cancel(l->snap_ms, cutoff, r->wait_ms)) {
        sk_log(SK_LOG_DEBUG, "segment_wait",
               "event_id=%" PRIu64 " segment=%u snap_ms=%lld cutoff=%lld", l->id, l->seg,
               (long long)l->snap_ms, (long long)cutoff);
        return 0; /* what was sold before the snapshot may still reach PostgreSQL */
    }
    return reload_segment(r, l);
}

/* Settles the segments with pending entries, then rebuilds the lost gates whose sales
 * before the loss are all in PostgreSQL. Kafka first, PostgreSQL after. */
static void settle(order_reconciler *r, const recon_seg *segs, int any, scan_counts *sc)
{
    if (!(any || r->nlost) || !r->rc || order_recon_kafka_cutoffs(r->kafka) != 0)
        return;
    for (int i = 0; i < any; i++)
        if (reconcile_event(r, segs[i], sc) != 0) {
            disconnect(r);
            return;
        }
    for (int i = 0; i < r->nlost && r->rc && order_recon_pg_up(r->pg); i++) {
        int rr = settle_lost(r, i);
        if (rr > 0)
            sc->reloaded++;
        else if (rr < 0) {
            disconnect(r);
            return;
        }
    }
}

static void scan(order_reconciler *r)
{
    int leader = lead(r);
    atomic_store_explicit(&r->metrics->reconcile_leader, leader, memory_order_relaxed);
    if (!leader || connect_all(r) != 0)
        return;
    /* Events that may still have reservations (their sale ended less than horizon ago). */
    order_recon_event *ev = NULL;
    int nev = order_recon_pg_events(r->pg, r->cfg->reconcile_horizon_s, &ev);
    if (nev < 0)
        return;
    int nseg = 0;
    for (int i = 0; i < nev; i++)
        nseg += (int)ev[i].k;
    recon_seg *segs = calloc((size_t)nseg + 1, sizeof(*segs));
    int any = segs ? survey(r, ev, nev, nseg, segs) : -1;
    free(ev);
    scan_counts sc = {0, 0, 0};
    if (any >= 0)
        settle(r, segs, any, &sc);
    free(segs);
    atomic_fetch_add_explicit(&r->metrics->reconcile_confirmed, (uint64_t)sc.confirmed, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->metrics->reconcile_cancelled, (uint64_t)sc.cancelled, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->metrics->reconcile_reloaded, (uint64_t)sc.reloaded, memory_order_relaxed);
    if (sc.confirmed || sc.cancelled || sc.reloaded)
        sk_log(SK_LOG_INFO, "reconciled", "events=%d confirmed=%d cancelled=%d reloaded=%d", any,
               sc.confirmed, sc.cancelled, sc.reloaded);
    /* The clean-up after a sale, once the scan is done (it may have dropped a connection). */
    if (r->rc && order_recon_pg_up(r->pg)) {
        int pruned = order_recon_expire_sweep(r->expire, r->rc, r->pg, r->cfg->events_retention_s);
        if (pruned < 0)
            disconnect(r);
        else if (pruned > 0)
            sk_log(SK_LOG_INFO, "changed_pruned", "removed=%d", pruned);
    }
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

static void reconciler_free(order_reconciler *r)
{
    order_recon_pg_free(r->pg);
    order_recon_kafka_free(r->kafka);
    order_recon_lost_free(r->lost, r->nlost);
    order_recon_expire_free(r->expire);
    free(r);
}

order_reconciler *order_reconciler_start(const order_config *cfg, const sk_cfg_kv *props,
                                         const order_scripts *scripts, order_metrics *metrics,
                                         char *err, size_t errsz)
{
    order_reconciler *r = calloc(1, sizeof(*r));
    if (r) {
        r->pg = order_recon_pg_new(cfg->pg);
        r->kafka = order_recon_kafka_new(cfg->topic, cfg->group_id, props);
        r->expire = order_recon_expire_new();
    }
    if (!r || !r->pg || !r->kafka || !r->expire) {
        if (r)
            reconciler_free(r);
        snprintf(err, errsz, "out of memory");
        return NULL;
    }
    r->cfg = cfg;
    r->scripts = scripts;
    r->metrics = metrics;
    /* The producer's timeout (order_kafka.c's default unless kafka.* says otherwise). */
    r->wait_ms = order_recon_kafka_msg_timeout_ms(props) + cfg->reconcile_margin_ms;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    if (pthread_create(&r->thread, NULL, reconcile_main, r) != 0) {
        snprintf(err, errsz, "cannot start the reconciler thread");
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cv);
        reconciler_free(r);
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
    rcl_free(r->rc);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    reconciler_free(r);
}
