/* rlock_redlock: the Redlock algorithm over N independent Redis servers. One attempt
 * sends SET NX PX (the simple-lock script) to every server at once (pipelined across
 * connections, so an attempt costs about one round trip, not N), counts the grants,
 * and keeps the lock only with a quorum and time left (validity). A failed attempt
 * releases on every server (a grant whose reply was lost would otherwise linger until
 * its lease) and is retried after a random delay, so contenders fall out of step. */
#include "rlock_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct rlock_redlock {
    size_t n;
    sk_redis_url *urls;
    redisContext **conns; /* NULL: not connected (down or never opened) */
    struct timeval tv;
    char *name, *key, *fence_key, *channel;
    char token[RLOCK_TOKEN_SIZE];
    int held;
    int64_t retry_delay_ms;
    unsigned int seed;
    char errstr[RLOCK_ERRSTR_SIZE];
};

static char *key_dup(const char *name, const char *suffix)
{
    int n = rlock_key_build(NULL, 0, name, suffix);
    if (n < 0)
        return NULL;
    char *k = malloc((size_t)n + 1);
    if (k)
        rlock_key_build(k, (size_t)n + 1, name, suffix);
    return k;
}

rlock_redlock_t *rlock_redlock_new(const char *const *urls, size_t n, const char *name,
                                   int timeout_ms, char *errstr, size_t errstr_size)
{
    if (urls == NULL || n == 0 || name == NULL || rlock_key_build(NULL, 0, name, "") < 0) {
        snprintf(errstr, errstr_size, "redlock: need servers and a valid name");
        return NULL;
    }
    rlock_redlock_t *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    r->n = n;
    r->urls = calloc(n, sizeof(*r->urls));
    r->conns = calloc(n, sizeof(*r->conns));
    r->name = strdup(name);
    r->key = key_dup(name, "");
    r->fence_key = key_dup(name, ":fence");
    r->channel = key_dup(name, ":ch");
    if (!r->urls || !r->conns || !r->name || !r->key || !r->fence_key || !r->channel) {
        snprintf(errstr, errstr_size, "out of memory");
        rlock_redlock_free(r);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (sk_redis_url_parse(urls[i], &r->urls[i], errstr, errstr_size) != 0) {
            rlock_redlock_free(r);
            return NULL;
        }
    }
    if (timeout_ms <= 0)
        timeout_ms = 50; /* small against the lease: a slow server must not eat the validity */
    r->tv.tv_sec = timeout_ms / 1000;
    r->tv.tv_usec = (timeout_ms % 1000) * 1000;
    r->retry_delay_ms = 20;
    r->seed = (unsigned)getpid() ^ (unsigned)(uintptr_t)r ^ (unsigned)rlock_now_ms();
    return r;
}

void rlock_redlock_free(rlock_redlock_t *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; r->conns && i < r->n; i++)
        if (r->conns[i])
            redisFree(r->conns[i]);
    free(r->conns);
    free(r->urls);
    free(r->name);
    free(r->key);
    free(r->fence_key);
    free(r->channel);
    free(r);
}

const char *rlock_redlock_errstr(const rlock_redlock_t *r) { return r->errstr; }

void rlock_redlock_set_retry_delay(rlock_redlock_t *r, int64_t ms)
{
    r->retry_delay_ms = ms > 0 ? ms : 1;
}

static redisContext *conn_of(rlock_redlock_t *r, size_t i)
{
    if (r->conns[i] && r->conns[i]->err) {
        redisFree(r->conns[i]);
        r->conns[i] = NULL;
    }
    if (r->conns[i] == NULL) {
        char err[RLOCK_ERRSTR_SIZE];
        r->conns[i] = sk_redis_url_connect(&r->urls[i], r->tv, err, sizeof(err));
        if (r->conns[i] == NULL)
            snprintf(r->errstr, sizeof(r->errstr), "redlock server %zu: %.200s", i, err);
    }
    return r->conns[i];
}

/* Sends script `id` to every reachable server at once, then reads each answer.
 * ok[i] gets 1 when server i answered "granted"/"released". @returns the count. */
