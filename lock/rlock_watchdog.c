/* rlock_watchdog: one background thread per client keeps holds without a lease alive,
 * renewing each at a third of the watchdog timeout (Redisson's lockWatchdogTimeout),
 * pipelined on the thread's own connection. A renewal that finds the hold gone, or a
 * hold not renewed for a whole timeout (Redis unreachable), is reported lost: the
 * handle's lost flag (rlock_is_held) and its callback. Ordering with unlock: see the
 * design note in rlock_int.h. The thread starts with the first registered hold. It
 * knows its settings and a function to connect, not the client (calls go one way). */
#include "rlock_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void renew_args(rlock_t *l, const char *ttl, int *id, int *nk, int *argc, const char **argv)
{
    /* Redisson mode: as Redisson's LockTask (hexists -> pexpire) and ReadLockTask */
    if (l->rs && l->kind == RLOCK_READ) {
        *id = RLOCK_S_RS_READ_RENEW, *nk = 2, *argc = 4;
        argv[0] = l->key, argv[1] = l->rexp_key, argv[2] = l->token, argv[3] = ttl;
        return;
    }
    if (l->rs) {
        *id = RLOCK_S_REENTRANT_RENEW, *nk = 1, *argc = 3;
        argv[0] = l->key, argv[1] = l->token, argv[2] = ttl;
        return;
    }
    switch (l->kind) {
    case RLOCK_SIMPLE:
        *id = RLOCK_S_SIMPLE_RENEW, *nk = 1, *argc = 3;
        argv[0] = l->key, argv[1] = l->token, argv[2] = ttl;
        break;
    case RLOCK_REENTRANT:
    case RLOCK_FAIR:
    case RLOCK_SPIN:
    case RLOCK_FENCED:
        *id = RLOCK_S_REENTRANT_RENEW, *nk = 1, *argc = 3;
        argv[0] = l->key, argv[1] = l->token, argv[2] = ttl;
        break;
    default:
        *id = RLOCK_S_RW_RENEW, *nk = 2, *argc = 4;
        argv[0] = l->key, argv[1] = l->rexp_key, argv[2] = l->token, argv[3] = ttl;
        break;
    }
}

/* One renewal pass over every registered hold, with wd_mu held. Moves the holds found
 * lost to lost[] (caller-provided, wd_cap long) and returns how many. */
static size_t renew_pass(rlock_watchdog *wd, rcl_ctx **conn, rlock_t **lost)
{
    char err[RLOCK_ERRSTR_SIZE];
    char ttl[24];
    snprintf(ttl, sizeof(ttl), "%d", wd->timeout_ms);
    if (*conn == NULL)
        *conn = wd->connect(wd->connect_arg, err, sizeof(err));
    int64_t now = rlock_now_ms();
    int *res = calloc(wd->n ? wd->n : 1, sizeof(int)); /* 1 held, 0 gone, -1 unknown */
    if (res == NULL)
        return 0;
    for (size_t i = 0; i < wd->n; i++)
        res[i] = -1;
    if (*conn != NULL) {
        /* Pipelined: one round trip per node for all holds. A flushed script cache
         * (NOSCRIPT) is rcluster's to mend: it loads the script and retries that one. */
        const char *argv[4];
        int id, nk, argc;
        size_t sent = 0;
        for (size_t i = 0; i < wd->n; i++) {
            renew_args(wd->list[i], ttl, &id, &nk, &argc, argv);
            if (rlock_script_append_rcl(*conn, id, nk, argc, argv) == 0)
                res[i] = -3, sent++; /* queued */
        }
        for (size_t i = 0; i < wd->n && sent > 0; i++) {
            if (res[i] != -3)
                continue;
            sent--;
            redisReply *r = NULL;
            res[i] = -1;
            if (rcl_get_reply(*conn, &r) != 0)
                continue;
            if (r->type == REDIS_REPLY_INTEGER)
                res[i] = r->integer == 1;
            freeReplyObject(r);
        }
    }
    size_t nlost = 0, keep = 0;
    for (size_t i = 0; i < wd->n; i++) {
        rlock_t *l = wd->list[i];
        if (res[i] == 1)
            l->last_renew_ms = now;
        /* Unknown for a whole timeout: the key may have expired, treat as lost. */
        if (res[i] == 0 || (res[i] < 0 && now - l->last_renew_ms >= wd->timeout_ms)) {
            atomic_store(&l->lost, 1); /* l->watched is the owner's: unlock deregisters again, harmlessly */
            lost[nlost++] = l;
        } else {
            wd->list[keep++] = l;
        }
    }
    wd->n = keep;
    free(res);
    return nlost;
}

