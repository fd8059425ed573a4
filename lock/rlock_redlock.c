/* rlock_redlock: the Redlock algorithm over N independent Redis servers. Every step
 * (acquire, extend, check, release) sends its command to all servers at once and then
 * polls their sockets together, so it costs one round trip's time (the slowest server
 * that answers within the timeout), not N. The lock is ours with a quorum of grants and
 * time left (validity = lease - elapsed - drift). A failed attempt releases on every
 * server that may hold it (a grant whose reply was lost would otherwise linger until its
 * lease; servers that answered "refused" hold nothing of ours and are skipped) and is
 * retried after a delay (random around retry_delay, or the caller's function of the
 * attempt number), or sooner on an unlock message.
 * Fail-fast (as redsync's WithFailFast): a step stops reading once the quorum is reached
 * or out of reach; the replies still owed are read before the connection's next use.
 * Contenders that start together may split the votes (none gets a quorum): the random
 * delay puts them out of step, as in redsync. */
#include "rlock_int.h"

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct rlock_redlock {
    size_t n, quorum;
    sk_redis_url *urls;
    redisContext **conns; /* NULL: not connected (down or never opened) */
    unsigned *owed;       /* replies a fail-fast or timed-out step left unread on conns[i] */
    struct timeval tv;
    int64_t timeout_ms; /* one step's deadline: small against the lease */
    char *name, *key, *fence_key, *channel;
    char token[RLOCK_TOKEN_SIZE];
    int held;
    int64_t ttl_ms;   /* lease of the current hold */
    int64_t until_ms; /* monotonic end of the validity of the current hold */
    int64_t retry_delay_ms;
    rlock_redlock_delay_fn *delay_fn;
    void *delay_arg;
    int tries; /* attempts of the current rlock_redlock_lock */
    int fail_fast;
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
    r->quorum = n / 2 + 1;
    r->urls = calloc(n, sizeof(*r->urls));
    r->conns = calloc(n, sizeof(*r->conns));
    r->owed = calloc(n, sizeof(*r->owed));
    r->name = strdup(name);
    r->key = rlock_key_dup(name, "");
    r->fence_key = rlock_key_dup(name, ":fence");
    r->channel = rlock_key_dup(name, ":ch");
    if (!r->urls || !r->conns || !r->owed || !r->name || !r->key || !r->fence_key || !r->channel) {
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
    r->timeout_ms = timeout_ms;
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
    free(r->owed);
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

void rlock_redlock_set_retry_delay_fn(rlock_redlock_t *r, rlock_redlock_delay_fn *fn, void *arg)
{
    r->delay_fn = fn;
    r->delay_arg = arg;
}

void rlock_redlock_set_fail_fast(rlock_redlock_t *r, int on) { r->fail_fast = on != 0; }

int64_t rlock_redlock_validity_ms(const rlock_redlock_t *r)
{
    int64_t left = r->held ? r->until_ms - rlock_now_ms() : 0;
    return left > 0 ? left : 0;
}

static void conn_drop(rlock_redlock_t *r, size_t i)
{
    if (r->conns[i])
        redisFree(r->conns[i]);
    r->conns[i] = NULL;
    r->owed[i] = 0;
}

/* Replies owed by a server past which its connection is reopened instead (a stopped
 * server would otherwise collect our commands for ever). */
#define OWED_MAX 8

/* The connection to server i, reopened when broken or too far behind. NULL when the
 * server cannot be reached now. Replies it still owes are skipped by run_on_all, so a
 * slow server delays no step but its own answer. */
static redisContext *conn_of(rlock_redlock_t *r, size_t i)
{
    if (r->conns[i] && (r->conns[i]->err || r->owed[i] > OWED_MAX))
        conn_drop(r, i);
    if (r->conns[i] == NULL) {
        char err[RLOCK_ERRSTR_SIZE];
        r->conns[i] = sk_redis_url_connect(&r->urls[i], r->tv, err, sizeof(err));
        if (r->conns[i] == NULL)
            snprintf(r->errstr, sizeof(r->errstr), "redlock server %zu: %.200s", i, err);
    }
    return r->conns[i];
}

#define ANS_NO 0      /* answered: refused / not ours */
#define ANS_YES 1     /* answered: granted / released / ours */
#define ANS_UNKNOWN 2 /* no answer (down, timeout, not read): it may hold our token */

/* What a reply says: ANS_YES or ANS_NO (errors are ANS_UNKNOWN before this). */
static int answer_of(const rlock_redlock_t *r, int id, const redisReply *x)
{
    if (id == RLOCK_S_SIMPLE_LOCK)
        return x->type == REDIS_REPLY_ARRAY && x->elements == 2 && x->element[0]->type == REDIS_REPLY_INTEGER &&
               x->element[0]->integer == 1;
    if (id < 0) /* GET key: ours while it holds our token */
        return x->type == REDIS_REPLY_STRING && strcmp(x->str, r->token) == 0;
    return x->type == REDIS_REPLY_INTEGER && x->integer == 1;
}

/* One step on all servers: script `id` (or, id < 0, the plain command argv) is sent to
 * every reachable server i with only[i] != ANS_NO (only NULL: all), then their sockets
 * are polled together until all answered or timeout_ms passed; ok[i] gets each answer.
 * With stop (fail-fast) the reading ends once `stop` grants are in or out of reach.
 * @returns the number of ANS_YES. */
static size_t run_on_all(rlock_redlock_t *r, int id, int nk, int argc, const char **argv,
                         const unsigned char *only, unsigned char *ok, size_t stop)
{
    size_t yes = 0, out = 0, waiting = 0; /* out: done without a grant, or never asked */
    struct pollfd *pf = calloc(r->n, sizeof(*pf));
    size_t *at = calloc(r->n, sizeof(*at));
    unsigned *skip = calloc(r->n, sizeof(*skip));
    if (pf == NULL || at == NULL || skip == NULL) {
        free(pf);
        free(at);
        free(skip);
        memset(ok, ANS_UNKNOWN, r->n);
        return 0;
    }
    for (size_t i = 0; i < r->n; i++) {
        ok[i] = only && only[i] == ANS_NO ? ANS_NO : ANS_UNKNOWN;
        if (ok[i] == ANS_NO) {
            out++;
            continue;
        }
        redisContext *c = conn_of(r, i);
        int rv = c == NULL ? RLOCK_ERR_IO
                 : id >= 0 ? rlock_script_append(c, id, nk, argc, argv)
                           : (redisAppendCommandArgv(c, argc, argv, NULL) == REDIS_OK ? 0 : RLOCK_ERR_IO);
        int done = 0;
        while (rv == 0 && !done)
            if (redisBufferWrite(c, &done) != REDIS_OK)
                rv = RLOCK_ERR_IO;
        if (rv != 0) {
            if (c)
                conn_drop(r, i);
            out++;
            continue;
        }
        skip[waiting] = r->owed[i]++; /* earlier steps' replies come first */
        pf[waiting] = (struct pollfd){.fd = c->fd, .events = POLLIN};
        at[waiting++] = i;
    }
    int64_t end = rlock_now_ms() + r->timeout_ms;
    size_t open = waiting;
    while (open > 0 && !(stop && (yes >= stop || out > r->n - stop))) {
        int64_t left = end - rlock_now_ms();
        if (left <= 0 || poll(pf, waiting, (int)left) < 0)
            break;
        for (size_t k = 0; k < waiting; k++) {
            if (pf[k].fd < 0 || pf[k].revents == 0)
                continue;
            size_t i = at[k];
            redisContext *c = r->conns[i];
            void *rep = NULL;
            int rv = redisBufferRead(c);
            while (rv == REDIS_OK && (rv = redisGetReplyFromReader(c, &rep)) == REDIS_OK && rep && skip[k] > 0) {
                freeReplyObject(rep); /* an earlier step's, left unread */
                rep = NULL;
                skip[k]--, r->owed[i]--;
            }
            if (rv != REDIS_OK) {
                pf[k].fd = -1, open--, out++;
                conn_drop(r, i);
                continue;
            }
            if (rep == NULL)
                continue; /* part of a reply, or only earlier ones: wait for the rest */
            pf[k].fd = -1, open--;
            r->owed[i]--;
            redisReply *x = rep, *slow = NULL;
            if (x->type == REDIS_REPLY_ERROR && id >= 0 && strncmp(x->str, "NOSCRIPT", 8) == 0) {
                char err[RLOCK_ERRSTR_SIZE];
                if (rlock_script_eval(c, id, nk, argc, argv, &slow, err, sizeof(err)) == 0)
                    x = slow;
            }
            if (x->type != REDIS_REPLY_ERROR)
                ok[i] = (unsigned char)answer_of(r, id, x);
            yes += ok[i] == ANS_YES;
            out += ok[i] != ANS_YES;
            freeReplyObject(rep);
            if (slow)
                freeReplyObject(slow);
        }
    }
    free(pf);
    free(at);
    free(skip);
    return yes;
}

/* Releases on every server that granted or did not answer (`only` NULL: all). A
 * server that answered "refused" holds nothing of ours: skipping it halves the cost of
 * a lost round under contention. A lost round's clean-up (`wake` 0) publishes on no
 * channel anyone listens to: the lock was never ours, and waking every waiter at once
 * would only make them split the votes again. */
static size_t release_all(rlock_redlock_t *r, const unsigned char *only, int wake)
{
    unsigned char *ok = calloc(r->n, 1);
    if (ok == NULL)
        return 0;
    const char *argv[3] = {r->key, r->token, wake ? r->channel : ""};
    size_t n = run_on_all(r, RLOCK_S_SIMPLE_UNLOCK, 1, 3, argv, only, ok, 0);
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
 * "not yet" with the delay before the next round (the wait loop sleeps it, or less if
 * an unlock message arrives on the server we listen to). */
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
    /* The fence counter the simple-lock script keeps is of no use here (no token across
     * independent servers): it lives no longer than the lock. */
    const char *argv[5] = {r->key, r->fence_key, r->token, t->ttl, t->ttl};
    int64_t start = rlock_now_ms();
    t->granted = run_on_all(r, RLOCK_S_SIMPLE_LOCK, 2, 5, argv, NULL, t->ok, r->fail_fast ? r->quorum : 0);
    t->validity = rlock_redlock_validity(t->ttl_ms, rlock_now_ms() - start);
    r->tries++;
    if (t->granted >= r->quorum && t->validity > 0) {
        r->until_ms = start + t->validity;
        return 1;
    }
    release_all(r, t->ok, 0);
    /* The pause: the caller's function, else the retry delay jittered and doubled per
     * lost round up to 16x (contenders that keep splitting the votes spread out). */
    int shift = r->tries - 1 < 4 ? r->tries - 1 : 4;
    *hint = r->delay_fn ? r->delay_fn(r->tries, r->delay_arg) : rlock_jitter_ms(r->retry_delay_ms << shift, &r->w.seed);
    if (*hint < 1)
        *hint = 1;
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
    r->tries = 0;
    /* Listen for unlocks on one server that answers (every unlock publishes on each). */
    size_t sub = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->conns[i] && !r->conns[i]->err) {
            sub = i;
            break;
        }
    /* The attempt's hint sets each pause (redlock_attempt); an unlock message cuts it short. */
    int64_t poll_ms = 3600000;
    if (r->w.seed == 0)
        r->w.seed = (unsigned)getpid() ^ (unsigned)(uintptr_t)r ^ (unsigned)rlock_now_ms();
    int rv = rlock_wait_until(NULL, &r->urls[sub], r->tv, &r->w, r->channel, wait_ms, poll_ms,
                              redlock_attempt, &t);
    if (rv == 0) {
        r->held = 1;
        r->ttl_ms = ttl_ms;
        if (validity_ms)
            *validity_ms = t.validity;
    } else if (rv == RLOCK_ERR_TIMEOUT) {
        snprintf(r->errstr, sizeof(r->errstr), "redlock %s: %zu of %zu servers granted, quorum %zu",
                 r->name, t.granted, r->n, r->quorum);
    }
    free(t.ok);
    return rv;
}

int rlock_redlock_extend(rlock_redlock_t *r, int64_t ttl_ms, int64_t *validity_ms)
{
    if (ttl_ms <= 0) {
        snprintf(r->errstr, sizeof(r->errstr), "redlock lease must be > 0");
        return RLOCK_ERR_ARG;
    }
    if (!r->held) {
        snprintf(r->errstr, sizeof(r->errstr), "redlock %s not held by this handle", r->name);
        return RLOCK_ERR_NOT_HELD;
    }
    unsigned char *ok = calloc(r->n, 1);
    if (ok == NULL)
        return RLOCK_ERR_NOMEM;
    char ttl[24];
    snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
    const char *argv[3] = {r->key, r->token, ttl};
    int64_t start = rlock_now_ms();
    size_t n = run_on_all(r, RLOCK_S_SIMPLE_RENEW, 1, 3, argv, NULL, ok, r->fail_fast ? r->quorum : 0);
    int64_t validity = rlock_redlock_validity(ttl_ms, rlock_now_ms() - start);
    free(ok);
    if (n < r->quorum || validity <= 0) {
        /* Not extended on a quorum: what is held still ends at the old validity. */
        snprintf(r->errstr, sizeof(r->errstr), "redlock %s: extended on %zu of %zu servers, quorum %zu",
                 r->name, n, r->n, r->quorum);
        return RLOCK_ERR_NOT_HELD;
    }
    r->ttl_ms = ttl_ms;
    r->until_ms = start + validity;
    if (validity_ms)
        *validity_ms = validity;
    return 0;
}

int rlock_redlock_valid(rlock_redlock_t *r)
{
    if (!r->held || rlock_redlock_validity_ms(r) == 0)
        return 0;
    unsigned char *ok = calloc(r->n, 1);
    if (ok == NULL)
        return RLOCK_ERR_NOMEM;
    const char *argv[2] = {"GET", r->key};
    size_t n = run_on_all(r, -1, 0, 2, argv, NULL, ok, r->fail_fast ? r->quorum : 0);
    free(ok);
    return n >= r->quorum;
}

int rlock_redlock_unlock(rlock_redlock_t *r)
{
    if (!r->held) {
        snprintf(r->errstr, sizeof(r->errstr), "redlock %s not held by this handle", r->name);
        return RLOCK_ERR_NOT_HELD;
    }
    size_t released = release_all(r, NULL, 1);
    r->held = 0;
    if (released == 0) {
        snprintf(r->errstr, sizeof(r->errstr), "redlock %s: no server still held it", r->name);
        return RLOCK_ERR_NOT_HELD;
    }
    return 0;
}
