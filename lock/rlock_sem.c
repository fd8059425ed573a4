/* rlock_sem: semaphore (Redisson RSemaphore) and countdown latch (RCountDownLatch):
 * a counter key each, changed only by scripts; waiters wake on the object's channel. */
#include "rlock_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Redisson mode (rs): key = the name, channel redisson_sc:{name} (RSemaphore) or
 * redisson_countdownlatch__channel__{name} (RCountDownLatch); scripts lua/rlock_rs_*. */
struct rlock_sem {
    rlock_client_t *c;
    int rs;
    char *name, *key, *channel;
    rlock_waiter w;
    char errstr[RLOCK_ERRSTR_SIZE];
};

struct rlock_latch {
    rlock_client_t *c;
    int rs;
    char *name, *key, *channel;
    rlock_waiter w;
    char errstr[RLOCK_ERRSTR_SIZE];
};

/* Integer value of a GET reply (nil: 0). */
static int64_t reply_int(const redisReply *r)
{
    if (r->type == REDIS_REPLY_INTEGER)
        return r->integer;
    if (r->type == REDIS_REPLY_STRING)
        return strtoll(r->str, NULL, 10);
    return 0;
}

/* ---- semaphore ---- */

rlock_sem_t *rlock_sem_new(rlock_client_t *c, const char *name)
{
    if (c == NULL || name == NULL || rlock_key_build(NULL, 0, name, "") < 0)
        return NULL;
    rlock_sem_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->c = c;
    s->rs = c->opts.redisson;
    s->name = strdup(name);
    s->key = s->rs ? strdup(name) : rlock_key_dup(name, ":sem");
    s->channel = s->rs ? rlock_rs_name_dup("redisson_sc", name, NULL) : rlock_key_dup(name, ":sem:ch");
    if (!s->name || !s->key || !s->channel) {
        rlock_sem_free(s);
        return NULL;
    }
    return s;
}

void rlock_sem_free(rlock_sem_t *s)
{
    if (s == NULL)
        return;
    rlock_waiter_close(&s->w);
    free(s->name);
    free(s->key);
    free(s->channel);
    free(s);
}

const char *rlock_sem_errstr(const rlock_sem_t *s) { return s->errstr; }

int rlock_sem_try_set_permits(rlock_sem_t *s, int64_t permits)
{
    if (permits < 0) {
        snprintf(s->errstr, sizeof(s->errstr), "permits must be >= 0");
        return RLOCK_ERR_ARG;
    }
    char n[24];
    snprintf(n, sizeof(n), "%" PRId64, permits);
    redisReply *r;
    int rv;
    if (s->rs) {
        /* RSemaphore.trySetPermits also publishes the permits (wakes its waiters) */
        const char *argv[4] = {s->key, s->channel, n, s->c->pub_cmd};
        rv = rlock_client_eval(s->c, RLOCK_S_RS_SEM_SET, 2, 4, argv, &r, s->errstr, sizeof(s->errstr));
        if (rv != 0)
            return rv;
        rv = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
        freeReplyObject(r);
        return rv;
    }
    const char *argv[4] = {"SET", s->key, n, "NX"};
    rv = rlock_client_command(s->c, 4, argv, &r, s->errstr, sizeof(s->errstr));
    if (rv != 0)
        return rv;
    rv = r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    return rv;
}

struct sem_acq {
    rlock_sem_t *s;
    char n[24];
};

static int sem_attempt(void *p, int64_t *hint)
{
    struct sem_acq *a = p;
    const char *argv[2] = {a->s->key, a->n};
    redisReply *r;
    int rv = rlock_client_eval(a->s->c, RLOCK_S_SEM_ACQUIRE, 1, 2, argv, &r, a->s->errstr,
                               sizeof(a->s->errstr));
    if (rv != 0)
        return rv;
    rv = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    *hint = 0;
    return rv;
}

int rlock_sem_try_acquire(rlock_sem_t *s, int64_t n, int64_t wait_ms)
{
    if (n <= 0) {
        snprintf(s->errstr, sizeof(s->errstr), "permits to take must be > 0");
        return RLOCK_ERR_ARG;
    }
    struct sem_acq a = {.s = s};
    snprintf(a.n, sizeof(a.n), "%" PRId64, n);
    int rv = rlock_wait_until(s->c, NULL, s->c->tv, &s->w, s->channel, wait_ms, s->c->opts.wait_poll_ms, sem_attempt, &a);
    if (rv == RLOCK_ERR_TIMEOUT)
        snprintf(s->errstr, sizeof(s->errstr), "semaphore %s: %" PRId64 " permits not free in time", s->name, n);
    return rv;
}

int rlock_sem_release(rlock_sem_t *s, int64_t n)
{
    if (n <= 0) {
        snprintf(s->errstr, sizeof(s->errstr), "permits to release must be > 0");
        return RLOCK_ERR_ARG;
    }
    char ns[24];
    snprintf(ns, sizeof(ns), "%" PRId64, n);
    redisReply *r;
    int rv;
    if (s->rs) {
        const char *argv[4] = {s->key, s->channel, ns, s->c->pub_cmd};
        rv = rlock_client_eval(s->c, RLOCK_S_RS_SEM_RELEASE, 2, 4, argv, &r, s->errstr, sizeof(s->errstr));
    } else {
        const char *argv[3] = {s->key, ns, s->channel};
        rv = rlock_client_eval(s->c, RLOCK_S_SEM_RELEASE, 1, 3, argv, &r, s->errstr, sizeof(s->errstr));
    }
    if (rv == 0)
        freeReplyObject(r);
    return rv;
}

