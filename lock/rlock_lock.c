/* rlock_lock: the lock handles: simple, reentrant, fair, read, write, spin and fenced
 * locks. Each acquisition and release is one script (lua/rlock_*.lua); waiting is
 * rlock_wait.c (a spin lock polls with back-off instead), behind this process's queue of
 * waiters for the name (rlock_gate.c) for the exclusive kinds; renewal of holds without
 * a lease is rlock_watchdog.c. */
#include "rlock_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Redisson's fair lock: a waiter queued without a wait of its own stays queued this
 * long past the one before it (Redisson's default fairLockWaitTimeout, 5 minutes). */
#define RS_FAIR_WAIT_MS 300000

/* Redisson mode: Redisson's names for an RLock (reentrant), RFairLock or RReadWriteLock
 * (read, write) called `name` (see lock/README.md). The fencing counter is ours, in the
 * slot of the lock. */
static rlock_t *rs_init(rlock_t *l, const char *name)
{
    int rw = l->kind == RLOCK_READ || l->kind == RLOCK_WRITE;
    l->rs = 1;
    l->name = strdup(name);
    l->key = strdup(name);
    l->fence_key = l->kind == RLOCK_FENCED ? rlock_rs_name_dup("redisson_lock_token", name, NULL)
                                           : rlock_rs_name_dup(NULL, name, "rlock_fence");
    l->queue_key = rlock_rs_name_dup("redisson_lock_queue", name, NULL);
    l->tmo_key = rlock_rs_name_dup("redisson_lock_timeout", name, NULL);
    l->rs_chan = rlock_rs_name_dup("redisson_lock__channel", name, NULL);
    l->rexp_key = strchr(name, '{') ? strdup(name) : rlock_rs_name_dup(NULL, name, "");
    if (l->rexp_key && !strchr(name, '{'))
        l->rexp_key[strlen(l->rexp_key) - 1] = '\0'; /* "{name}:" -> "{name}" */
    l->channel = rlock_rs_name_dup(rw ? "redisson_rwlock" : "redisson_lock__channel", name, NULL);
    return l;
}

rlock_t *rlock_new(rlock_client_t *c, const char *name, rlock_kind_t kind)
{
    if (c == NULL || name == NULL || kind < RLOCK_SIMPLE || kind > RLOCK_FENCED ||
        rlock_key_build(NULL, 0, name, "") < 0)
        return NULL;
    if (c->opts.redisson && strlen(name) > RLOCK_KEY_SIZE_RS / 2)
        return NULL;
    rlock_t *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return NULL;
    l->c = c;
    l->kind = kind;
    atomic_init(&l->lost, 0);
    if (c->opts.redisson && kind != RLOCK_SIMPLE) {
        rs_init(l, name);
        goto check;
    }
    /* A read-write lock lives apart (":rw") from a plain lock of the same name, so the
     * two never meet on one key with different types. */
    int rw = kind == RLOCK_READ || kind == RLOCK_WRITE;
    l->name = strdup(name);
    l->key = rlock_key_dup(name, rw ? ":rw" : "");
    l->fence_key = rlock_key_dup(name, ":fence");
    l->queue_key = rlock_key_dup(name, ":queue");
    l->tmo_key = rlock_key_dup(name, ":timeouts");
    l->rexp_key = rlock_key_dup(name, ":rw:readers");
    l->channel = rlock_key_dup(name, rw ? ":rw:ch" : ":ch");
check:
    if (!l->name || !l->key || !l->fence_key || !l->queue_key || !l->tmo_key || !l->rexp_key ||
        !l->channel || (l->rs && !l->rs_chan)) {
        rlock_free(l);
        return NULL;
    }
    /* One holder at a time: one waiter per process need ask Redis (rlock_gate.c). The
     * fair lock already wakes only the next waiter; readers may enter together; a spin
     * lock does not listen. Without a gate (out of memory) waiting is as correct. */
    if (kind == RLOCK_SIMPLE || kind == RLOCK_REENTRANT || kind == RLOCK_FENCED)
        l->gate = rlock_gate_get(&c->gates, l->channel);
    return l;
}

void rlock_free(rlock_t *l)
{
    if (l == NULL)
        return;
    if (l->watched) {
        rlock_watchdog_deregister(&l->c->wd, l);
        l->watched = 0;
    }
    rlock_watchdog_barrier(&l->c->wd);
    rlock_waiter_close(&l->w);
    rlock_gate_held(&l->c->gates, l->gate, -l->gate_holds, 0);
    rlock_gate_put(&l->c->gates, l->gate, l->gate_waited);
    free(l->name);
    free(l->key);
    free(l->fence_key);
    free(l->queue_key);
    free(l->tmo_key);
    free(l->rexp_key);
    free(l->channel);
    free(l->rs_chan);
    free(l);
}

const char *rlock_errstr(const rlock_t *l) { return l->errstr; }
uint64_t rlock_fence(const rlock_t *l) { return l->fence; }

void rlock_set_lost_cb(rlock_t *l, rlock_lost_cb *cb, void *arg)
{
    l->cb = cb;
    l->cb_arg = arg;
}

/* The hash field of the calling thread's hold: "clientid:tid", and "clientid:tid:write"
 * for the write side, in both modes (RedissonWriteLock.getLockName): the write holder's
 * reads are counted apart from its writes, so its last write unlock downgrades. */
static void hold_field(const rlock_t *l, char out[RLOCK_OWNER_SIZE])
{
    rlock_client_owner(l->c, out);
    if (l->kind == RLOCK_WRITE) {
        size_t n = strlen(out);
        snprintf(out + n, RLOCK_OWNER_SIZE - n, ":write");
    }
}

/* Redisson mode, read side: "{name}:<uuid>:<tid>:rwlock_timeout", the prefix of this
 * owner's per-hold timeout keys (RedissonReadLock.getReadWriteTimeoutNamePrefix). */
static void rs_read_timeout_prefix(const rlock_t *l, const char *owner, char *out, size_t outsz)
{
    snprintf(out, outsz, "%s:%s:rwlock_timeout", l->rexp_key, owner);
}

struct acquire {
    rlock_t *l;
    const char *who; /* token (simple) or owner */
    char owner_write[RLOCK_OWNER_SIZE + 8]; /* Redisson read side: owner + ":write" */
    char rs_wait[24];                       /* Redisson fair lock: this waiter's wait */
    char *rtmo;                         /* Redisson read side: timeout prefix */
    char ttl[24];
    char waiter_ttl[24];
    char keep[24]; /* how long the fencing counter outlives its last use */
    int64_t t0; /* start of the winning attempt: the lease counts from before it */
    int64_t lease_ms; /* the hold's lease (0: watchdog) */
    int gated_calls;  /* attempts made inside the gate */
    int64_t last_try;   /* fair: last attempt sent (it refreshes our place in the queue) */
    int64_t refresh_ms; /* fair: attempt at least this often */
    uint64_t fence;
};

/* Parses {1, fence} / {0, pttl}. */
static int parse_acquire(rlock_t *l, redisReply *r, uint64_t *fence, int64_t *hint)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_INTEGER ||
        r->element[1]->type != REDIS_REPLY_INTEGER) {
        snprintf(l->errstr, sizeof(l->errstr), "lock script: unexpected reply type %d", r->type);
        return RLOCK_ERR_REDIS;
    }
    if (r->element[0]->integer == 1) {
        *fence = (uint64_t)r->element[1]->integer;
        return 1;
    }
    *hint = r->element[1]->integer;
    return 0;
}

