/* idgen_redis: the Redis backend of libidgen, and idgen_new.
 *
 * A small pool of blocking hiredis connections: a call takes an idle connection (or
 * opens one), runs INCR/INCRBY (+ EXPIRE) as one pipelined round trip, and gives the
 * connection back. With T threads in incr mode the pool grows to T connections, so each
 * thread effectively has its own and nothing but the INCR sits in its path. A broken
 * connection is dropped, never given back; the next call opens a fresh one, which is
 * how the generator reconnects by itself when Redis returns. */
#include "idgen_int.h"

#include "idgen_core.h"
#include "sk_redis_url.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POOL_MAX 128

typedef struct redis_backend {
    sk_redis_url url;
    struct timeval tv;
    int wait_replicas; /* > 0: WAIT after every increment */
    int wait_timeout_ms;
    pthread_mutex_t mu;
    redisContext *idle[POOL_MAX];
    int nidle;
} redis_backend;

static redisContext *pool_get(redis_backend *rb, int *fresh, char *err, size_t errsz)
{
    redisContext *c = NULL;
    pthread_mutex_lock(&rb->mu);
    if (rb->nidle > 0)
        c = rb->idle[--rb->nidle];
    pthread_mutex_unlock(&rb->mu);
    *fresh = c == NULL;
    if (!c)
        c = sk_redis_url_connect(&rb->url, rb->tv, err, errsz);
    return c;
}