int64_t rlock_sem_available(rlock_sem_t *s)
{
    const char *argv[2] = {"GET", s->key};
    redisReply *r;
    int rv = rlock_client_command(s->c, 2, argv, &r, s->errstr, sizeof(s->errstr));
    if (rv != 0)
        return rv;
    int64_t v = reply_int(r);
    freeReplyObject(r);
    return v;
}

int rlock_sem_delete(rlock_sem_t *s)
{
    const char *argv[2] = {"DEL", s->key};
    redisReply *r;
    int rv = rlock_client_command(s->c, 2, argv, &r, s->errstr, sizeof(s->errstr));
    if (rv == 0)
        freeReplyObject(r);
    return rv;
}

/* ---- countdown latch ---- */

rlock_latch_t *rlock_latch_new(rlock_client_t *c, const char *name)
{
    if (c == NULL || name == NULL || rlock_key_build(NULL, 0, name, "") < 0)
        return NULL;
    rlock_latch_t *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return NULL;
    l->c = c;
    l->rs = c->opts.redisson;
    l->name = strdup(name);
    l->key = l->rs ? strdup(name) : rlock_key_dup(name, ":latch");
    if (l->rs) {
        /* RedissonCountDownLatch.getChannelName: braces even around a tagged name */
        size_t n = strlen(name) + sizeof("redisson_countdownlatch__channel__{}");
        if ((l->channel = malloc(n)) != NULL)
            snprintf(l->channel, n, "redisson_countdownlatch__channel__{%s}", name);
    } else {
        l->channel = rlock_key_dup(name, ":latch:ch");
    }
    if (!l->name || !l->key || !l->channel) {
        rlock_latch_free(l);
        return NULL;
    }
    return l;
}

void rlock_latch_free(rlock_latch_t *l)
{
    if (l == NULL)
        return;
    rlock_waiter_close(&l->w);
    free(l->name);
    free(l->key);
    free(l->channel);
    free(l);
}

const char *rlock_latch_errstr(const rlock_latch_t *l) { return l->errstr; }

int rlock_latch_try_set_count(rlock_latch_t *l, int64_t count)
{
    if (count <= 0) {
        snprintf(l->errstr, sizeof(l->errstr), "count must be > 0");
        return RLOCK_ERR_ARG;
    }
    char n[24];
    snprintf(n, sizeof(n), "%" PRId64, count);
    redisReply *r;
    int rv;
    if (l->rs) {
        const char *argv[4] = {l->key, l->channel, n, l->c->pub_cmd};
        rv = rlock_client_eval(l->c, RLOCK_S_RS_LATCH_SET, 2, 4, argv, &r, l->errstr, sizeof(l->errstr));
    } else {
        const char *argv[2] = {l->key, n};
        rv = rlock_client_eval(l->c, RLOCK_S_LATCH_SET, 1, 2, argv, &r, l->errstr, sizeof(l->errstr));
    }
    if (rv != 0)
        return rv;
    rv = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    return rv;
}

int rlock_latch_count_down(rlock_latch_t *l)
{
    redisReply *r;
    int rv;
    if (l->rs) {
        const char *argv[3] = {l->key, l->channel, l->c->pub_cmd};
        rv = rlock_client_eval(l->c, RLOCK_S_RS_LATCH_COUNT_DOWN, 2, 3, argv, &r, l->errstr, sizeof(l->errstr));
    } else {
        const char *argv[2] = {l->key, l->channel};
        rv = rlock_client_eval(l->c, RLOCK_S_LATCH_COUNT_DOWN, 1, 2, argv, &r, l->errstr, sizeof(l->errstr));
    }
    if (rv == 0)
        freeReplyObject(r);
    return rv;
}

int64_t rlock_latch_count(rlock_latch_t *l)
{
    const char *argv[2] = {"GET", l->key};
    redisReply *r;
    int rv = rlock_client_command(l->c, 2, argv, &r, l->errstr, sizeof(l->errstr));
    if (rv != 0)
        return rv;
    int64_t v = reply_int(r);
    freeReplyObject(r);
    return v;
}

static int latch_attempt(void *p, int64_t *hint)
{
    int64_t v = rlock_latch_count(p);
    *hint = 0;
    if (v < 0)
        return (int)v;
    return v == 0;
}

int rlock_latch_await(rlock_latch_t *l, int64_t wait_ms)
{
    int rv = rlock_wait_until(l->c, NULL, l->c->tv, &l->w, l->channel, wait_ms, l->c->opts.wait_poll_ms, latch_attempt, l);
    if (rv == RLOCK_ERR_TIMEOUT)
        snprintf(l->errstr, sizeof(l->errstr), "latch %s: count not zero in time", l->name);
    return rv;
}
