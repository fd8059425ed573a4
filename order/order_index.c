/* order_index: the order index writes, one HSET per second per loop turn. See order_index.h. */
#include "order_index.h"
#include "order_iwrite.h"
#include "order_msg.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* The most entries in one HSET: two words each, beside HSET and the key, within what
 * order_redis_command takes. */
#define INDEX_BATCH_MAX 64

typedef struct index_entry {
    uint64_t order_id, event_id, user_id;
    int acked, sent;
} index_entry;

struct order_index {
    order_redis *redis;
    long long ttl_s;
    struct event *flush_ev;
    index_entry *v; /* this turn's entries */
    size_t n, cap;
    order_iwrite *w; /* the HSET + EXPIRE of one hash, reused */
};

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    order_index_flush(arg);
}

order_index *order_index_new(struct event_base *base, order_redis *redis, long long ttl_s)
{
    order_index *ix = calloc(1, sizeof(*ix));
    if (!ix)
        return NULL;
    ix->redis = redis;
    ix->ttl_s = ttl_s;
    ix->flush_ev = event_new(base, -1, 0, on_flush, ix);
    ix->w = order_iwrite_new(INDEX_BATCH_MAX);
    if (!ix->flush_ev || !ix->w) {
        if (ix->flush_ev)
            event_free(ix->flush_ev);
        order_iwrite_free(ix->w);
        free(ix);
        return NULL;
    }
    return ix;
}

int order_index_add(order_index *ix, uint64_t order_id, uint64_t event_id, uint64_t user_id,
                    int acked)
{
    if (ix->n == ix->cap) {
        size_t cap = ix->cap ? 2 * ix->cap : 64;
        index_entry *v = realloc(ix->v, cap * sizeof(*v));
        if (!v)
            return -1;
        ix->v = v;
        ix->cap = cap;
    }
    if (ix->n == 0)
        event_active(ix->flush_ev, EV_TIMEOUT, 0); /* this thread's loop: no wake-up */
    ix->v[ix->n++] = (index_entry){order_id, event_id, user_id, acked, 0};
    return 0;
}

/* One HSET of `n` entries into the hash of `bucket_of`'s second, then its EXPIRE. */
static void write_hash(order_index *ix, uint64_t bucket_of, index_entry *const *es, size_t n)
{
    order_iwrite_begin(ix->w, bucket_of, ix->ttl_s);
    for (size_t i = 0; i < n; i++) {
        order_index_entry e = {es[i]->event_id, es[i]->user_id, es[i]->acked, 0, 0};
        order_iwrite_add(ix->w, es[i]->order_id, "", &e); /* one bucket, n <= its capacity */
    }
    const char **argv;
    const size_t *lens;
    int argc = order_iwrite_hset(ix->w, &argv, &lens);
    order_redis_command(ix->redis, argc, argv, lens, NULL, NULL);
    argc = order_iwrite_expire(ix->w, &argv, &lens);
    order_redis_command(ix->redis, argc, argv, lens, NULL, NULL);
}

void order_index_flush(order_index *ix)
{
    index_entry *batch[INDEX_BATCH_MAX];
    for (size_t first = 0; first < ix->n; first++) {
        if (ix->v[first].sent)
            continue;
        uint64_t bucket = order_index_bucket(ix->v[first].order_id);
        size_t n = 0;
        for (size_t i = first; i < ix->n && n < INDEX_BATCH_MAX; i++) {
            if (ix->v[i].sent || order_index_bucket(ix->v[i].order_id) != bucket)
                continue;
            ix->v[i].sent = 1;
            batch[n++] = &ix->v[i];
        }
        write_hash(ix, ix->v[first].order_id, batch, n);
    }
    ix->n = 0;
}

void order_index_free(order_index *ix)
{
    if (!ix)
        return;
    event_free(ix->flush_ev);
    order_iwrite_free(ix->w);
    free(ix->v);
    free(ix);
}