static void pool_put(redis_backend *rb, redisContext *c)
{
    pthread_mutex_lock(&rb->mu);
    if (rb->nidle < POOL_MAX) {
        rb->idle[rb->nidle++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&rb->mu);
    if (c)
        redisFree(c);
}

/* Appends `argc` bulk strings as one RESP command to buf at *len. */
static int resp_append(char *buf, size_t size, size_t *len, int argc, const char **argv)
{
    int n = snprintf(buf + *len, size - *len, "*%d\r\n", argc);
    if (n < 0 || (size_t)n >= size - *len)
        return -1;
    *len += (size_t)n;
    for (int i = 0; i < argc; i++) {
        n = snprintf(buf + *len, size - *len, "$%zu\r\n%s\r\n", strlen(argv[i]), argv[i]);
        if (n < 0 || (size_t)n >= size - *len)
            return -1;
        *len += (size_t)n;
    }
    return 0;
}

/* A connection that failed by being closed under us (Redis restarted) is worth one
 * retry on a fresh one; a timeout is not (it would double the caller's wait). */
static int closed_under_us(const redisContext *c)
{
    return c->err == REDIS_ERR_EOF ||
           (c->err == REDIS_ERR_IO && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static int rb_incrby(void *arg, const char *key, uint64_t n, int64_t ttl_s, uint64_t *last,
                     char *err, size_t errsz)
{
    redis_backend *rb = arg;
    char nbuf[24], tbuf[24], rbuf[16], wbuf[16], cmd[2 * IDGEN_KEY_MAX + 200];
    size_t len = 0;
    snprintf(nbuf, sizeof(nbuf), "%llu", (unsigned long long)n);
    snprintf(tbuf, sizeof(tbuf), "%lld", (long long)ttl_s);
    snprintf(rbuf, sizeof(rbuf), "%d", rb->wait_replicas);
    snprintf(wbuf, sizeof(wbuf), "%d", rb->wait_timeout_ms);
    const char *incr[3] = {n == 1 ? "INCR" : "INCRBY", key, nbuf};
    const char *expire[3] = {"EXPIRE", key, tbuf};
    const char *wait[3] = {"WAIT", rbuf, wbuf};
    int nreplies = 1 + (ttl_s > 0) + (rb->wait_replicas > 0);
    if (resp_append(cmd, sizeof(cmd), &len, n == 1 ? 2 : 3, incr) ||
        (ttl_s > 0 && resp_append(cmd, sizeof(cmd), &len, 3, expire)) ||
        (rb->wait_replicas > 0 && resp_append(cmd, sizeof(cmd), &len, 3, wait))) {
        snprintf(err, errsz, "key too long");
        return IDGEN_ERR_ARG;
    }
    for (int attempt = 0;; attempt++) {
        int fresh;
        redisContext *c = pool_get(rb, &fresh, err, errsz);
        if (!c)
            return IDGEN_ERR_REDIS;
        /* Replies in order: INCR/INCRBY, then EXPIRE if sent, then WAIT if sent. */
        redisReply *rep[3] = {NULL, NULL, NULL};
        int ok = redisAppendFormattedCommand(c, cmd, len) == REDIS_OK;
        for (int i = 0; ok && i < nreplies; i++)
            ok = redisGetReply(c, (void **)&rep[i]) == REDIS_OK;
        if (!ok) {
            int retry = !fresh && attempt == 0 && closed_under_us(c);
            snprintf(err, errsz, "%s %.80s: %s", incr[0], key,
                     c->errstr[0] ? c->errstr : "I/O error");
            for (int i = 0; i < 3; i++)
                if (rep[i])
                    freeReplyObject(rep[i]);
            redisFree(c);
            if (retry)
                continue;
            return IDGEN_ERR_REDIS;
        }
        int rc = IDGEN_OK;
        redisReply *r1 = rep[0], *rw = rb->wait_replicas > 0 ? rep[nreplies - 1] : NULL;
        if (r1->type == REDIS_REPLY_INTEGER && r1->integer > 0) {
            *last = (uint64_t)r1->integer;
        } else {
            snprintf(err, errsz, "%s %.80s: %s", incr[0], key,
                     r1->type == REDIS_REPLY_ERROR ? r1->str : "unexpected reply");
            rc = IDGEN_ERR_REDIS;
        }
        /* Numbers fewer replicas hold than asked could come back after a failover: the
         * caller must not hand them out. They are skipped, as after any failed lease. */
        if (rc == IDGEN_OK && rw &&
            !(rw->type == REDIS_REPLY_INTEGER && rw->integer >= rb->wait_replicas)) {
            if (rw->type == REDIS_REPLY_INTEGER)
                snprintf(err, errsz, "WAIT: %.80s reached %lld of %d replicas within %d ms",
                         key, rw->integer, rb->wait_replicas, rb->wait_timeout_ms);
            else
                snprintf(err, errsz, "WAIT: %s",
                         rw->type == REDIS_REPLY_ERROR ? rw->str : "unexpected reply");
            rc = IDGEN_ERR_REDIS;
        }
        /* A failed EXPIRE only costs a key that lives too long; the next day's lease sets
         * it again. Not worth failing an ID for. */
        for (int i = 0; i < 3; i++)
            if (rep[i])
                freeReplyObject(rep[i]);
        pool_put(rb, c);
        return rc;
    }
}

static void rb_destroy(void *arg)
{
    redis_backend *rb = arg;
    if (!rb)
        return;
    for (int i = 0; i < rb->nidle; i++)
        redisFree(rb->idle[i]);
    pthread_mutex_destroy(&rb->mu);
    free(rb);
}

idgen_t *idgen_new(const char *redis_url, const char *prefix, const idgen_opts *opts,
                   char *errstr, size_t errsz)
{
    idgen_opts o;
    if (opts)
        o = *opts;
    else
        idgen_opts_init(&o);
    if (!redis_url || !redis_url[0]) {
        snprintf(errstr, errsz, "idgen: no Redis URL");
        return NULL;
    }
    redis_backend *rb = calloc(1, sizeof(*rb));
    if (!rb) {
        snprintf(errstr, errsz, "idgen: out of memory");
        return NULL;
    }
    char perr[256];
    if (sk_redis_url_parse(redis_url, &rb->url, perr, sizeof(perr)) != 0) {
        snprintf(errstr, errsz, "idgen: %s", perr);
        free(rb);
        return NULL;
    }
    int ms = o.timeout_ms > 0 ? o.timeout_ms : 1000;
    rb->tv.tv_sec = ms / 1000;
    rb->tv.tv_usec = (ms % 1000) * 1000;
    rb->wait_replicas = o.wait_replicas > 0 ? o.wait_replicas : 0;
    rb->wait_timeout_ms = o.wait_timeout_ms > 0 ? o.wait_timeout_ms : 0;
    pthread_mutex_init(&rb->mu, NULL);
    idgen_backend be = {.incrby = rb_incrby, .destroy = rb_destroy, .arg = rb};
    return idgen_new_with_backend(&be, prefix, &o, errstr, errsz);
}
