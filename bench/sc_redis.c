/* sc_redis: Redis reads of seckill-check. See sc_redis.h. */
#include "sc_redis.h"
#include "rcluster.h"

#include <stdio.h>
#include <stdlib.h>

int sc_redis_figures(rcl_ctx *c, uint64_t event_id, int *present, long long *stock,
                     long long *pending, long long *buyers, char *err, size_t errsz)
{
    char k_stock[64], k_pending[64], k_buyers[64];
    unsigned long long id = (unsigned long long)event_id;
    snprintf(k_stock, sizeof(k_stock), "seckill:{e%llu}:stock", id);
    snprintf(k_pending, sizeof(k_pending), "seckill:{e%llu}:pending", id);
    snprintf(k_buyers, sizeof(k_buyers), "seckill:{e%llu}:buyers", id);
    /* Pipelined: the three figures come from one round trip, so they are read close together. */
    const char *cmds[3][2] = {{"GET", k_stock}, {"HLEN", k_pending}, {"SCARD", k_buyers}};
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
        if (rc == 0 && (r[1]->type != REDIS_REPLY_INTEGER || r[2]->type != REDIS_REPLY_INTEGER)) {
            snprintf(err, errsz, "redis: HLEN/SCARD: unexpected reply (wrong key type?)");
            rc = -1;
        }
        if (rc == 0) {
            *pending = r[1]->integer;
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
    char key[64];
    snprintf(key, sizeof(key), "seckill:{e%llu}:released", (unsigned long long)event_id);
    const char *argv[2] = {"SCARD", key};
    redisReply *r = rcl_command_argv(c, 2, argv, NULL);
    if (!r || r->type != REDIS_REPLY_INTEGER) {
        snprintf(err, errsz, "redis: SCARD released: %s", r && r->type == REDIS_REPLY_ERROR ? r->str : rcl_errstr(c));
        freeReplyObject(r);
        return -1;
    }
    *n = r->integer;
    freeReplyObject(r);
    return 0;
}
