/* order_loader: an event's Redis gate, loaded under its lock. See order_loader.h. */
#include "order_loader.h"
#include "order_msg.h"
#include "rcluster.h"
#include "rlock.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOCK_WAIT_MS 2000
#define LOCK_LEASE_MS 10000 /* far above one EVAL: the lease only matters if we die */

struct order_loader {
    char *url_text;
    const order_scripts *scripts;
    int timeout_ms;
    pthread_mutex_t mu;
    rlock_client_t *locks; /* NULL until first use */
    rcl_ctx *c;            /* NULL until first use, and after an I/O error */
};

order_loader *order_loader_new(const char *url_text, const order_scripts *scripts,
                               int timeout_ms)
{
    order_loader *l = calloc(1, sizeof(*l));
    if (!l || !(l->url_text = strdup(url_text))) {
        free(l);
        return NULL;
    }
    l->scripts = scripts;
    l->timeout_ms = timeout_ms;
    pthread_mutex_init(&l->mu, NULL);
    return l;
}

/* EVALSHA event_load.lua on one segment (rcluster loads it on a node that answers
 * NOSCRIPT). Called with mu held and l->c connected. */
static int load_segment(order_loader *l, uint64_t event_id, const order_event_spec *spec,
                        unsigned seg, unsigned k, char *err, size_t errsz)
{
    char stock[ORDER_KEY_MAX], meta[ORDER_KEY_MAX], n[24], s[24], e[24], lim[12], ks[12];
    char ip[24], user[24], ev[24], pow[24];
    order_key_seg(event_id, seg, ORDER_KEY_STOCK, stock, sizeof(stock));
    order_key_seg(event_id, seg, ORDER_KEY_META, meta, sizeof(meta));
    /* the stock split as evenly as it goes: the first stock % k segments get one more */
    int64_t share = spec->stock / k + ((int64_t)seg < spec->stock % k ? 1 : 0);
    snprintf(n, sizeof(n), "%" PRId64, share);
    snprintf(s, sizeof(s), "%" PRId64, spec->starts_at_ms);
    snprintf(e, sizeof(e), "%" PRId64, spec->ends_at_ms);
    snprintf(lim, sizeof(lim), "%d", spec->per_user_limit);
    snprintf(ks, sizeof(ks), "%u", k);
    snprintf(ip, sizeof(ip), "%" PRId64, spec->limits.ip_rate);
    snprintf(user, sizeof(user), "%" PRId64, spec->limits.user_rate);
    snprintf(ev, sizeof(ev), "%" PRId64, spec->limits.event_rate);
    snprintf(pow, sizeof(pow), "%" PRId64, spec->limits.challenge_bits);
    const char *argv[14] = {"EVALSHA", l->scripts->sha[ORDER_SCRIPT_EVENT_LOAD], "2", stock, meta,
                            n, s, e, lim, ks, ip, user, ev, pow};
    redisReply *r = rcl_command_argv(l->c, 14, argv, NULL);
    if (!r) {
        snprintf(err, errsz, "event_load: %s", rcl_errstr(l->c));
        rcl_free(l->c);
        l->c = NULL;
        return -1;
    }
    int rc = -1;
    if (r->type == REDIS_REPLY_INTEGER)
        rc = r->integer == 1 ? 1 : 0;
    else
        snprintf(err, errsz, "event_load: %s", r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    freeReplyObject(r);
    return rc;
}

/* Every segment of the event, each in its own call (their keys are in K slots).
 * Segment 0 last: whatever loads the event first, the later segments are in place by
 * the time reserve.lua on segment 0 (the one a front that does not know K asks) sells.
 * @returns 1 if segment 0 was loaded now, 0 if it was there, -1 on a failure. */
static int run_script(order_loader *l, uint64_t event_id, const order_event_spec *spec,
                      char *err, size_t errsz)
{
    unsigned k = spec->segments > 1 ? (unsigned)spec->segments : 1;
    for (unsigned seg = k - 1; seg > 0; seg--)
        if (load_segment(l, event_id, spec, seg, k, err, errsz) < 0)
            return -1;
    return load_segment(l, event_id, spec, 0, k, err, errsz);
}

/* Connects what is not connected yet. Called with mu held. @returns 0 or -1 (err). */
static int ensure_connected(order_loader *l, char *err, size_t errsz)
{
    if (!l->locks) {
        rlock_client_opts o = {.connect_timeout_ms = l->timeout_ms};
        l->locks = rlock_client_new(l->url_text, &o, err, errsz);
        if (!l->locks)
            return -1;
    }
    if (!l->c) {
        struct timeval tv = {l->timeout_ms / 1000, (l->timeout_ms % 1000) * 1000};
        char sha[41];
        l->c = rcl_connect(l->url_text, tv, err, errsz);
        if (!l->c)
            return -1;
        if (rcl_script_add(l->c, l->scripts->body[ORDER_SCRIPT_EVENT_LOAD], sha) != 0 ||
            rcl_script_add(l->c, l->scripts->body[ORDER_SCRIPT_EVENT_RESTOCK], sha) != 0) {
            snprintf(err, errsz, "out of memory");
            rcl_free(l->c);
            l->c = NULL;
            return -1;
        }
    }
    return 0;
}

/* fn under the event's lock (mu held throughout). @returns fn's result, or -1 when the
 * lock or a connection failed (err). */
static int under_lock(order_loader *l, uint64_t event_id,
                      int (*fn)(order_loader *l, void *arg, char *err, size_t errsz), void *arg,
                      char *err, size_t errsz)
{
    pthread_mutex_lock(&l->mu);
    int rc = -1;
    if (ensure_connected(l, err, errsz) != 0)
        goto out;
    char name[ORDER_KEY_MAX];
    snprintf(name, sizeof(name), "seckill:{e%" PRIu64 "}:lock", event_id);
    rlock_t *lock = rlock_new(l->locks, name, RLOCK_SIMPLE);
    if (!lock) {
        snprintf(err, errsz, "out of memory");
        goto out;
    }
    uint64_t fence = 0;
    int lrc = rlock_try_lock(lock, LOCK_WAIT_MS, LOCK_LEASE_MS, &fence);
    if (lrc != RLOCK_OK) {
        snprintf(err, errsz, "lock %s: %s", name, rlock_errstr(lock));
        rlock_free(lock);
        goto out;
    }
    rc = fn(l, arg, err, errsz);
    if (rlock_unlock(lock) != RLOCK_OK && rc >= 0)
        /* done, but the lease ran out under us: say so (neither script overwrites a
         * loaded stock, and a restock is a delta) */
        snprintf(err, errsz, "lock %s lost before unlock", name);
    rlock_free(lock);
out:
    pthread_mutex_unlock(&l->mu);
    return rc;
}

typedef struct load_args {
    uint64_t event_id;
    const order_event_spec *spec;
} load_args;

static int load_locked(order_loader *l, void *arg, char *err, size_t errsz)
{
    load_args *a = arg;
    return run_script(l, a->event_id, a->spec, err, errsz);
}

int order_loader_load(order_loader *l, uint64_t event_id, const order_event_spec *spec,
                      char *err, size_t errsz)
{
    load_args a = {event_id, spec};
    return under_lock(l, event_id, load_locked, &a, err, errsz);
}

/* ---- restock (issue 32) ------------------------------------------------------------ */

typedef struct restock_args {
    uint64_t event_id;
    unsigned k;
    int64_t delta;
    int64_t applied[ORDER_SEGMENTS_MAX];
    int64_t *available;
} restock_args;

/* event_restock.lua on one segment. @returns 1 and *applied, 0 not loaded, -1 error. */
static int restock_segment(order_loader *l, uint64_t event_id, unsigned seg, int64_t delta,
                           int64_t *applied, char *err, size_t errsz)
{
    char stock[ORDER_KEY_MAX], d[24];
    order_key_seg(event_id, seg, ORDER_KEY_STOCK, stock, sizeof(stock));
    snprintf(d, sizeof(d), "%" PRId64, delta);
    const char *argv[5] = {"EVALSHA", l->scripts->sha[ORDER_SCRIPT_EVENT_RESTOCK], "1", stock, d};
    redisReply *r = rcl_command_argv(l->c, 5, argv, NULL);
    if (!r) {
        snprintf(err, errsz, "event_restock: %s", rcl_errstr(l->c));
        rcl_free(l->c);
        l->c = NULL;
        return -1;
    }
    int rc = -1;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_INTEGER && r->element[1]->type == REDIS_REPLY_INTEGER) {
        rc = r->element[0]->integer == 1 ? 1 : 0;
        *applied = r->element[1]->integer;
    } else {
        snprintf(err, errsz, "event_restock: %s",
                 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    }
    freeReplyObject(r);
    return rc;
}

/* Gives back what the segments before `upto` applied (a restock that cannot be whole
 * changes nothing). A failure here is logged by the caller through err. */
static void restock_undo(order_loader *l, restock_args *a, unsigned upto, char *err, size_t errsz)
{
    for (unsigned seg = 0; seg < upto; seg++) {
        int64_t back = 0;
        if (a->applied[seg] != 0 && (!l->c || restock_segment(l, a->event_id, seg,
                                                              -a->applied[seg], &back, err,
                                                              errsz) != 1 ||
                                     back != -a->applied[seg]))
            snprintf(err, errsz, "event_restock: undo of segment %u failed", seg);
    }
}

static int restock_locked(order_loader *l, void *arg, char *err, size_t errsz)
{
    restock_args *a = arg;
    int64_t want = a->delta < 0 ? -a->delta : a->delta, done = 0;
    for (unsigned seg = 0; seg < a->k; seg++) {
        /* an addition split as the load splits the stock; a removal taken from the
         * segments in order, each giving what it has unsold */
        int64_t d = a->delta > 0 ? a->delta / a->k + ((int64_t)seg < a->delta % a->k ? 1 : 0)
                                 : -(want - done);
        a->applied[seg] = 0;
        if (d == 0)
            continue;
        int rc = restock_segment(l, a->event_id, seg, d, &a->applied[seg], err, errsz);
        if (rc != 1) {
            restock_undo(l, a, seg, err, errsz);
            return rc;
        }
        done += a->applied[seg] < 0 ? -a->applied[seg] : a->applied[seg];
        if (a->delta < 0 && done == want)
            break;
    }
    if (done < want) { /* a removal past what is unsold */
        *a->available = done;
        restock_undo(l, a, a->k, err, errsz);
        return 2;
    }
    return 1;
}

int order_loader_restock(order_loader *l, uint64_t event_id, unsigned k, int64_t delta,
                         int64_t *available, char *err, size_t errsz)
{
    restock_args a = {event_id, k >= 1 && k <= ORDER_SEGMENTS_MAX ? k : 1, delta, {0}, available};
    *available = 0;
    return under_lock(l, event_id, restock_locked, &a, err, errsz);
}

/* ---- removal (issue 32) ------------------------------------------------------------ */

typedef struct remove_args {
    uint64_t event_id;
    unsigned k;
    int64_t *held;
} remove_args;

/* One integer reply of a blocking call. @returns 0, or -1 (err; the context dropped on
 * an I/O error). */
static int int_call(order_loader *l, int argc, const char **argv, long long *out, char *err,
                    size_t errsz)
{
    redisReply *r = rcl_command_argv(l->c, argc, argv, NULL);
    if (!r) {
        snprintf(err, errsz, "%s: %s", argv[0], rcl_errstr(l->c));
        rcl_free(l->c);
        l->c = NULL;
        return -1;
    }
    int rc = r->type == REDIS_REPLY_INTEGER ? 0 : -1;
    if (rc == 0)
        *out = r->integer;
    else
        snprintf(err, errsz, "%s: %s", argv[0], r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    freeReplyObject(r);
    return rc;
}

static int remove_locked(order_loader *l, void *arg, char *err, size_t errsz)
{
    remove_args *a = arg;
    long long n;
    *a->held = 0;
    /* a buyer or a pending entry anywhere: an order was taken (it may not be in
     * PostgreSQL yet) */
    for (unsigned seg = 0; seg < a->k; seg++) {
        char b[ORDER_KEY_MAX], p[ORDER_KEY_MAX];
        order_key_seg(a->event_id, seg, ORDER_KEY_BUYERS, b, sizeof(b));
        order_key_seg(a->event_id, seg, ORDER_KEY_PENDING, p, sizeof(p));
        /* the buyers key is a hash (buyer -> order id), as the pending one */
        const char *sc[2] = {"HLEN", b}, *hl[2] = {"HLEN", p};
        if (int_call(l, 2, sc, &n, err, errsz) != 0)
            return -1;
        *a->held += n;
        if (int_call(l, 2, hl, &n, err, errsz) != 0)
            return -1;
        *a->held += n;
    }
    if (*a->held > 0)
        return 2;
    for (unsigned seg = 0; seg < a->k; seg++) {
        char keys[ORDER_KEY_COUNT + 1][ORDER_KEY_MAX];
        const char *argv[ORDER_KEY_COUNT + 2] = {"DEL"};
        int argc = 1;
        for (int kind = 0; kind < ORDER_KEY_COUNT; kind++) {
            order_key_seg(a->event_id, seg, (order_key_kind)kind, keys[kind], sizeof(keys[kind]));
            argv[argc++] = keys[kind];
        }
        if (seg == 0) { /* the event's shared rate bucket lives in segment 0's slot */
            snprintf(keys[ORDER_KEY_COUNT], sizeof(keys[ORDER_KEY_COUNT]),
                     "seckill:{e%" PRIu64 "}:rate", a->event_id);
            argv[argc++] = keys[ORDER_KEY_COUNT];
        }
        if (int_call(l, argc, argv, &n, err, errsz) != 0)
            return -1;
    }
    return 1;
}

int order_loader_remove(order_loader *l, uint64_t event_id, unsigned k, int64_t *held,
                        char *err, size_t errsz)
{
    remove_args a = {event_id, k >= 1 && k <= ORDER_SEGMENTS_MAX ? k : 1, held};
    return under_lock(l, event_id, remove_locked, &a, err, errsz);
}

void order_loader_free(order_loader *l)
{
    if (!l)
        return;
    rcl_free(l->c);
    rlock_client_free(l->locks);
    pthread_mutex_destroy(&l->mu);
    free(l->url_text);
    free(l);
}
