/* rlock_redlock: the Redlock algorithm over N independent Redis servers. One attempt
 * runs SET NX PX (the simple-lock script) on the servers in a fixed order, stops once a
 * quorum is reached or out of reach, and keeps the lock only with a quorum and time
 * left (validity). Releases go to all servers at once (pipelined across connections,
 * about one round trip, not N). A failed attempt
 * releases on every server (a grant whose reply was lost would otherwise linger until
 * its lease; servers that answered "refused" hold nothing of ours and are skipped)
 * and is retried after a random delay, so contenders fall out of step. */
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
    rlock_waiter w; /* subscription to unlock messages on one of the servers */
    char errstr[RLOCK_ERRSTR_SIZE];
};

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
    r->key = rlock_key_dup(name, "");
    r->fence_key = rlock_key_dup(name, ":fence");
    r->channel = rlock_key_dup(name, ":ch");
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
    return r;
}

void rlock_redlock_free(rlock_redlock_t *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; r->conns && i < r->n; i++)
        if (r->conns[i])
            redisFree(r->conns[i]);
    rlock_waiter_close(&r->w);
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

#define ANS_NO 0      /* answered: refused / not ours */
#define ANS_YES 1     /* answered: granted / released */
#define ANS_UNKNOWN 2 /* no answer (down, timeout): it may hold our token */

/* Sends script `id` at once to every reachable server i with only[i] != ANS_NO (only
 * NULL: all), then reads each answer into ok[i]. @returns the number of ANS_YES. */
static size_t run_on_all(rlock_redlock_t *r, int id, int nk, int argc, const char **argv,
                         const unsigned char *only, unsigned char *ok)
{
    size_t count = 0;
    unsigned char *sent = calloc(r->n, 1);
    if (sent == NULL)
        return 0;
    for (size_t i = 0; i < r->n; i++) {
        ok[i] = ANS_UNKNOWN;
        if (only && only[i] == ANS_NO) {
            ok[i] = ANS_NO;
            continue;
        }
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
        if (x->type == REDIS_REPLY_ERROR)
            ok[i] = ANS_UNKNOWN;
        else if (id == RLOCK_S_SIMPLE_LOCK)
            ok[i] = x->type == REDIS_REPLY_ARRAY && x->elements == 2 &&
                    x->element[0]->type == REDIS_REPLY_INTEGER && x->element[0]->integer == 1;
        else
            ok[i] = x->type == REDIS_REPLY_INTEGER && x->integer == 1;
        count += ok[i] == ANS_YES;
        freeReplyObject(rep);
        if (slow)
            freeReplyObject(slow);
    }
    free(sent);
    return count;
}

/* Asks each server in turn, the same order for every client, and gives up at the first
 * refusal (another holds the key there) or once a quorum is out of reach (servers
 * down). So the first reachable server acts as a gate: contenders never split the votes
 * (with 8 contenders, splitting made most rounds fail). The price: a stale grant of a
 * crashed holder on the gate blocks everyone until its lease ends, as on one Redis.
 * Safety is untouched: the lock is ours only with a quorum and validity left.
 * ok[] as run_on_all; servers not asked are ANS_NO. @returns the number of grants. */
static size_t acquire_in_order(rlock_redlock_t *r, const char **argv, unsigned char *ok)
{
    size_t granted = 0, failed = 0, quorum = r->n / 2 + 1;
    memset(ok, ANS_NO, r->n);
    for (size_t i = 0; i < r->n && granted < quorum; i++) {
        if (failed > r->n - quorum)
            break;
        redisContext *c = conn_of(r, i);
        redisReply *x = NULL;
        char err[RLOCK_ERRSTR_SIZE];
        int rv = c ? rlock_script_eval(c, RLOCK_S_SIMPLE_LOCK, 2, 4, argv, &x, err, sizeof(err)) : RLOCK_ERR_IO;
        if (rv != 0) {
            ok[i] = c ? ANS_UNKNOWN : ANS_NO; /* sent but unanswered: may hold our token */
            failed++;
            continue;
        }
        ok[i] = x->type == REDIS_REPLY_ARRAY && x->elements == 2 && x->element[0]->type == REDIS_REPLY_INTEGER &&
                x->element[0]->integer == 1;
        freeReplyObject(x);
        if (ok[i] != ANS_YES)
            break;
        granted++;
    }
    return granted;
}

