/* order_recon_expire: the keys' expiry and the changed hash's pruning (see the header for
 * the design). Every Redis call goes through rcluster (an event's segments are in K
 * slots), pipelined in batches. */
#include "order_recon_expire.h"
#include "order_msg.h"
#include "order_pauser.h"
#include "order_recon_rule.h"
#include "order_time.h"
#include "sk_log.h"

#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Commands queued before their replies are read: bounds the pipeline's memory. */
#define EXPIRE_BATCH 512

/* A field of seckill:changed as one round saw it. */
typedef struct changed_field {
    char id[24];
    long long count;
} changed_field;

struct order_recon_expire {
    changed_field *prev; /* the previous round's fields */
    size_t nprev;
};

order_recon_expire *order_recon_expire_new(void)
{
    return calloc(1, sizeof(order_recon_expire));
}

void order_recon_expire_free(order_recon_expire *x)
{
    if (!x)
        return;
    free(x->prev);
    free(x);
}

static int redis_failed(rcl_ctx *rc, const char *what)
{
    sk_log(SK_LOG_WARN, "expire_sweep_failed", "step=%s err=\"%s\"", what, rcl_errstr(rc));
    return -1;
}

/* Reads the replies of the `queued` commands; an error reply (a key of a slot that moved
 * is retried by rcluster) is logged and skipped. @returns 0, or -1 (I/O). */
static int drain(rcl_ctx *rc, int *queued)
{
    for (; *queued > 0; (*queued)--) {
        redisReply *r = NULL;
        if (rcl_get_reply(rc, &r) != 0)
            return -1;
        if (r->type == REDIS_REPLY_ERROR)
            sk_log(SK_LOG_WARN, "expire_sweep_reply", "err=\"%s\"", r->str);
        freeReplyObject(r);
    }
    return 0;
}

/* Queues one PEXPIREAT. @returns 0, or -1 (I/O). */
static int pexpireat(rcl_ctx *rc, const char *key, size_t klen, const char *at, int *queued)
{
    const char *argv[3] = {"PEXPIREAT", key, at};
    size_t lens[3] = {9, klen, strlen(at)};
    if (rcl_append_argv(rc, 3, argv, lens) != 0)
        return -1;
    return ++*queued >= EXPIRE_BATCH ? drain(rc, queued) : 0;
}

/* PEXPIREAT on every key of every segment of the events (keys that do not exist answer
 * 0; an expiry in the past deletes the key at once). Past its expiry, the fencing counter
 * of the event's lock (order_loader.h's "seckill:{e<ID>}:lock") goes too: librlock keeps it
 * an hour after its last use, and a new one starts above every old token
 * (lua/rlock_fence.lua), so no load after the expiry can be fenced wrongly. The lock key
 * itself is never touched: its TTL is a holder's lease. */
static int expire_keys(rcl_ctx *rc, const order_recon_expiry *ev, int n)
{
    int queued = 0;
    int64_t now_ms = order_time_now_ms();
    for (int i = 0; i < n; i++) {
        char at[24];
        snprintf(at, sizeof(at), "%" PRId64, ev[i].expire_at_ms);
        if (ev[i].expire_at_ms <= now_ms) {
            char fence[ORDER_KEY_MAX + 16];
            int flen = snprintf(fence, sizeof(fence), "seckill:{e%" PRIu64 "}:lock:fence", ev[i].id);
            if (pexpireat(rc, fence, (size_t)flen, at, &queued) != 0)
                return -1;
        }
        for (unsigned seg = 0; seg < ev[i].k; seg++) {
            for (int kind = 0; kind < ORDER_KEY_COUNT; kind++) {
                char key[ORDER_KEY_MAX];
                size_t klen = order_key_seg(ev[i].id, seg, (order_key_kind)kind, key, sizeof(key));
                if (pexpireat(rc, key, klen, at, &queued) != 0)
                    return -1;
            }
        }
    }
    return drain(rc, &queued);
}

static long long prev_count(const order_recon_expire *x, const char *id)
{
    for (size_t i = 0; i < x->nprev; i++)
        if (strcmp(x->prev[i].id, id) == 0)
            return x->prev[i].count;
    return -1;
}

/* The changed hash: HGETALL, ask PostgreSQL which of its events are gone or expired, HDEL
 * those whose count did not move since the previous round. @returns fields removed, or
 * -1. */
static int prune_changed(order_recon_expire *x, rcl_ctx *rc, order_recon_pg *pg,
                         long long retention_s)
{
    const char *hv[2] = {"HGETALL", ORDER_CHANGED_KEY};
    redisReply *r = rcl_command_argv(rc, 2, hv, NULL);
    if (!r)
        return redis_failed(rc, "changed");
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0) {
        freeReplyObject(r);
        return 0; /* not a hash (nothing to prune): left alone */
    }
    size_t n = r->elements / 2, m = 0;
    changed_field *now = calloc(n + 1, sizeof(*now));
    const char **ids = calloc(n + 1, sizeof(*ids));
    unsigned char *gone = calloc(n + 1, 1);
    int removed = -1;
    if (!now || !ids || !gone)
        goto out;
    for (size_t i = 0; i < n; i++) {
        const redisReply *f = r->element[2 * i], *v = r->element[2 * i + 1];
        uint64_t id;
        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
            sk_id_parse(f->str, f->len, &id) != 0)
            continue; /* not an event id: not ours to judge */
        snprintf(now[m].id, sizeof(now[m].id), "%" PRIu64, id);
        now[m].count = strtoll(v->str, NULL, 10);
        ids[m] = now[m].id;
        m++;
    }
    removed = 0;
    if (m > 0 && order_recon_pg_events_gone(pg, ids, m, retention_s, gone) != 0) {
        removed = -1;
        goto out;
    }
    for (size_t i = 0; i < m; i++) {
        if (!gone[i] || prev_count(x, now[i].id) != now[i].count)
            continue; /* alive, or seen for the first time at this count: next round */
        const char *dv[3] = {"HDEL", ORDER_CHANGED_KEY, now[i].id};
        redisReply *d = rcl_command_argv(rc, 3, dv, NULL);
        if (!d) {
            removed = redis_failed(rc, "changed_hdel");
            goto out;
        }
        removed += d->type == REDIS_REPLY_INTEGER && d->integer == 1;
        freeReplyObject(d);
    }
    free(x->prev);
    x->prev = now; /* what this round saw, removed fields included (they will not show) */
    x->nprev = m;
    now = NULL;
out:
    freeReplyObject(r);
    free(now);
    free(ids);
    free(gone);
    return removed;
}

int order_recon_expire_sweep(order_recon_expire *x, rcl_ctx *rc, order_recon_pg *pg,
                             long long retention_s)
{
    order_recon_expiry *ev = NULL;
    int n = order_recon_pg_expiries(pg, retention_s, ORDER_RECON_EXPIRE_GRACE_S,
                                    ORDER_RECON_EXPIRE_MAX, &ev);
    if (n < 0)
        return -1;
    int rc_keys = expire_keys(rc, ev, n);
    free(ev);
    if (rc_keys != 0)
        return redis_failed(rc, "pexpireat");
    return prune_changed(x, rc, pg, retention_s);
}
