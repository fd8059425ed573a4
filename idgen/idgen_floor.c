/* idgen_floor: floor mode, the no-reissue rule that survives a Redis that lost a counter.
 *
 * Design note. The floor of (prefix, day) lives outside Redis (idgen_floor_store; in
 * PostgreSQL, idgen_floor_pg.c) and is always at or above every number any process may
 * hand out, because it is written ahead, as PostgreSQL writes a sequence's cache ahead:
 * a lease whose last number passes this generator's `logged` floor raises the store to
 * last + step before any number of it is used, so most leases need no write, and a
 * restore may skip up to `step` numbers per process ("we may skip as many as we
 * pre-logged"). The day key holds epoch * 2^33 + sequence and is leased by a script
 * that never creates it (lua/idgen_floor_lease.lua): a missing key, a new day or a lost
 * one, is restored first, to the store's floor under a new epoch (SET NX: one restorer
 * wins), never started again at 1.
 *
 * Why the epoch: a lease taken just before Redis lost the key, whose floor write was
 * still on its way when another process restored the key from the older floor, would
 * hand out numbers the restored counter hands out again. So a lease that needed a floor
 * write reads the key again after the write: the same epoch means no restore happened
 * in between (any later restore reads the store after our write); another epoch, or no
 * key, drops the lease. A lease under the logged floor needs neither: that floor was in
 * the store before the lease was taken. Epochs come from the store, one per restore, so
 * they never repeat within a day. */
#include "idgen_int.h"

#include "idgen_core.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEQ_BITS   33
#define SEQ_MASK   ((INT64_C(1) << SEQ_BITS) - 1)
#define EPOCH_MAX  (1u << 20) /* epoch * 2^33 + sequence stays exact in Lua's doubles */
#define ATTEMPTS   8          /* restores overtaking our leases in a row before we give up */
#define STEP_MIN   1000

struct idgen_floor {
    const idgen_backend *be;
    const idgen_floor_store *store;
    const char *prefix; /* the generator's */
    uint32_t step;
    /* The floor this generator knows to be in the store, per day, two slots by parity
     * (days only move forward; incr-mode threads may straddle midnight). */
    pthread_mutex_t mu;
    idgen_day_mark logged;
    _Atomic uint64_t writes, restores;
};

idgen_floor *idgen_floor_new(const idgen_backend *be, const idgen_floor_store *store,
                             const char *prefix, uint32_t step)
{
    idgen_floor *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->be = be;
    f->store = store;
    f->prefix = prefix;
    f->step = step ? step : STEP_MIN;
    idgen_day_mark_init(&f->logged);
    pthread_mutex_init(&f->mu, NULL);
    return f;
}

void idgen_floor_free(idgen_floor *f)
{
    if (!f)
        return;
    pthread_mutex_destroy(&f->mu);
    free(f);
}

void idgen_floor_counts(idgen_floor *f, uint64_t *writes, uint64_t *restores)
{
    *writes = f ? atomic_load(&f->writes) : 0;
    *restores = f ? atomic_load(&f->restores) : 0;
}

static uint64_t logged_get(idgen_floor *f, int64_t day)
{
    pthread_mutex_lock(&f->mu);
    uint64_t v = idgen_day_mark_get(&f->logged, day);
    pthread_mutex_unlock(&f->mu);
    return v;
}

static void logged_raise(idgen_floor *f, int64_t day, uint64_t v)
{
    pthread_mutex_lock(&f->mu);
    idgen_day_mark_raise(&f->logged, day, v);
    pthread_mutex_unlock(&f->mu);
}

/* The key is missing: a restore epoch from the store, then SET NX of its floor. */
static int restore(idgen_floor *f, const char *key, int64_t day, int64_t ttl_s, char *err,
                   size_t errsz)
{
    uint64_t floor = 0;
    uint32_t epoch = 0;
    char serr[256] = "";
    if (f->store->restore(f->store->arg, f->prefix, day, &floor, &epoch, serr, sizeof(serr))) {
        snprintf(err, errsz, "floor store: %s", serr);
        return IDGEN_ERR_FLOOR;
    }
    if (epoch == 0 || epoch >= EPOCH_MAX || floor >= (UINT64_C(1) << SEQ_BITS)) {
        snprintf(err, errsz, "floor store: epoch %u or floor %llu out of range for %.80s",
                 epoch, (unsigned long long)floor, key);
        return IDGEN_ERR_FLOOR;
    }
    /* The floor is what a lease may reach: the restored counter starts there, so its next
     * number is above every number handed out before the loss. */
    int64_t value = (int64_t)epoch << SEQ_BITS | (int64_t)floor;
    if (f->be->floor_set(f->be->arg, key, value, ttl_s, err, errsz))
        return IDGEN_ERR_REDIS;
    logged_raise(f, day, floor);
    atomic_fetch_add(&f->restores, 1);
    return IDGEN_OK;
}

int idgen_floor_lease(idgen_floor *f, const char *key, int64_t day, uint64_t n, int64_t ttl_s,
                      int64_t restore_ttl_s, uint64_t *last, char *err, size_t errsz)
{
    for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
        int64_t v;
        if (f->be->floor_lease(f->be->arg, key, n, ttl_s, &v, err, errsz))
            return IDGEN_ERR_REDIS;
        if (v < 0) {
            int rc = restore(f, key, day, restore_ttl_s, err, errsz);
            if (rc)
                return rc;
            continue;
        }
        uint64_t seq = (uint64_t)(v & SEQ_MASK);
        int64_t epoch = v >> SEQ_BITS;
        if (seq > IDGEN_SEQ_MAX) {
            snprintf(err, errsz, "%.80s reached %llu: the day's 32-bit sequence is exhausted",
                     key, (unsigned long long)seq);
            return IDGEN_ERR_EXHAUSTED;
        }
        if (seq > logged_get(f, day)) {
            uint64_t ahead = (uint64_t)f->step > 4 * n ? f->step : 4 * n;
            uint64_t want = seq + ahead;
            char serr[256] = "";
            if (f->store->raise(f->store->arg, f->prefix, day, want, serr, sizeof(serr))) {
                snprintf(err, errsz, "floor store: %s", serr);
                return IDGEN_ERR_FLOOR; /* the lease is skipped, never handed out */
            }
            atomic_fetch_add(&f->writes, 1);
            logged_raise(f, day, want);
            int64_t now;
            if (f->be->floor_get(f->be->arg, key, &now, err, errsz))
                return IDGEN_ERR_REDIS;
            if (now < 0 || now >> SEQ_BITS != epoch)
                continue; /* a restore overtook this lease: its numbers may come again */
        }
        *last = seq;
        return IDGEN_OK;
    }
    snprintf(err, errsz, "%.80s: restored %d times in a row under our leases", key, ATTEMPTS);
    return IDGEN_ERR_REDIS;
}
