/* idgen_redis: the Redis backend of libidgen, and idgen_new.
 *
 * A small pool of blocking rcluster contexts (one Redis, or a Redis Cluster when the URL
 * is redis-cluster://): a call takes an idle context (or opens one), runs INCR/INCRBY
 * (+ EXPIRE, + WAIT) as one pipelined round trip, and gives the context back. With T
 * threads in incr mode the pool grows to T contexts, so each thread effectively has its
 * own and nothing but the INCR sits in its path. A context that failed is dropped, never
 * given back; the next call opens a fresh one, which is how the generator reconnects by
 * itself when Redis returns. rcluster retries a connection closed under us once (a
 * restarted Redis) and, on a cluster, follows MOVED/ASK and retries through failovers.
 * The counter key is one key per command, so every command of a round trip is in one
 * slot and WAIT goes to that slot's master (rcl_append_argv routes it after them). */
#include "idgen_int.h"

#include "idgen_core.h"
#include "idgen_lua.h" /* generated: lua/idgen_*.lua */
#include "rcluster.h"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POOL_MAX 128

typedef struct redis_backend {
    char *url;
    struct timeval tv;
    int wait_replicas; /* > 0: WAIT after every increment */
    int wait_timeout_ms;
    char floor_sha[41]; /* lua/idgen_floor_lease.lua */
    pthread_mutex_t mu;
    rcl_ctx *idle[POOL_MAX];
    int nidle;
} redis_backend;

static rcl_ctx *pool_get(redis_backend *rb, char *err, size_t errsz)
{
    rcl_ctx *c = NULL;
    pthread_mutex_lock(&rb->mu);
    if (rb->nidle > 0)
        c = rb->idle[--rb->nidle];
    pthread_mutex_unlock(&rb->mu);
    if (!c && (c = rcl_connect(rb->url, rb->tv, err, errsz))) {
        /* The floor lease goes by EVALSHA; rcluster loads the body on NOSCRIPT. */
        char sha[41];
        if (rcl_script_add(c, idgen_lua_floor_lease, sha) != 0) {
            snprintf(err, errsz, "out of memory");
            rcl_free(c);
            c = NULL;
        }
    }
    return c;
}

