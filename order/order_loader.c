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

int order_loader_load(order_loader *l, uint64_t event_id, const order_event_spec *spec,
                      char *err, size_t errsz)
{
    pthread_mutex_lock(&l->mu);
    int rc = -1;
    if (!l->locks) {
        rlock_client_opts o = {.connect_timeout_ms = l->timeout_ms};
        l->locks = rlock_client_new(l->url_text, &o, err, errsz);
        if (!l->locks)
            goto out;
    }
    if (!l->c) {
        struct timeval tv = {l->timeout_ms / 1000, (l->timeout_ms % 1000) * 1000};
        char sha[41];
        l->c = rcl_connect(l->url_text, tv, err, errsz);
        if (!l->c)
            goto out;
        if (rcl_script_add(l->c, l->scripts->body[ORDER_SCRIPT_EVENT_LOAD], sha) != 0) {
            snprintf(err, errsz, "out of memory");
            rcl_free(l->c);
            l->c = NULL;
            goto out;
        }
    }
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
    rc = run_script(l, event_id, spec, err, errsz);
    if (rlock_unlock(lock) != RLOCK_OK && rc >= 0)
        /* loaded, but the lease ran out under us: say so, the gate is right anyway
         * (event_load.lua never overwrites a loaded stock). */
        snprintf(err, errsz, "lock %s lost before unlock", name);
    rlock_free(lock);
out:
    pthread_mutex_unlock(&l->mu);
    return rc;
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
