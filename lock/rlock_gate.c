/* rlock_gate: this process's waiters of one exclusive lock name, queued locally, so that
 * an unlock wakes one waiter per process instead of every waiter (a thundering herd:
 * each woken waiter asks Redis again, and all but one are refused).
 *
 * Design note. A gate exists per pub/sub channel of an exclusive lock (simple,
 * reentrant, fenced: one holder at a time), shared by the client's handles of that name.
 * One thread at a time is inside the gate: it alone is subscribed (on the gate's own
 * connection, kept while a handle that has waited for the name lives, as a handle kept
 * its own before) and asks Redis again, once per unlock message,
 * or when the holder's lease may have run out (no message is sent then), or at the poll
 * fallback. The others sleep on the gate's condition variable, and the one that leaves
 * wakes the next. This is Redisson's own arrangement: one subscription per channel per
 * process, and its unlock message releases one permit of a semaphore, so one waiter
 * retries. As in Redisson's (non-fair) RLock, a thread that asks tries once at once,
 * before it queues: a releasing thread that asks again often wins, which saves the
 * hand-off's wake-up (RLOCK_FAIR is for arrival order).
 *
 * The gate also counts the holds this process has on the lock (+ after the grant, -
 * before the release is sent). While the count is above zero a holder of this process
 * has not yet sent its release, so its unlock message is still to come: a waiter woken by
 * a message then (a stale one, from before the grant) need not ask Redis at all.
 *
 * Everything here is guarded by the table's one mutex; the subscription itself is used
 * only by the thread inside the gate, outside the mutex. */
#include "rlock_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct rlock_gate {
    struct rlock_gate *next; /* in its bucket */
    char *channel;
    int refs;
    int sub_refs; /* handles that have waited: the subscription lives while one does */
    int inside;   /* a thread waits in Redis */
    int queued;   /* threads asleep on cond */
    int held;     /* holds of this process, unlock not yet sent */
    int64_t lease_end; /* monotonic end of its lease; 0: watchdog (renewed) */
    pthread_cond_t cond;
    rlock_waiter w;
};

static unsigned gate_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h % RLOCK_GATE_BUCKETS;
}

void rlock_gates_init(rlock_gates *t)
{
    memset(t, 0, sizeof(*t));
    pthread_mutex_init(&t->mu, NULL);
}

void rlock_gates_destroy(rlock_gates *t)
{
    /* Every handle put its reference back (handles are freed before their client);
     * what is left here was leaked by a caller: free it anyway. */
    for (int i = 0; i < RLOCK_GATE_BUCKETS; i++) {
        for (rlock_gate *g = t->bucket[i], *nx; g; g = nx) {
            nx = g->next;
            rlock_waiter_close(&g->w);
            pthread_cond_destroy(&g->cond);
            free(g->channel);
            free(g);
        }
        t->bucket[i] = NULL;
    }
    pthread_mutex_destroy(&t->mu);
}

rlock_gate *rlock_gate_get(rlock_gates *t, const char *channel)
{
    unsigned b = gate_hash(channel);
    pthread_mutex_lock(&t->mu);
    rlock_gate *g = t->bucket[b];
    while (g && strcmp(g->channel, channel) != 0)
        g = g->next;
    if (g == NULL && (g = calloc(1, sizeof(*g))) != NULL) {
        if ((g->channel = strdup(channel)) == NULL) {
            free(g);
            g = NULL;
        } else {
            pthread_condattr_t ca;
            pthread_condattr_init(&ca);
            pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
            pthread_cond_init(&g->cond, &ca);
            pthread_condattr_destroy(&ca);
            g->next = t->bucket[b];
            t->bucket[b] = g;
        }
    }
    if (g)
        g->refs++;
    pthread_mutex_unlock(&t->mu);
    return g;
}

void rlock_gate_put(rlock_gates *t, rlock_gate *g, int waited)
{
    if (g == NULL)
        return;
    pthread_mutex_lock(&t->mu);
    if (waited && --g->sub_refs == 0)
        rlock_waiter_close(&g->w); /* nobody inside: the one inside holds a reference */
    int last = --g->refs == 0;
    if (last) {
        rlock_gate **p = &t->bucket[gate_hash(g->channel)];
        while (*p != g)
            p = &(*p)->next;
        *p = g->next;
    }
    pthread_mutex_unlock(&t->mu);
    if (last) {
        rlock_waiter_close(&g->w);
        pthread_cond_destroy(&g->cond);
        free(g->channel);
        free(g);
    }
}

int rlock_gate_enter(rlock_gates *t, rlock_gate *g, int64_t deadline_ms, int *waited)
{
    struct timespec ts = {0};
    if (deadline_ms != INT64_MAX) {
        /* deadline is CLOCK_MONOTONIC ms, as is the condition variable's clock */
        ts.tv_sec = deadline_ms / 1000;
        ts.tv_nsec = (deadline_ms % 1000) * 1000000;
    }
    pthread_mutex_lock(&t->mu);
    int rv = 0;
    g->queued++;
    while (g->inside) {
        int e = deadline_ms == INT64_MAX ? pthread_cond_wait(&g->cond, &t->mu)
                                         : pthread_cond_timedwait(&g->cond, &t->mu, &ts);
        if (e == ETIMEDOUT && g->inside) {
            rv = RLOCK_ERR_TIMEOUT;
            break;
        }
    }
    g->queued--;
    if (rv == 0) {
        g->inside = 1;
        if (!*waited) {
            *waited = 1;
            g->sub_refs++;
        }
    }
    else if (!g->inside && g->queued > 0)
        pthread_cond_signal(&g->cond); /* a wake-up we may have swallowed goes on */
    pthread_mutex_unlock(&t->mu);
    return rv;
}

void rlock_gate_leave(rlock_gates *t, rlock_gate *g)
{
    pthread_mutex_lock(&t->mu);
    g->inside = 0;
    if (g->queued > 0)
        pthread_cond_signal(&g->cond);
    pthread_mutex_unlock(&t->mu);
}

rlock_waiter *rlock_gate_waiter(rlock_gate *g) { return &g->w; }

void rlock_gate_held(rlock_gates *t, rlock_gate *g, int n, int64_t lease_end_ms)
{
    if (g == NULL || n == 0)
        return;
    pthread_mutex_lock(&t->mu);
    g->held += n;
    if (g->held < 0)
        g->held = 0;
    if (n > 0)
        g->lease_end = lease_end_ms;
    pthread_mutex_unlock(&t->mu);
}

int rlock_gate_is_held(rlock_gates *t, rlock_gate *g, int64_t *left_ms)
{
    pthread_mutex_lock(&t->mu);
    int h = g->held > 0;
    int64_t end = g->lease_end;
    pthread_mutex_unlock(&t->mu);
    *left_ms = 0;
    if (h && end > 0) {
        /* a lease hold: held no longer than its lease, whatever the count says */
        *left_ms = end - rlock_now_ms();
        h = *left_ms > 0;
    }
    return h;
}
