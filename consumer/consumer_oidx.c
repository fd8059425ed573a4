/* consumer_oidx: order outcomes into the order index (see consumer_oidx.h). */
#include "consumer_oidx.h"

#include "order_iwrite.h"
#include "order_msg.h"
#include "rcluster.h"

#include <inttypes.h>
#include <pthread.h>
#include <sk_log.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

/* Fields per HSET: a batch is at most batch.max messages, sent as several HSETs. */
#define OIDX_HSET_MAX 256

/* One outcome to record: the order and its index entry, taken from a batch's message. */
typedef struct oidx_rec {
    uint64_t order_id;
    order_index_entry e;
} oidx_rec;

typedef struct oidx_job {
    oidx_rec *r;
    size_t n, cap;
} oidx_job;

struct consumer_oidx {
    char *url;
    long long ttl_s;
    int timeout_ms, writer;
    atomic_uint_fast64_t *failures;
    rcl_ctx *c;       /* the recorder thread's */
    char err[256];    /* the recorder thread's */
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    oidx_job next;    /* mu: submitted, not taken yet (has_next) */
    int has_next, quit;
    oidx_job cur;     /* the recorder thread's, while it writes */
};

static void *oidx_main(void *arg);

consumer_oidx *consumer_oidx_new(const char *url, long long ttl_s, int timeout_ms, int writer,
                                 atomic_uint_fast64_t *failures)
{
    consumer_oidx *o = calloc(1, sizeof(*o));
    if (!o || !(o->url = strdup(url))) {
        free(o);
        return NULL;
    }
    o->ttl_s = ttl_s;
    o->timeout_ms = timeout_ms;
    o->writer = writer;
    o->failures = failures;
    pthread_mutex_init(&o->mu, NULL);
    pthread_cond_init(&o->cv, NULL);
    if (pthread_create(&o->thread, NULL, oidx_main, o) != 0) {
        consumer_oidx_free(o);
        return NULL;
    }
    o->started = 1;
    return o;
}

void consumer_oidx_free(consumer_oidx *o)
{
    if (!o)
        return;
    if (o->started) { /* the thread writes what was submitted, then returns */
        pthread_mutex_lock(&o->mu);
        o->quit = 1;
        pthread_cond_broadcast(&o->cv);
        pthread_mutex_unlock(&o->mu);
        pthread_join(o->thread, NULL);
    }
    pthread_mutex_destroy(&o->mu);
    pthread_cond_destroy(&o->cv);
    rcl_free(o->c);
    free(o->next.r);
    free(o->cur.r);
    free(o->url);
    free(o);
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

/* Writes the n outcomes of r: one pipelined round trip. @returns 0, or -1 with o->err
 * (the connection is dropped and made again on the next call). */
static int write_recs(consumer_oidx *o, const oidx_rec *r, size_t n)
{
    order_iwrite *w = order_iwrite_new(OIDX_HSET_MAX);
    char *done = calloc(n ? n : 1, 1);
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
        if (done[i])
            continue;
        order_iwrite_begin(w, r[i].order_id, o->ttl_s);
        for (size_t j = i; j < n && order_iwrite_count(w) < OIDX_HSET_MAX; j++) {
            /* another second's id is refused by the builder: it goes with its own HSET */
            if (done[j] || order_iwrite_add(w, r[j].order_id, ORDER_INDEX_OUTCOME_SUFFIX, &r[j].e) != 0)
                continue;
            done[j] = 1;
        }
        if (append_write(o, w, &queued) != 0) {
            snprintf(o->err, sizeof(o->err), "%s", rcl_errstr(o->c));
            failed = 1;
        }
    }
    for (int q = 0; q < queued; q++) {
        redisReply *rep = NULL;
        if (rcl_get_reply(o->c, &rep) != 0) {
            snprintf(o->err, sizeof(o->err), "%s", rcl_errstr(o->c));
            failed = 1;
            break; /* the connection is dropped below: the rest of the pipeline goes with it */
        }
        if (rep->type == REDIS_REPLY_ERROR) {
            snprintf(o->err, sizeof(o->err), "%.200s", rep->str);
            failed = 1;
        }
        freeReplyObject(rep);
    }
    order_iwrite_free(w);
    free(done);
    if (failed) {
        rcl_free(o->c);
        o->c = NULL;
        return -1;
    }
    return 0;
}

static void *oidx_main(void *arg)
{
    consumer_oidx *o = arg;
    pthread_mutex_lock(&o->mu);
    for (;;) {
        while (!o->has_next && !o->quit)
            pthread_cond_wait(&o->cv, &o->mu);
        if (!o->has_next)
            break; /* quit, and everything submitted is written */
        oidx_job t = o->cur; /* take the job; its buffer goes back for the next one */
        o->cur = o->next;
        o->next = t;
        o->next.n = 0;
        o->has_next = 0;
        pthread_cond_broadcast(&o->cv);
        pthread_mutex_unlock(&o->mu);
        if (write_recs(o, o->cur.r, o->cur.n) != 0) {
            atomic_fetch_add(o->failures, 1);
            sk_log(SK_LOG_WARN, "order_index_failed", "writer=%d orders=%zu err=\"%s\"",
                   o->writer, o->cur.n, o->err);
        }
        pthread_mutex_lock(&o->mu);
    }
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

int consumer_oidx_submit(consumer_oidx *o, consumer_batch *b)
{
    size_t n = consumer_batch_count(b);
    pthread_mutex_lock(&o->mu);
    /* One job waits behind the one being written: a slow Redis slows the writer down
     * (as when it waited for the replies itself) rather than piling batches up. */
    while (o->has_next)
        pthread_cond_wait(&o->cv, &o->mu);
    oidx_job *j = &o->next;
    j->n = 0;
    if (j->cap < n) {
        oidx_rec *r = realloc(j->r, n * sizeof(*r));
        if (!r) {
            pthread_mutex_unlock(&o->mu);
            return -1;
        }
        j->r = r;
        j->cap = n;
    }
    for (size_t i = 0; i < n; i++) {
        consumer_batch_msg *m = consumer_batch_msg_at(b, i);
        if (m->err != CONSUMER_MSG_OK || !m->outcome)
            continue;
        j->r[j->n++] = (oidx_rec){(uint64_t)m->order.order_id,
                                  {(uint64_t)m->order.event_id, (uint64_t)m->order.user_id, 0,
                                   m->outcome, m->pay_by_ms}};
    }
    if (j->n > 0) {
        o->has_next = 1;
        pthread_cond_broadcast(&o->cv);
    }
    pthread_mutex_unlock(&o->mu);
    return 0;
}