static int acquire_attempt(void *p, int64_t *hint)
{
    struct acquire *a = p;
    rlock_t *l = a->l;
    const char *argv[9];
    char now[24];
    int id, nk, argc;
    if (l->rs && l->kind == RLOCK_WRITE) {
        id = RLOCK_S_RS_WRITE_LOCK;
        argv[0] = l->key, argv[1] = l->fence_key, argv[2] = a->ttl, argv[3] = a->who;
        nk = 2, argc = 4;
    } else if (l->rs && l->kind == RLOCK_FAIR) {
        snprintf(now, sizeof(now), "%" PRId64, rlock_wall_ms());
        id = RLOCK_S_RS_FAIR_LOCK;
        argv[0] = l->key, argv[1] = l->queue_key, argv[2] = l->tmo_key, argv[3] = l->fence_key;
        argv[4] = a->ttl, argv[5] = a->who, argv[6] = a->rs_wait, argv[7] = now;
        nk = 4, argc = 8;
    } else if (l->rs && l->kind == RLOCK_FENCED) {
        id = RLOCK_S_RS_FENCED_LOCK;
        argv[0] = l->key, argv[1] = l->fence_key, argv[2] = a->ttl, argv[3] = a->who;
        nk = 2, argc = 4;
    } else if (l->rs && l->kind == RLOCK_READ) {
        id = RLOCK_S_RS_READ_LOCK;
        argv[0] = l->key, argv[1] = a->rtmo, argv[2] = l->fence_key, argv[3] = a->ttl;
        argv[4] = a->who, argv[5] = a->owner_write;
        nk = 3, argc = 6;
    } else
    switch (l->kind) {
    case RLOCK_SIMPLE:
    case RLOCK_REENTRANT:
    case RLOCK_SPIN:
    case RLOCK_FENCED:
        id = l->kind == RLOCK_SIMPLE ? RLOCK_S_SIMPLE_LOCK : RLOCK_S_REENTRANT_LOCK;
        argv[0] = l->key, argv[1] = l->fence_key, argv[2] = a->who, argv[3] = a->ttl;
        nk = 2, argc = 4;
        break;
    case RLOCK_FAIR:
        /* Woken by an unlock that named another waiter as next: not our turn, and our
         * place is kept by the periodic retry. */
        if (l->w.woken && l->w.msg[0] != '\0' && strcmp(l->w.msg, "0") != 0 &&
            strcmp(l->w.msg, a->who) != 0 && rlock_now_ms() - a->last_try < a->refresh_ms) {
            *hint = 0;
            return 0;
        }
        a->last_try = rlock_now_ms();
        id = RLOCK_S_FAIR_LOCK;
        argv[0] = l->key, argv[1] = l->queue_key, argv[2] = l->tmo_key, argv[3] = l->fence_key;
        argv[4] = a->who, argv[5] = a->ttl, argv[6] = a->waiter_ttl;
        nk = 4, argc = 7;
        break;
    default:
        id = l->kind == RLOCK_READ ? RLOCK_S_RW_READ_LOCK : RLOCK_S_RW_WRITE_LOCK;
        argv[0] = l->key, argv[1] = l->rexp_key, argv[2] = l->fence_key, argv[3] = a->who,
        argv[4] = a->ttl;
        nk = 3, argc = 5;
        break;
    }
    argv[argc++] = a->keep; /* every lock script's last argument: rlock_fence.lua */
    int64_t t0 = rlock_now_ms();
    redisReply *r;
    int rv = rlock_client_eval(l->c, id, nk, argc, argv, &r, l->errstr, sizeof(l->errstr));
    if (rv != 0)
        return rv;
    rv = parse_acquire(l, r, &a->fence, hint);
    freeReplyObject(r);
    if (rv == 1) {
        a->t0 = t0;
        if (l->gate) {
            /* counted before this waiter leaves the gate, so the next one sees it */
            rlock_gate_held(&l->c->gates, l->gate, 1, a->lease_ms > 0 ? t0 + a->lease_ms : 0);
            l->gate_holds++;
        }
    }
    return rv;
}

