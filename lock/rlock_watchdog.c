/* rlock_watchdog: one background thread per client keeps holds without a lease alive,
 * renewing each at a third of the watchdog timeout (Redisson's lockWatchdogTimeout),
 * pipelined on the thread's own connection. A renewal that finds the hold gone, or a
 * hold not renewed for a whole timeout (Redis unreachable), is reported lost: the
 * handle's lost flag (rlock_is_held) and its callback. Ordering with unlock: see the
 * design note in rlock_int.h. The thread starts with the first registered hold. */
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
static size_t renew_pass(rlock_client_t *c, rcl_ctx **conn, rlock_t **lost)
{
    char err[RLOCK_ERRSTR_SIZE];
    char ttl[24];
    snprintf(ttl, sizeof(ttl), "%d", c->opts.watchdog_timeout_ms);
    if (*conn == NULL)
        *conn = rlock_client_connect(c, err, sizeof(err));
    int64_t now = rlock_now_ms();
    int *res = calloc(c->wd_n ? c->wd_n : 1, sizeof(int)); /* 1 held, 0 gone, -1 unknown */
    if (res == NULL)
        return 0;
    for (size_t i = 0; i < c->wd_n; i++)
        res[i] = -1;
    if (*conn != NULL) {
        /* Pipelined: one round trip per node for all holds. A flushed script cache
         * (NOSCRIPT) is rcluster's to mend: it loads the script and retries that one. */
        const char *argv[4];
        int id, nk, argc;
        size_t sent = 0;
        for (size_t i = 0; i < c->wd_n; i++) {
            renew_args(c->wd_list[i], ttl, &id, &nk, &argc, argv);
            if (rlock_script_append_rcl(*conn, id, nk, argc, argv) == 0)
                res[i] = -3, sent++; /* queued */
        }
        for (size_t i = 0; i < c->wd_n && sent > 0; i++) {
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
    for (size_t i = 0; i < c->wd_n; i++) {
        rlock_t *l = c->wd_list[i];
        if (res[i] == 1)
            l->last_renew_ms = now;
        /* Unknown for a whole timeout: the key may have expired, treat as lost. */
        if (res[i] == 0 || (res[i] < 0 && now - l->last_renew_ms >= c->opts.watchdog_timeout_ms)) {
            atomic_store(&l->lost, 1); /* l->watched is the owner's: unlock deregisters again, harmlessly */
            lost[nlost++] = l;
        } else {
            c->wd_list[keep++] = l;
        }
    }
    c->wd_n = keep;
    free(res);
    return nlost;
}

static void *wd_main(void *arg)
{
    rlock_client_t *c = arg;
    rcl_ctx *conn = NULL;
    int64_t period = c->opts.watchdog_timeout_ms / 3;
    if (period < 1)
        period = 1;
    pthread_mutex_lock(&c->wd_mu);
    int64_t next = rlock_now_ms() + period;
    while (!c->wd_stop) {
        int64_t now = rlock_now_ms();
        if (now < next) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            int64_t ns = ts.tv_nsec + (next - now) * 1000000;
            ts.tv_sec += ns / 1000000000;
            ts.tv_nsec = ns % 1000000000;
            pthread_cond_timedwait(&c->wd_cond, &c->wd_mu, &ts);
            continue;
        }
        next = now + period;
        if (c->wd_n == 0)
            continue;
        rlock_t **lost = malloc(c->wd_n * sizeof(*lost));
        if (lost == NULL)
            continue;
        size_t nlost = renew_pass(c, &conn, lost);
        if (nlost == 0) {
            free(lost);
            continue;
        }
        /* Callbacks outside wd_mu (they may unlock), inside cb_mu (rlock_free waits). */
        pthread_mutex_lock(&c->cb_mu);
        pthread_mutex_unlock(&c->wd_mu);
        for (size_t i = 0; i < nlost; i++)
            if (lost[i]->cb)
                lost[i]->cb(lost[i], lost[i]->name, lost[i]->cb_arg);
        pthread_mutex_unlock(&c->cb_mu);
        free(lost);
        pthread_mutex_lock(&c->wd_mu);
    }
    pthread_mutex_unlock(&c->wd_mu);
    rcl_free(conn);
    return NULL;
}

int rlock_watchdog_register(rlock_client_t *c, rlock_t *l, char *err, size_t errsz)
{
    pthread_mutex_lock(&c->wd_mu);
    int rv = 0;
    if (c->wd_n == c->wd_cap) {
        size_t cap = c->wd_cap ? c->wd_cap * 2 : 8;
        rlock_t **nl = realloc(c->wd_list, cap * sizeof(*nl));
        if (nl == NULL) {
            snprintf(err, errsz, "out of memory");
            rv = RLOCK_ERR_NOMEM;
            goto out;
        }
        c->wd_list = nl;
        c->wd_cap = cap;
    }
    if (!c->wd_started) {
        if (pthread_create(&c->wd_thread, NULL, wd_main, c) != 0) {
            snprintf(err, errsz, "cannot start the watchdog thread");
            rv = RLOCK_ERR_NOMEM;
            goto out;
        }
        pthread_setname_np(c->wd_thread, "rlock-watchdog");
        c->wd_started = 1;
    }
    c->wd_list[c->wd_n++] = l;
out:
    pthread_mutex_unlock(&c->wd_mu);
    return rv;
}

void rlock_watchdog_deregister(rlock_client_t *c, rlock_t *l)
{
    pthread_mutex_lock(&c->wd_mu);
    for (size_t i = 0; i < c->wd_n; i++) {
        if (c->wd_list[i] == l) {
            c->wd_list[i] = c->wd_list[--c->wd_n];
            break;
        }
    }
    pthread_mutex_unlock(&c->wd_mu);
}

void rlock_watchdog_barrier(rlock_client_t *c)
{
    pthread_mutex_lock(&c->cb_mu);
    pthread_mutex_unlock(&c->cb_mu);
}

void rlock_watchdog_stop(rlock_client_t *c)
{
    pthread_mutex_lock(&c->wd_mu);
    int started = c->wd_started;
    c->wd_stop = 1;
    pthread_cond_broadcast(&c->wd_cond);
    pthread_mutex_unlock(&c->wd_mu);
    if (started)
        pthread_join(c->wd_thread, NULL);
}
