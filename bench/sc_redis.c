/* sc_redis: Redis reads of seckill-check. See sc_redis.h. */
#include "sc_redis.h"
#include "rcluster.h"

#include "order_msg.h"
#include "order_recon_rule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The units of a pending hash's values (HVALS): an entry of q units counts q (issue 31,
 * "user:ts:q"); a claim ("user:ts[:q]:c", a home segment's entry for units borrowed
 * elsewhere) holds none here. */
static long long pending_units(const redisReply *vals)
{
    long long n = 0;
    for (size_t i = 0; i < vals->elements; i++) {
        const redisReply *v = vals->element[i];
        if (v->type == REDIS_REPLY_STRING && !order_recon_is_claim(v->str, v->len))
            n += order_recon_pending_units(v->str);
    }
    return n;
}

/* A segmented event's figures (issue 19): the sums over its k segments, each read on
 * its own master. Pending counts units (pending_units). */
static int figures_segments(rcl_ctx *c, uint64_t event_id, unsigned k, int *present,
                            long long *stock, long long *pending, long long *buyers, char *err,
                            size_t errsz)
{
    *present = 1;
    *stock = *pending = *buyers = 0;
    for (unsigned seg = 0; seg < k; seg++) {
        char ks[64], kp[64], kb[64];
        order_key_seg(event_id, seg, ORDER_KEY_STOCK, ks, sizeof(ks));
        order_key_seg(event_id, seg, ORDER_KEY_PENDING, kp, sizeof(kp));
        order_key_seg(event_id, seg, ORDER_KEY_BUYERS, kb, sizeof(kb));
        const char *g[2] = {"GET", ks}, *h[2] = {"HVALS", kp}, *b[2] = {"HLEN", kb};
        redisReply *r1 = rcl_command_argv(c, 2, g, NULL);
        redisReply *r2 = r1 ? rcl_command_argv(c, 2, h, NULL) : NULL;
        redisReply *r3 = r2 ? rcl_command_argv(c, 2, b, NULL) : NULL;
        int ok = r3 && (r1->type == REDIS_REPLY_NIL || r1->type == REDIS_REPLY_STRING) &&
                 r2->type == REDIS_REPLY_ARRAY && r3->type == REDIS_REPLY_INTEGER;
        if (ok) {
            if (r1->type == REDIS_REPLY_NIL)
                *present = 0;
            else
                *stock += strtoll(r1->str, NULL, 10);
            *pending += pending_units(r2);
            *buyers += r3->integer;
        } else {
            const char *why = rcl_errstr(c);
            snprintf(err, errsz, "redis: segment %u: %s", seg, why[0] ? why : "unexpected reply");
        }
        if (r1)
            freeReplyObject(r1);
        if (r2)
            freeReplyObject(r2);
        if (r3)
            freeReplyObject(r3);
        if (!ok)
            return -1;
    }
    return 0;
}

int sc_redis_figures(rcl_ctx *c, uint64_t event_id, int *present, long long *stock,
                     long long *pending, long long *buyers, char *err, size_t errsz)
{
    char k_stock[64], k_pending[64], k_buyers[64], k_meta[64];
    unsigned long long id = (unsigned long long)event_id;
    order_key(event_id, ORDER_KEY_META, k_meta, sizeof(k_meta));
    const char *hg[3] = {"HGET", k_meta, "segments"}; /* written when K > 1 (event_load.lua) */
    redisReply *m = rcl_command_argv(c, 3, hg, NULL);
    if (!m) {
        const char *why = rcl_errstr(c);
        snprintf(err, errsz, "redis: %s", why[0] ? why : "no reply");
        return -1;
    }
    unsigned k = m->type == REDIS_REPLY_STRING ? (unsigned)strtoul(m->str, NULL, 10) : 1;
    freeReplyObject(m);
    if (k > 1)
        return figures_segments(c, event_id, k, present, stock, pending, buyers, err, errsz);
    snprintf(k_stock, sizeof(k_stock), "seckill:{e%llu}:stock", id);
    snprintf(k_pending, sizeof(k_pending), "seckill:{e%llu}:pending", id);
    snprintf(k_buyers, sizeof(k_buyers), "seckill:{e%llu}:buyers", id);
    /* Pipelined: the three figures come from one round trip, so they are read close together. */
    const char *cmds[3][2] = {{"GET", k_stock}, {"HVALS", k_pending}, {"HLEN", k_buyers}};
    int queued = 0;
    while (queued < 3 && rcl_append_argv(c, 2, cmds[queued], NULL) == 0)
        queued++;
    redisReply *r[3] = {NULL, NULL, NULL};
    int rc = queued == 3 ? 0 : -1;
    /* Every queued reply is read, even after a failure, so that none is left behind for
     * the next call's pipeline. */
    for (int i = 0; i < queued; i++) {
        if (rcl_get_reply(c, &r[i]) != 0 || !r[i])
            rc = -1;
    }
    if (rc != 0) {
        const char *why = rcl_errstr(c);
        snprintf(err, errsz, "redis: %s", why[0] ? why : "no reply");
    }
    if (rc == 0) {
        if (r[0]->type == REDIS_REPLY_NIL) {
            *present = 0;
            *stock = 0;
        } else if (r[0]->type == REDIS_REPLY_STRING) {
            *present = 1;
            *stock = strtoll(r[0]->str, NULL, 10);
        } else {
            snprintf(err, errsz, "redis: GET %s: unexpected reply", k_stock);
            rc = -1;
        }
        if (rc == 0 && (r[1]->type != REDIS_REPLY_ARRAY || r[2]->type != REDIS_REPLY_INTEGER)) {
            snprintf(err, errsz, "redis: HVALS/HLEN: unexpected reply (wrong key type?)");
            rc = -1;
        }
        if (rc == 0) {
            *pending = pending_units(r[1]); /* in units (issue 31) */
            *buyers = r[2]->integer;
        }
    }
    for (int i = 0; i < 3; i++)
        if (r[i])
            freeReplyObject(r[i]);
    return rc;
}

int sc_redis_released(struct rcl_ctx *c, uint64_t event_id, long long *n, char *err, size_t errsz)
{
    char key[ORDER_KEY_MAX];
    order_key(event_id, ORDER_KEY_META, key, sizeof(key));
    const char *hg[3] = {"HGET", key, "segments"};
    redisReply *m = rcl_command_argv(c, 3, hg, NULL);
    unsigned k = m && m->type == REDIS_REPLY_STRING ? (unsigned)strtoul(m->str, NULL, 10) : 1;
    freeReplyObject(m);
    if (k < 1 || k > ORDER_SEGMENTS_MAX)
        k = 1;
    /* A release goes to the buyer's home segment (issue 22): the sets are summed. */
    *n = 0;
    for (unsigned seg = 0; seg < k; seg++) {
        order_key_seg(event_id, seg, ORDER_KEY_RELEASED, key, sizeof(key));
        const char *argv[2] = {"SCARD", key};
        redisReply *r = rcl_command_argv(c, 2, argv, NULL);
        if (!r || r->type != REDIS_REPLY_INTEGER) {
            snprintf(err, errsz, "redis: SCARD released: %s",
                     r && r->type == REDIS_REPLY_ERROR ? r->str : rcl_errstr(c));
            freeReplyObject(r);
            return -1;
        }
        *n += r->integer;
        freeReplyObject(r);
    }
    return 0;
}