static void pool_put(redis_backend *rb, rcl_ctx *c)
{
    pthread_mutex_lock(&rb->mu);
    if (rb->nidle < POOL_MAX) {
        rb->idle[rb->nidle++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&rb->mu);
    rcl_free(c);
}

static int rb_incrby(void *arg, const char *key, uint64_t n, int64_t ttl_s, uint64_t *last,
                     char *err, size_t errsz)
{
    redis_backend *rb = arg;
    char nbuf[24], tbuf[24], rbuf[16], wbuf[16];
    snprintf(nbuf, sizeof(nbuf), "%llu", (unsigned long long)n);
    snprintf(tbuf, sizeof(tbuf), "%lld", (long long)ttl_s);
    snprintf(rbuf, sizeof(rbuf), "%d", rb->wait_replicas);
    snprintf(wbuf, sizeof(wbuf), "%d", rb->wait_timeout_ms);
    const char *incr[3] = {n == 1 ? "INCR" : "INCRBY", key, nbuf};
    const char *expire[3] = {"EXPIRE", key, tbuf};
    const char *wait[3] = {"WAIT", rbuf, wbuf};
    int nreplies = 1 + (ttl_s > 0) + (rb->wait_replicas > 0);
    rcl_ctx *c = pool_get(rb, err, errsz);
    if (!c)
        return IDGEN_ERR_REDIS;
    /* Replies in order: INCR/INCRBY, then EXPIRE if sent, then WAIT if sent. */
    redisReply *rep[3] = {NULL, NULL, NULL};
    int ok = rcl_append_argv(c, n == 1 ? 2 : 3, incr, NULL) == 0 &&
             (ttl_s <= 0 || rcl_append_argv(c, 3, expire, NULL) == 0) &&
             (rb->wait_replicas <= 0 || rcl_append_argv(c, 3, wait, NULL) == 0);
    for (int i = 0; ok && i < nreplies; i++)
        ok = rcl_get_reply(c, &rep[i]) == 0;
    if (!ok) {
        snprintf(err, errsz, "%s %.80s: %s", incr[0], key,
                 rcl_errstr(c)[0] ? rcl_errstr(c) : "I/O error");
        for (int i = 0; i < 3; i++)
            if (rep[i])
                freeReplyObject(rep[i]);
        rcl_free(c); /* replies of the batch may still be due: never reuse it */
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

/* ---- floor mode (idgen_floor.c) ---- */

/* Runs one command. @returns the reply (caller frees; never an error reply), or NULL
 * with err set and the context dropped. */
static redisReply *rb_run(redis_backend *rb, int argc, const char **argv, char *err,
                          size_t errsz)
{
    rcl_ctx *c = pool_get(rb, err, errsz);
    if (!c)
        return NULL;
    redisReply *r = rcl_command_argv(c, argc, argv, NULL);
    if (!r) {
        snprintf(err, errsz, "%s %.80s: %s", argv[0], argc > 1 ? argv[1] : "",
                 rcl_errstr(c)[0] ? rcl_errstr(c) : "I/O error");
        rcl_free(c);
        return NULL;
    }
    pool_put(rb, c);
    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(err, errsz, "%s: %s", argv[0], r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

static int rb_floor_lease(void *arg, const char *key, uint64_t n, int64_t ttl_s,
                          int64_t *value, char *err, size_t errsz)
{
    redis_backend *rb = arg;
    char nbuf[24], tbuf[24];
    snprintf(nbuf, sizeof(nbuf), "%llu", (unsigned long long)n);
    snprintf(tbuf, sizeof(tbuf), "%lld", (long long)(ttl_s > 0 ? ttl_s : 0));
    const char *argv[6] = {"EVALSHA", rb->floor_sha, "1", key, nbuf, tbuf};
    redisReply *r = rb_run(rb, 6, argv, err, errsz);
    if (!r)
        return IDGEN_ERR_REDIS;
    int rc = IDGEN_OK;
    if (r->type == REDIS_REPLY_INTEGER && r->integer >= -1) {
        *value = r->integer;
    } else {
        snprintf(err, errsz, "floor lease %.80s: unexpected reply", key);
        rc = IDGEN_ERR_REDIS;
    }
    freeReplyObject(r);
    return rc;
}

static int rb_floor_set(void *arg, const char *key, int64_t value, int64_t ttl_s, char *err,
                        size_t errsz)
{
    char vbuf[24], tbuf[24];
    snprintf(vbuf, sizeof(vbuf), "%lld", (long long)value);
    snprintf(tbuf, sizeof(tbuf), "%lld", (long long)(ttl_s > 0 ? ttl_s : 60));
    const char *argv[6] = {"SET", key, vbuf, "NX", "EX", tbuf};
    redisReply *r = rb_run(arg, 6, argv, err, errsz);
    if (!r)
        return IDGEN_ERR_REDIS;
    freeReplyObject(r); /* OK, or nil: another restorer's SET won, which is as good */
    return IDGEN_OK;
}

static int rb_floor_get(void *arg, const char *key, int64_t *value, char *err, size_t errsz)
{
    const char *argv[2] = {"GET", key};
    redisReply *r = rb_run(arg, 2, argv, err, errsz);
    if (!r)
        return IDGEN_ERR_REDIS;
    int rc = IDGEN_OK;
    if (r->type == REDIS_REPLY_NIL) {
        *value = -1;
    } else if (r->type == REDIS_REPLY_STRING) {
        char *end;
        long long v = strtoll(r->str, &end, 10);
        if (*end || v < 0) {
            snprintf(err, errsz, "GET %.80s: not a floor-mode counter", key);
            rc = IDGEN_ERR_REDIS;
        }
        *value = v;
    } else {
        snprintf(err, errsz, "GET %.80s: unexpected reply", key);
        rc = IDGEN_ERR_REDIS;
    }
    freeReplyObject(r);
    return rc;
}

static void rb_destroy(void *arg)
{
    redis_backend *rb = arg;
    if (!rb)
        return;
    for (int i = 0; i < rb->nidle; i++)
        rcl_free(rb->idle[i]);
    free(rb->url);
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
    if (rcl_url_check(redis_url, perr, sizeof(perr)) != 0) {
        snprintf(errstr, errsz, "idgen: %s", perr);
        free(rb);
        return NULL;
    }
    if (!(rb->url = strdup(redis_url))) {
        snprintf(errstr, errsz, "idgen: out of memory");
        free(rb);
        return NULL;
    }
    int ms = o.timeout_ms > 0 ? o.timeout_ms : 1000;
    rb->tv.tv_sec = ms / 1000;
    rb->tv.tv_usec = (ms % 1000) * 1000;
    rb->wait_replicas = o.wait_replicas > 0 ? o.wait_replicas : 0;
    rb->wait_timeout_ms = o.wait_timeout_ms > 0 ? o.wait_timeout_ms : 0;
    rcl_sha1_hex(idgen_lua_floor_lease, strlen(idgen_lua_floor_lease), rb->floor_sha);
    pthread_mutex_init(&rb->mu, NULL);
    idgen_backend be = {.incrby = rb_incrby,
                        .floor_lease = rb_floor_lease,
                        .floor_set = rb_floor_set,
                        .floor_get = rb_floor_get,
                        .destroy = rb_destroy,
                        .arg = rb};
    return idgen_new_with_backend(&be, prefix, &o, errstr, errsz);
}