/* An attempt by the waiter inside the gate. While a holder of this process has not sent
 * its release, its unlock message is still to come on our subscription, so a message
 * (an older one) or our first look need not ask Redis: it would be refused. After a
 * sleep that timed out, ask anyway: that holder's lease may have run out, which sends no
 * message; until then, sleep no longer than that lease. */
static int gated_attempt(void *p, int64_t *hint)
{
    struct acquire *a = p;
    rlock_t *l = a->l;
    rlock_waiter *w = rlock_gate_waiter(l->gate);
    int first = a->gated_calls++ == 0;
    int64_t left;
    if (w->subscribed && (first || w->woken) && rlock_gate_is_held(&l->c->gates, l->gate, &left)) {
        *hint = left;
        return 0;
    }
    return acquire_attempt(p, hint);
}

/* The token this acquisition writes: a fresh random one plus the owner for a simple
 * lock (not reentrant), the owner itself otherwise. @returns 0 or an RLOCK_ERR_*. */
static int lock_token(rlock_t *l, const char *owner, char token[RLOCK_TOKEN_SIZE])
{
    if (l->kind == RLOCK_SIMPLE) {
        if (l->holds > 0) {
            snprintf(l->errstr, sizeof(l->errstr), "simple lock %s is not reentrant and already held here", l->name);
            return RLOCK_ERR_STATE;
        }
        char rnd[33];
        if (rlock_random_hex32(rnd) != 0) {
            snprintf(l->errstr, sizeof(l->errstr), "no OS randomness for the token");
            return RLOCK_ERR_IO;
        }
        snprintf(token, RLOCK_TOKEN_SIZE, "%s:%s", rnd, owner);
        return 0;
    }
    if (l->holds > 0 && strcmp(l->token, owner) != 0) {
        snprintf(l->errstr, sizeof(l->errstr), "handle of %s held by another thread", l->name);
        return RLOCK_ERR_STATE;
    }
    snprintf(token, RLOCK_TOKEN_SIZE, "%s", owner);
    return 0;
}

