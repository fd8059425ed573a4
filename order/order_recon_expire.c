/* order_recon_expire: the keys' expiry and the changed hash's pruning (see the header for
 * the design). Every Redis call goes through rcluster (an event's segments are in K
 * slots), pipelined in batches. */
#include "order_recon_expire.h"
#include "order_msg.h"
#include "order_pause.h"
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

/* The event ids of a set (stride 1) or a hash (stride 2: field, then its count) as
 * HGETALL or SMEMBERS answered, and which of them are gone or past their expiry. */
typedef struct id_list {
    changed_field *f; /* ids and (hash) counts */
    const char **ids; /* f[i].id, for the query */
    unsigned char *gone;
    size_t n;
} id_list;

static void id_list_clear(id_list *l)
{
    free(l->f);
    free(l->ids);
    free(l->gone);
}

/* @returns 0 (l filled), or -1 (OOM or PostgreSQL failed; l still needs clearing). */
static int id_list_of(const redisReply *r, size_t stride, order_recon_pg *pg,
                      long long retention_s, id_list *l)
{
    size_t n = r->type == REDIS_REPLY_ARRAY ? r->elements / stride : 0;
    *l = (id_list){calloc(n + 1, sizeof(*l->f)), calloc(n + 1, sizeof(*l->ids)), calloc(n + 1, 1), 0};
    if (!l->f || !l->ids || !l->gone)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const redisReply *f = r->element[stride * i];
        uint64_t id;
        if (f->type != REDIS_REPLY_STRING || sk_id_parse(f->str, f->len, &id) != 0)
            continue; /* not an event id: not ours to judge */
        changed_field *c = &l->f[l->n];
        snprintf(c->id, sizeof(c->id), "%" PRIu64, id);
        if (stride == 2 && r->element[2 * i + 1]->type == REDIS_REPLY_STRING)
            c->count = strtoll(r->element[2 * i + 1]->str, NULL, 10);
        l->ids[l->n++] = c->id;
    }
    return l->n > 0 ? order_recon_pg_events_gone(pg, l->ids, l->n, retention_s, l->gone) : 0;
}

/* `cmd key id` (HDEL or SREM). @returns 1 removed, 0 not there, or -1 (Redis failed). */
static int remove_one(rcl_ctx *rc, const char *cmd, const char *key, const char *id)
{
    const char *dv[3] = {cmd, key, id};
    redisReply *d = rcl_command_argv(rc, 3, dv, NULL);
    if (!d)
        return redis_failed(rc, cmd);
    int removed = d->type == REDIS_REPLY_INTEGER && d->integer == 1;
    freeReplyObject(d);
    return removed;
}

/* The changed hash (stride 2) or the paused set (stride 1): its ids gone or past their
 * expiry removed; in the hash, only those whose count did not move since the previous
 * round (every front has read it). @returns entries removed, or -1. */
static int prune(order_recon_expire *x, rcl_ctx *rc, order_recon_pg *pg, long long retention_s,
                 const char *key, size_t stride)
{
    const char *cmd = stride == 2 ? "HDEL" : "SREM";
    const char *rv[2] = {stride == 2 ? "HGETALL" : "SMEMBERS", key};
    redisReply *r = rcl_command_argv(rc, 2, rv, NULL);
    if (!r)
        return redis_failed(rc, rv[0]);
    id_list l;
    int removed = id_list_of(r, stride, pg, retention_s, &l) != 0 ? -1 : 0;
    for (size_t i = 0; i < l.n && removed >= 0; i++) {
        if (!l.gone[i] || (stride == 2 && prev_count(x, l.f[i].id) != l.f[i].count))
            continue; /* alive, or a count seen for the first time: the next round */
        int one = remove_one(rc, cmd, key, l.f[i].id);
        removed = one < 0 ? -1 : removed + one;
    }
    if (removed >= 0 && stride == 2) { /* what this round saw, removed fields included */
        free(x->prev);
        x->prev = l.f;
        x->nprev = l.n;
        l.f = NULL;
    }
    freeReplyObject(r);
    id_list_clear(&l);
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
    /* A pause never resumed must not hold a place of ORDER_PAUSE_MAX for ever either. */
    int changed = prune(x, rc, pg, retention_s, ORDER_CHANGED_KEY, 2);
    int paused = changed < 0 ? -1 : prune(x, rc, pg, retention_s, ORDER_PAUSE_KEY, 1);
    return paused < 0 ? -1 : changed + paused;
}