static size_t run_on_all(rlock_redlock_t *r, int id, int nk, int argc, const char **argv,
                         unsigned char *ok)
{
    size_t count = 0;
    unsigned char *sent = calloc(r->n, 1);
    if (sent == NULL)
        return 0;
    for (size_t i = 0; i < r->n; i++) {
        ok[i] = 0;
        redisContext *c = conn_of(r, i);
        if (c == NULL || rlock_script_append(c, id, nk, argc, argv) != 0)
            continue;
        int done = 0;
        while (!done)
            if (redisBufferWrite(c, &done) != REDIS_OK)
                break;
        sent[i] = done;
    }
    for (size_t i = 0; i < r->n; i++) {
        if (!sent[i])
            continue;
        void *rep = NULL;
        if (redisGetReply(r->conns[i], &rep) != REDIS_OK || rep == NULL)
            continue;
        redisReply *x = rep, *slow = NULL;
        if (x->type == REDIS_REPLY_ERROR && strncmp(x->str, "NOSCRIPT", 8) == 0) {
            char err[RLOCK_ERRSTR_SIZE];
            if (rlock_script_eval(r->conns[i], id, nk, argc, argv, &slow, err, sizeof(err)) == 0)
                x = slow;
        }
        if (id == RLOCK_S_SIMPLE_LOCK)
            ok[i] = x->type == REDIS_REPLY_ARRAY && x->elements == 2 &&
                    x->element[0]->type == REDIS_REPLY_INTEGER && x->element[0]->integer == 1;
        else
            ok[i] = x->type == REDIS_REPLY_INTEGER && x->integer == 1;
        count += ok[i];
        freeReplyObject(rep);
        if (slow)
            freeReplyObject(slow);
    }
    free(sent);
    return count;
}

static size_t release_all(rlock_redlock_t *r, unsigned char *ok)
{
    const char *argv[3] = {r->key, r->token, r->channel};
    return run_on_all(r, RLOCK_S_SIMPLE_UNLOCK, 1, 3, argv, ok);
}

int rlock_redlock_lock(rlock_redlock_t *r, int64_t ttl_ms, int64_t wait_ms, int64_t *validity_ms)
{
    if (ttl_ms <= 0) {
        snprintf(r->errstr, sizeof(r->errstr), "redlock lease must be > 0");
        return RLOCK_ERR_ARG;
    }
    if (r->held) {
        snprintf(r->errstr, sizeof(r->errstr), "redlock %s already held by this handle", r->name);
        return RLOCK_ERR_STATE;
    }
    unsigned char *ok = calloc(r->n, 1);
    if (ok == NULL)
        return RLOCK_ERR_NOMEM;
    size_t quorum = r->n / 2 + 1;
    int64_t deadline = wait_ms < 0 ? INT64_MAX : rlock_now_ms() + wait_ms;
    char ttl[24], rnd[33], owner_pid[48];
    snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
    snprintf(owner_pid, sizeof(owner_pid), "redlock:%ld", (long)getpid());
    int rv;
    for (;;) {
        if (rlock_random_hex32(rnd) != 0) {
            rv = RLOCK_ERR_IO;
            break;
        }
        snprintf(r->token, sizeof(r->token), "%s:%s", rnd, owner_pid);
        const char *argv[4] = {r->key, r->fence_key, r->token, ttl};
        int64_t start = rlock_now_ms();
        size_t granted = run_on_all(r, RLOCK_S_SIMPLE_LOCK, 2, 4, argv, ok);
        int64_t validity = rlock_redlock_validity(ttl_ms, rlock_now_ms() - start);
        if (granted >= quorum && validity > 0) {
            r->held = 1;
            if (validity_ms)
                *validity_ms = validity;
            rv = 0;
            break;
        }
        release_all(r, ok);
        int64_t now = rlock_now_ms();
        if (now >= deadline) {
            snprintf(r->errstr, sizeof(r->errstr), "redlock %s: %zu of %zu servers granted, quorum %zu",
                     r->name, granted, r->n, quorum);
            rv = RLOCK_ERR_TIMEOUT;
            break;
        }
        int64_t d = rlock_jitter_ms(r->retry_delay_ms, &r->seed);
        rlock_sleep_ms(d < deadline - now ? d : deadline - now);
    }
    free(ok);
    return rv;
}

int rlock_redlock_unlock(rlock_redlock_t *r)
{
    if (!r->held) {
        snprintf(r->errstr, sizeof(r->errstr), "redlock %s not held by this handle", r->name);
        return RLOCK_ERR_NOT_HELD;
    }
    unsigned char *ok = calloc(r->n, 1);
    if (ok == NULL)
        return RLOCK_ERR_NOMEM;
    size_t released = release_all(r, ok);
    free(ok);
    r->held = 0;
    if (released == 0) {
        snprintf(r->errstr, sizeof(r->errstr), "redlock %s: no server still held it", r->name);
        return RLOCK_ERR_NOT_HELD;
    }
    return 0;
}