/* RedissonFairLock: the waiter's wait (or the 5-minute default) fixes how long it
 * stays queued; it is woken on its own channel, rs_chan:<owner>, which becomes
 * l->channel. @returns 0 or RLOCK_ERR_NOMEM. */
static int lock_rs_fair_prepare(rlock_t *l, const char *owner, struct acquire *a, int64_t wait_ms)
{
    snprintf(a->rs_wait, sizeof(a->rs_wait), "%" PRId64, wait_ms > 0 ? wait_ms : (int64_t)RS_FAIR_WAIT_MS);
    size_t n = strlen(l->rs_chan) + 1 + strlen(owner) + 1;
    char *ch = malloc(n);
    if (ch == NULL) {
        snprintf(l->errstr, sizeof(l->errstr), "out of memory");
        return RLOCK_ERR_NOMEM;
    }
    snprintf(ch, n, "%s:%s", l->rs_chan, owner);
    if (strcmp(ch, l->channel) == 0) {
        free(ch);
    } else {
        free(l->channel);
        l->channel = ch;
        rlock_waiter_close(&l->w); /* it listened for another owner */
    }
    return 0;
}

/* A fair waiter that gave up leaves the queue (best effort: its entry expires anyway). */
static void lock_fair_cancel(rlock_t *l, const char *owner, const struct acquire *a)
{
    const char *argv[4] = {l->queue_key, l->tmo_key, owner, l->rs ? a->rs_wait : l->channel};
    redisReply *r;
    char err[RLOCK_ERRSTR_SIZE];
    if (rlock_client_eval(l->c, l->rs ? RLOCK_S_RS_FAIR_CANCEL : RLOCK_S_FAIR_CANCEL, 2, 4, argv, &r, err,
                          sizeof(err)) == 0)
        freeReplyObject(r);
}

/* Records an acquisition on the handle and, for a watchdog lease (0), registers it
 * for renewal; a lock that cannot be renewed is given back. @returns 0 or an
 * RLOCK_ERR_*. */
static int lock_taken(rlock_t *l, const char *token, const struct acquire *a, int64_t lease_ms,
                      uint64_t *fence)
{
    memcpy(l->token, token, sizeof(l->token));
    l->fence = a->fence;
    if (fence)
        *fence = a->fence;
    if (l->holds++ == 0) {
        atomic_store(&l->lost, 0);
        l->last_renew_ms = a->t0;
    }
    l->lease_ms = lease_ms;
    if (lease_ms > 0)
        l->lease_end_ms = a->t0 + lease_ms;
    if (lease_ms == 0 && !l->watched) {
        int rv = rlock_watchdog_register(&l->c->wd, l, l->errstr, sizeof(l->errstr));
        if (rv != 0) {
            /* No renewal possible: do not keep a lock that would silently expire. */
            char keep[RLOCK_ERRSTR_SIZE];
            memcpy(keep, l->errstr, sizeof(keep));
            rlock_unlock(l);
            memcpy(l->errstr, keep, sizeof(keep));
            return rv;
        }
        l->watched = 1;
    }
    return 0;
}

