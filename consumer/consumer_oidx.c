/* consumer_oidx: order outcomes into the order index (see consumer_oidx.h). */
#include "consumer_oidx.h"

#include "order_iwrite.h"
#include "order_msg.h"
#include "rcluster.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

/* Fields per HSET: a batch is at most batch.max messages, sent as several HSETs. */
#define OIDX_HSET_MAX 256

struct consumer_oidx {
    char *url;
    long long ttl_s;
    int timeout_ms;
    rcl_ctx *c;
    char err[256];
};

consumer_oidx *consumer_oidx_new(const char *url, long long ttl_s, int timeout_ms)
{
    consumer_oidx *o = calloc(1, sizeof(*o));
    if (!o || !(o->url = strdup(url))) {
        free(o);
        return NULL;
    }
    o->ttl_s = ttl_s;
    o->timeout_ms = timeout_ms;
    return o;
}

void consumer_oidx_free(consumer_oidx *o)
{
    if (!o)
        return;
    rcl_free(o->c);
    free(o->url);
    free(o);
}

const char *consumer_oidx_errstr(const consumer_oidx *o)
{
    return o->err;
}

/* Queues the write w holds: HSET <key> f v ..., then EXPIRE <key> ttl. */
static int append_write(consumer_oidx *o, order_iwrite *w, int *queued)
{
    const char **argv;
    const size_t *lens;
    int argc = order_iwrite_hset(w, &argv, &lens);
    if (rcl_append_argv(o->c, argc, argv, lens) != 0)
        return -1;
    argc = order_iwrite_expire(w, &argv, &lens);
    if (rcl_append_argv(o->c, argc, argv, lens) != 0)
        return -1;
    *queued += 2;
    return 0;
}

long consumer_oidx_record(consumer_oidx *o, consumer_batch *b)
{
    size_t n = consumer_batch_count(b);
    order_iwrite *w = order_iwrite_new(OIDX_HSET_MAX);
    char *done = calloc(n ? n : 1, 1);
    long recorded = 0;
    int queued = 0, failed = 0;
    if (!w || !done) {
        snprintf(o->err, sizeof(o->err), "out of memory");
        order_iwrite_free(w);
        free(done);
        return -1;
    }
    if (!o->c) {
        struct timeval tv = {o->timeout_ms / 1000, (o->timeout_ms % 1000) * 1000};
        o->c = rcl_connect(o->url, tv, o->err, sizeof(o->err));
        if (!o->c) {
            order_iwrite_free(w);
            free(done);
            return -1;
        }
    }
    /* One HSET per second of ids (nearly always one per batch), as the front does. */
    for (size_t i = 0; i < n && !failed; i++) {
        consumer_batch_msg *first = consumer_batch_msg_at(b, i);
        if (done[i] || first->err != CONSUMER_MSG_OK || !first->outcome)
            continue;
        order_iwrite_begin(w, (uint64_t)first->order.order_id, o->ttl_s);
        for (size_t j = i; j < n && order_iwrite_count(w) < OIDX_HSET_MAX; j++) {
            consumer_batch_msg *m = consumer_batch_msg_at(b, j);
            order_index_entry e = {(uint64_t)m->order.event_id, (uint64_t)m->order.user_id, 0,
                                   m->outcome, m->pay_by_ms};
            /* another second's id is refused by the builder: it goes with its own HSET */
            if (done[j] || m->err != CONSUMER_MSG_OK || !m->outcome ||
                order_iwrite_add(w, (uint64_t)m->order.order_id, ORDER_INDEX_OUTCOME_SUFFIX, &e) != 0)
                continue;
            done[j] = 1;
        }
        size_t k = order_iwrite_count(w);
        if (append_write(o, w, &queued) != 0) {
            snprintf(o->err, sizeof(o->err), "%s", rcl_errstr(o->c));
            failed = 1;
        } else {
            recorded += (long)k;
        }
    }
    for (int q = 0; q < queued; q++) {
        redisReply *r = NULL;
        if (rcl_get_reply(o->c, &r) != 0) {
            snprintf(o->err, sizeof(o->err), "%s", rcl_errstr(o->c));
            failed = 1;
            break; /* the connection is dropped below: the rest of the pipeline goes with it */
        }
        if (r->type == REDIS_REPLY_ERROR) {
            snprintf(o->err, sizeof(o->err), "%.200s", r->str);
            failed = 1;
        }
        freeReplyObject(r);
    }
    order_iwrite_free(w);
    free(done);
    if (failed) {
        rcl_free(o->c);
        o->c = NULL;
        return -1;
    }
    return recorded;
}