/* Releases on every server that granted or did not answer (`only` NULL: all). A
 * server that answered "refused" holds nothing of ours: skipping it halves the cost of
 * a lost round under contention. */
static size_t release_all(rlock_redlock_t *r, const unsigned char *only)
{
    unsigned char *ok = calloc(r->n, 1);
    if (ok == NULL)
        return 0;
    const char *argv[3] = {r->key, r->token, r->channel};
    size_t n = run_on_all(r, RLOCK_S_SIMPLE_UNLOCK, 1, 3, argv, only, ok);
    free(ok);
    return n;
}

struct rl_try {
    rlock_redlock_t *r;
    int64_t ttl_ms;
    char ttl[24];
    char owner[48];
    unsigned char *ok;
    size_t granted;
    int64_t validity;
};

/* One Redlock round: grants from a quorum with validity left, or release and report
 * "not yet" (the wait loop then sleeps a random delay, or less if an unlock message
 * arrives on the server we listen to). */
static int redlock_attempt(void *p, int64_t *hint)
{
    struct rl_try *t = p;
    rlock_redlock_t *r = t->r;
    char rnd[33];
    *hint = 0;
    if (rlock_random_hex32(rnd) != 0) {
        snprintf(r->errstr, sizeof(r->errstr), "no OS randomness for the token");
        return RLOCK_ERR_IO;
    }
    snprintf(r->token, sizeof(r->token), "%s:%s", rnd, t->owner);
    const char *argv[4] = {r->key, r->fence_key, r->token, t->ttl};
    int64_t start = rlock_now_ms();
    t->granted = acquire_in_order(r, argv, t->ok);
    t->validity = rlock_redlock_validity(t->ttl_ms, rlock_now_ms() - start);
    if (t->granted >= r->n / 2 + 1 && t->validity > 0)
        return 1;
    release_all(r, t->ok);
    return 0;
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
    struct rl_try t = {.r = r, .ttl_ms = ttl_ms, .ok = calloc(r->n, 1)};
    if (t.ok == NULL)
        return RLOCK_ERR_NOMEM;
    snprintf(t.ttl, sizeof(t.ttl), "%" PRId64, ttl_ms);
    snprintf(t.owner, sizeof(t.owner), "redlock:%ld", (long)getpid());
    /* Listen for unlocks on one server that answers (every unlock publishes on each). */
    size_t sub = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->conns[i] && !r->conns[i]->err) {
            sub = i;
            break;
        }
    int rv = rlock_wait_until(NULL, &r->urls[sub], r->tv, &r->w, r->channel, wait_ms, r->retry_delay_ms,
                              redlock_attempt, &t);
    if (rv == 0) {
        r->held = 1;
        if (validity_ms)
            *validity_ms = t.validity;
    } else if (rv == RLOCK_ERR_TIMEOUT) {
        snprintf(r->errstr, sizeof(r->errstr), "redlock %s: %zu of %zu servers granted, quorum %zu",
                 r->name, t.granted, r->n, r->n / 2 + 1);
    }
    free(t.ok);
    return rv;
}

int rlock_redlock_unlock(rlock_redlock_t *r)
{
    if (!r->held) {
        snprintf(r->errstr, sizeof(r->errstr), "redlock %s not held by this handle", r->name);
        return RLOCK_ERR_NOT_HELD;
    }
    size_t released = release_all(r, NULL);
    r->held = 0;
    if (released == 0) {
        snprintf(r->errstr, sizeof(r->errstr), "redlock %s: no server still held it", r->name);
        return RLOCK_ERR_NOT_HELD;
    }
    return 0;
}