/* A spin lock's wait (RSpinLock): attempts with a jittered pause doubling from 1 ms up
 * to 128 ms, no subscription. @returns 0, RLOCK_ERR_TIMEOUT or the attempt's error. */
static int lock_spin(rlock_t *l, struct acquire *a, int64_t wait_ms)
{
    int64_t deadline = wait_ms < 0 ? INT64_MAX : rlock_now_ms() + wait_ms, pause = 1, hint = 0;
    if (l->w.seed == 0)
        l->w.seed = (unsigned)rlock_now_ms() ^ (unsigned)(uintptr_t)l;
    for (;;) {
        int r = acquire_attempt(a, &hint);
        if (r != 0)
            return r > 0 ? 0 : r;
        int64_t left = deadline - rlock_now_ms();
        if (left <= 0)
            return RLOCK_ERR_TIMEOUT;
        int64_t t = rlock_jitter_ms(pause, &l->w.seed);
        rlock_sleep_ms(t < left ? t : left);
        if (pause < 128)
            pause *= 2;
    }
}

/* An exclusive lock's wait (rlock_gate.c): one attempt at once (non-fair, as
 * Redisson's RLock), then in turn the one waiter of this process in Redis.
 * @returns 0, RLOCK_ERR_TIMEOUT or the attempt's error. */
static int lock_gated(rlock_t *l, struct acquire *a, int64_t wait_ms, int64_t poll_ms)
{
    rlock_gates *t = &l->c->gates;
    int64_t hint = 0;
    int r = acquire_attempt(a, &hint);
    if (r != 0)
        return r > 0 ? 0 : r;
    if (wait_ms == 0)
        return RLOCK_ERR_TIMEOUT;
    int64_t deadline = wait_ms < 0 ? INT64_MAX : rlock_now_ms() + wait_ms;
    int rv = rlock_gate_enter(t, l->gate, deadline, &l->gate_waited);
    if (rv != 0)
        return rv;
    int64_t left = deadline == INT64_MAX ? -1 : deadline - rlock_now_ms();
    a->gated_calls = 0;
    /* left 0: one last attempt, then the timeout */
    rv = rlock_wait_until(l->c, NULL, l->c->tv, rlock_gate_waiter(l->gate), l->channel, left < 0 ? -1 : left,
                          poll_ms, gated_attempt, a);
    rlock_gate_leave(t, l->gate);
    return rv;
}