static void *wd_main(void *arg)
{
    rlock_watchdog *wd = arg;
    rcl_ctx *conn = NULL;
    int64_t period = wd->timeout_ms / 3;
    if (period < 1)
        period = 1;
    pthread_mutex_lock(&wd->mu);
    int64_t next = rlock_now_ms() + period;
    while (!wd->stop) {
        int64_t now = rlock_now_ms();
        if (now < next) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            int64_t ns = ts.tv_nsec + (next - now) * 1000000;
            ts.tv_sec += ns / 1000000000;
            ts.tv_nsec = ns % 1000000000;
            pthread_cond_timedwait(&wd->cond, &wd->mu, &ts);
            continue;
        }
        next = now + period;
        if (wd->n == 0)
            continue;
        rlock_t **lost = malloc(wd->n * sizeof(*lost));
        if (lost == NULL)
            continue;
        size_t nlost = renew_pass(wd, &conn, lost);
        if (nlost == 0) {
            free(lost);
            continue;
        }
        /* Callbacks outside wd_mu (they may unlock), inside cb_mu (rlock_free waits). */
        pthread_mutex_lock(&wd->cb_mu);
        pthread_mutex_unlock(&wd->mu);
        for (size_t i = 0; i < nlost; i++)
            if (lost[i]->cb)
                lost[i]->cb(lost[i], lost[i]->name, lost[i]->cb_arg);
        pthread_mutex_unlock(&wd->cb_mu);
        free(lost);
        pthread_mutex_lock(&wd->mu);
    }
    pthread_mutex_unlock(&wd->mu);
    rcl_free(conn);
    return NULL;
}

int rlock_watchdog_register(rlock_watchdog *wd, rlock_t *l, char *err, size_t errsz)
{
    pthread_mutex_lock(&wd->mu);
    int rv = 0;
    if (wd->n == wd->cap) {
        size_t cap = wd->cap ? wd->cap * 2 : 8;
        rlock_t **nl = realloc(wd->list, cap * sizeof(*nl));
        if (nl == NULL) {
            snprintf(err, errsz, "out of memory");
            rv = RLOCK_ERR_NOMEM;
            goto out;
        }
        wd->list = nl;
        wd->cap = cap;
    }
    if (!wd->started) {
        if (pthread_create(&wd->thread, NULL, wd_main, wd) != 0) {
            snprintf(err, errsz, "cannot start the watchdog thread");
            rv = RLOCK_ERR_NOMEM;
            goto out;
        }
        pthread_setname_np(wd->thread, "rlock-watchdog");
        wd->started = 1;
    }
    wd->list[wd->n++] = l;
out:
    pthread_mutex_unlock(&wd->mu);
    return rv;
}

void rlock_watchdog_deregister(rlock_watchdog *wd, rlock_t *l)
{
    pthread_mutex_lock(&wd->mu);
    for (size_t i = 0; i < wd->n; i++) {
        if (wd->list[i] == l) {
            wd->list[i] = wd->list[--wd->n];
            break;
        }
    }
    pthread_mutex_unlock(&wd->mu);
}

void rlock_watchdog_barrier(rlock_watchdog *wd)
{
    pthread_mutex_lock(&wd->cb_mu);
    pthread_mutex_unlock(&wd->cb_mu);
}

void rlock_watchdog_init(rlock_watchdog *wd, int timeout_ms, rlock_connect_fn *connect, void *arg)
{
    memset(wd, 0, sizeof(*wd));
    wd->timeout_ms = timeout_ms;
    wd->connect = connect;
    wd->connect_arg = arg;
    pthread_mutex_init(&wd->mu, NULL);
    pthread_mutex_init(&wd->cb_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wd->cond, &ca);
    pthread_condattr_destroy(&ca);
}

void rlock_watchdog_stop(rlock_watchdog *wd)
{
    pthread_mutex_lock(&wd->mu);
    int started = wd->started;
    wd->stop = 1;
    pthread_cond_broadcast(&wd->cond);
    pthread_mutex_unlock(&wd->mu);
    if (started)
        pthread_join(wd->thread, NULL);
    free(wd->list);
    wd->list = NULL;
    pthread_mutex_destroy(&wd->mu);
    pthread_mutex_destroy(&wd->cb_mu);
    pthread_cond_destroy(&wd->cond);
}
