/* consumer_oidx: order outcomes into the order index (see consumer_oidx.h). */
#include "consumer_oidx.h"

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

typedef struct field {
    char name[32];
    char value[ORDER_INDEX_VALUE_MAX];
} field;

/* Queues HSET <key> f v ... and EXPIRE <key> ttl for `n` fields of one bucket. */
static int append_bucket(consumer_oidx *o, uint64_t order_id, const field *f, size_t n, int *queued)
{
    char key[ORDER_KEY_MAX], ttl[24];
    const char *argv[2 + 2 * OIDX_HSET_MAX];
    size_t lens[2 + 2 * OIDX_HSET_MAX];
    argv[0] = "HSET";
    lens[0] = 4;
    argv[1] = key;
    lens[1] = order_key_index(order_id, key, sizeof(key));
    for (size_t i = 0; i < n; i++) {
        argv[2 + 2 * i] = f[i].name;
        lens[2 + 2 * i] = strlen(f[i].name);
        argv[3 + 2 * i] = f[i].value;
        lens[3 + 2 * i] = strlen(f[i].value);
    }
    const char *ex[3] = {"EXPIRE", key, ttl};
    size_t exl[3] = {6, lens[1], (size_t)snprintf(ttl, sizeof(ttl), "%lld", o->ttl_s)};
    if (rcl_append_argv(o->c, 2 + 2 * (int)n, argv, lens) != 0 ||
        rcl_append_argv(o->c, 3, ex, exl) != 0)
        return -1;
    *queued += 2;
    return 0;
}

long consumer_oidx_record(consumer_oidx *o, consumer_batch *b)
{
    size_t n = consumer_batch_count(b);
    field *f = malloc(OIDX_HSET_MAX * sizeof(*f));
    char *done = calloc(n ? n : 1, 1);
    long recorded = 0;
    int queued = 0, failed = 0;
    if (!f || !done) {
        snprintf(o->err, sizeof(o->err), "out of memory");
        free(f);
        free(done);
        return -1;
    }
    if (!o->c) {
        struct timeval tv = {o->timeout_ms / 1000, (o->timeout_ms % 1000) * 1000};
        o->c = rcl_connect(o->url, tv, o->err, sizeof(o->err));
        if (!o->c) {
            free(f);
            free(done);
            return -1;
        }
    }
    /* One HSET per second of ids (nearly always one per batch), as the front does. */
    for (size_t i = 0; i < n && !failed; i++) {
        consumer_batch_msg *first = consumer_batch_msg_at(b, i);
        if (done[i] || first->err != CONSUMER_MSG_OK || !first->outcome)
            continue;
        uint64_t bucket = order_index_bucket((uint64_t)first->order.order_id);
        size_t k = 0;
        for (size_t j = i; j < n && k < OIDX_HSET_MAX; j++) {
            consumer_batch_msg *m = consumer_batch_msg_at(b, j);
            if (done[j] || m->err != CONSUMER_MSG_OK || !m->outcome ||
                order_index_bucket((uint64_t)m->order.order_id) != bucket)
                continue;
            done[j] = 1;
            order_index_entry e = {(uint64_t)m->order.event_id, (uint64_t)m->order.user_id, 0,
                                   m->outcome, m->pay_by_ms};
            snprintf(f[k].name, sizeof(f[k].name), "%" PRIu64 "%s", (uint64_t)m->order.order_id,
                     ORDER_INDEX_OUTCOME_SUFFIX);
            order_index_encode(&e, f[k].value, sizeof(f[k].value));
            k++;
        }
        if (append_bucket(o, (uint64_t)first->order.order_id, f, k, &queued) != 0) {
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
    free(f);
    free(done);
    if (failed) {
        rcl_free(o->c);
        o->c = NULL;
        return -1;
    }
    return recorded;
}