int rlock_try_lock(rlock_t *l, int64_t wait_ms, int64_t lease_ms, uint64_t *fence)
{
    if (lease_ms < 0) {
        snprintf(l->errstr, sizeof(l->errstr), "lease must be >= 0 (0: watchdog)");
        return RLOCK_ERR_ARG;
    }
    char owner[RLOCK_OWNER_SIZE];
    hold_field(l, owner);
    char token[RLOCK_TOKEN_SIZE];
    int rv = lock_token(l, owner, token);
    if (rv != 0)
        return rv;
    struct acquire a = {.l = l, .who = token, .lease_ms = lease_ms};
    char rtmo[RLOCK_KEY_SIZE_RS];
    if (l->rs && l->kind == RLOCK_READ) {
        snprintf(a.owner_write, sizeof(a.owner_write), "%s:write", owner);
        rs_read_timeout_prefix(l, owner, rtmo, sizeof(rtmo));
        a.rtmo = rtmo;
    }
    snprintf(a.ttl, sizeof(a.ttl), "%" PRId64, rlock_lease_or_watchdog(l->c, lease_ms));
    if (l->rs && l->kind == RLOCK_FAIR && (rv = lock_rs_fair_prepare(l, owner, &a, wait_ms)) != 0)
        return rv;
    snprintf(a.waiter_ttl, sizeof(a.waiter_ttl), "%d", l->c->opts.fair_waiter_timeout_ms);
    snprintf(a.keep, sizeof(a.keep), "%" PRId64, l->c->opts.fence_retention_ms);
    int64_t poll_ms = l->c->opts.wait_poll_ms;
    /* A fair waiter keeps its place only by asking again within its waiter timeout. */
    if (l->kind == RLOCK_FAIR && !l->rs && poll_ms > l->c->opts.fair_waiter_timeout_ms / 3)
        poll_ms = l->c->opts.fair_waiter_timeout_ms / 3;
    a.refresh_ms = poll_ms;
    if (l->kind == RLOCK_SPIN)
        rv = lock_spin(l, &a, wait_ms);
    else if (l->gate)
        rv = lock_gated(l, &a, wait_ms, poll_ms);
    else
        rv = rlock_wait_until(l->c, NULL, l->c->tv, &l->w, l->channel, wait_ms, poll_ms, acquire_attempt, &a);
    if (rv != 0) {
        if (l->kind == RLOCK_FAIR && rv == RLOCK_ERR_TIMEOUT)
            lock_fair_cancel(l, owner, &a);
        if (rv == RLOCK_ERR_TIMEOUT)
            snprintf(l->errstr, sizeof(l->errstr), "lock %s not acquired within %" PRId64 " ms", l->name, wait_ms);
        return rv;
    }
    return lock_taken(l, token, &a, lease_ms, fence);
}

int rlock_lock(rlock_t *l, int64_t lease_ms, uint64_t *fence)
{
    return rlock_try_lock(l, -1, lease_ms, fence);
}

int rlock_unlock(rlock_t *l)
{
    char owner[RLOCK_OWNER_SIZE];
    const char *who = l->token;
    if (l->kind == RLOCK_SIMPLE) {
        if (l->holds == 0) {
            snprintf(l->errstr, sizeof(l->errstr), "unlock of %s: not held by this handle", l->name);
            return RLOCK_ERR_NOT_HELD;
        }
    } else {
        /* Reentrant kinds belong to the thread: another handle of this thread may hold it. */
        hold_field(l, owner);
        who = owner;
    }
    /* Last hold through this handle: stop renewing before the release is sent, so no
     * renewal can land after it (see rlock_int.h). */
    if (l->holds <= 1 && l->watched) {
        rlock_watchdog_deregister(&l->c->wd, l);
        l->watched = 0;
    }
    /* Not counted as this process's hold any more before the release goes out: a
     * waiter that sees the count at 0 asks Redis (rlock_gate.c). */
    if (l->gate_holds > 0) {
        rlock_gate_held(&l->c->gates, l->gate, -1, 0);
        l->gate_holds--;
    }
    const char *argv[8];
    int id, nk, argc;
    char lease[24], now[24], rtmo[RLOCK_KEY_SIZE_RS];
    snprintf(lease, sizeof(lease), "%" PRId64, rlock_lease_or_watchdog(l->c, l->lease_ms));
    if (l->rs && l->kind == RLOCK_FAIR) {
        snprintf(now, sizeof(now), "%" PRId64, rlock_wall_ms());
        id = RLOCK_S_RS_FAIR_UNLOCK, argv[0] = l->key, argv[1] = l->queue_key, argv[2] = l->tmo_key;
        argv[3] = l->rs_chan, argv[4] = who, argv[5] = lease, argv[6] = now, argv[7] = l->c->pub_cmd;
        nk = 4, argc = 8;
    } else if (l->rs && l->kind == RLOCK_READ) {
        rs_read_timeout_prefix(l, who, rtmo, sizeof(rtmo));
        id = RLOCK_S_RS_READ_UNLOCK, argv[0] = l->key, argv[1] = l->channel, argv[2] = rtmo;
        argv[3] = l->rexp_key, argv[4] = who, argv[5] = l->c->pub_cmd;
        nk = 4, argc = 6;
    } else if (l->rs) {
        id = l->kind == RLOCK_WRITE ? RLOCK_S_RS_WRITE_UNLOCK : RLOCK_S_RS_UNLOCK;
        argv[0] = l->key, argv[1] = l->channel, argv[2] = who, argv[3] = lease, argv[4] = l->c->pub_cmd;
        nk = 2, argc = 5;
    } else
    switch (l->kind) {
    case RLOCK_SIMPLE:
        id = RLOCK_S_SIMPLE_UNLOCK, argv[0] = l->key, argv[1] = who, argv[2] = l->channel;
        nk = 1, argc = 3;
        break;
    case RLOCK_REENTRANT:
    case RLOCK_SPIN:
    case RLOCK_FENCED:
        id = RLOCK_S_REENTRANT_UNLOCK, argv[0] = l->key, argv[1] = who, argv[2] = l->channel;
        nk = 1, argc = 3;
        break;
    case RLOCK_FAIR:
        id = RLOCK_S_FAIR_UNLOCK, argv[0] = l->key, argv[1] = l->queue_key, argv[2] = who,
        argv[3] = l->channel;
        nk = 2, argc = 4;
        break;
    default:
        id = RLOCK_S_RW_UNLOCK, argv[0] = l->key, argv[1] = l->rexp_key, argv[2] = who,
        argv[3] = l->channel;
        nk = 2, argc = 4;
        break;
    }
    redisReply *r;
    int rv = rlock_client_eval(l->c, id, nk, argc, argv, &r, l->errstr, sizeof(l->errstr));
    if (l->holds > 0)
        l->holds--;
    if (rv != 0)
        return rv;
    long long n = r->type == REDIS_REPLY_INTEGER ? r->integer : -2;
    freeReplyObject(r);
    int not_held = l->kind == RLOCK_SIMPLE ? n != 1 : n < 0;
    if (not_held) {
        /* Our hold (if we thought we had one) is gone: expired or taken. */
        l->holds = 0;
        rlock_gate_held(&l->c->gates, l->gate, -l->gate_holds, 0);
        l->gate_holds = 0;
        if (l->watched) {
            rlock_watchdog_deregister(&l->c->wd, l);
            l->watched = 0;
        }
        snprintf(l->errstr, sizeof(l->errstr), "unlock of %s: not held by this owner", l->name);
        return RLOCK_ERR_NOT_HELD;
    }
    return 0;
}

int rlock_is_held(const rlock_t *l)
{
    if (l->holds <= 0 || atomic_load(&l->lost))
        return 0;
    return l->watched || rlock_now_ms() < l->lease_end_ms;
}

int rlock_is_held_remote(rlock_t *l)
{
    char owner[RLOCK_OWNER_SIZE];
    redisReply *r;
    int rv;
    if (l->kind == RLOCK_SIMPLE) {
        if (l->holds == 0)
            return 0;
        const char *argv[2] = {"GET", l->key};
        rv = rlock_client_command(l->c, 2, argv, &r, l->errstr, sizeof(l->errstr));
        if (rv != 0)
            return rv;
        rv = r->type == REDIS_REPLY_STRING && strcmp(r->str, l->token) == 0;
    } else {
        hold_field(l, owner);
        const char *argv[3] = {"HEXISTS", l->key, owner};
        rv = rlock_client_command(l->c, 3, argv, &r, l->errstr, sizeof(l->errstr));
        if (rv != 0)
            return rv;
        rv = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    }
    freeReplyObject(r);
    return rv;
}

int rlock_force_unlock(rlock_t *l)
{
    const char *argv[4] = {"DEL", l->key, l->rexp_key, NULL};
    redisReply *r;
    /* Redisson mode: the lock is the one key (the read holds' timeout keys expire) */
    int rv = rlock_client_command(l->c, l->rs ? 2 : 3, argv, &r, l->errstr, sizeof(l->errstr));
    if (rv != 0)
        return rv;
    int deleted = r->type == REDIS_REPLY_INTEGER && r->integer > 0;
    freeReplyObject(r);
    const char *pv[3] = {l->rs ? l->c->pub_cmd : "PUBLISH", l->channel, "0"};
    if (rlock_client_command(l->c, 3, pv, &r, l->errstr, sizeof(l->errstr)) == 0)
        freeReplyObject(r);
    return deleted;
}
