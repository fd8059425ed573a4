/* rlock_client: the client context: URL, process-unique id, the shared command
 * context (behind a mutex; an rcluster context, so one Redis or a Redis Cluster, which
 * reconnects by itself after an I/O error), and error strings. */
#include "rlock_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

const char *rlock_strerror(int err)
{
    switch (err) {
    case RLOCK_OK: return "ok";
    case RLOCK_ERR_IO: return "redis connection error";
    case RLOCK_ERR_REDIS: return "redis error reply";
    case RLOCK_ERR_TIMEOUT: return "not acquired in time";
    case RLOCK_ERR_NOT_HELD: return "not held by this owner";
    case RLOCK_ERR_ARG: return "bad argument";
    case RLOCK_ERR_NOMEM: return "out of memory";
    case RLOCK_ERR_STATE: return "not valid in this state";
    default: return "unknown error";
    }
}

int rlock_err_retriable(int err)
{
    return err == RLOCK_ERR_IO || err == RLOCK_ERR_TIMEOUT;
}

static int opt_or(int v, int def) { return v > 0 ? v : def; }

rlock_client_t *rlock_client_new(const char *redis_url, const rlock_client_opts *opts,
                                 char *errstr, size_t errstr_size)
{
    rlock_client_t *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    if (rcl_url_check(redis_url ? redis_url : "", errstr, errstr_size) != 0) {
        free(c);
        return NULL;
    }
    if ((c->url = strdup(redis_url)) == NULL) {
        snprintf(errstr, errstr_size, "out of memory");
        free(c);
        return NULL;
    }
    rlock_client_opts o = {0};
    if (opts)
        o = *opts;
    o.connect_timeout_ms = opt_or(o.connect_timeout_ms, 2000);
    o.watchdog_timeout_ms = opt_or(o.watchdog_timeout_ms, 30000);
    o.wait_poll_ms = opt_or(o.wait_poll_ms, 1000);
    o.fair_waiter_timeout_ms = opt_or(o.fair_waiter_timeout_ms, 5000);
    if (o.fence_retention_ms <= 0)
        o.fence_retention_ms = 3600000;
    c->opts = o;
    c->tv.tv_sec = o.connect_timeout_ms / 1000;
    c->tv.tv_usec = (o.connect_timeout_ms % 1000) * 1000;
    if ((o.redisson ? rlock_uuid4(c->id) : rlock_random_hex32(c->id)) != 0) {
        snprintf(errstr, errstr_size, "no OS randomness for the client id");
        free(c->url);
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->wd_mu, NULL);
    pthread_mutex_init(&c->cb_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->wd_cond, &ca);
    pthread_condattr_destroy(&ca);
    /* Connect now, so a wrong address fails here and not at the first lock. */
    c->cmd = rlock_client_connect(c, errstr, errstr_size);
    if (c->cmd == NULL) {
        rlock_client_free(c);
        return NULL;
    }
    c->pub_cmd = "publish";
    if (o.redisson && rcl_is_cluster(c->cmd)) {
        /* Redisson's ShardedSubscriptionMode.AUTO (its default): on a cluster whose
         * servers know PUBSUB SHARDNUMSUB, it publishes with SPUBLISH and listens with
         * SSUBSCRIBE, which plain PUBLISH/SUBSCRIBE never meet. Do as it does. */
        const char *argv[2] = {"PUBSUB", "SHARDNUMSUB"};
        redisReply *r;
        char err[RLOCK_ERRSTR_SIZE];
        if (rlock_client_command(c, 2, argv, &r, err, sizeof(err)) == 0) {
            freeReplyObject(r);
            c->pub_cmd = "spublish";
            c->sharded = 1;
        }
    }
    return c;
}

void rlock_client_free(rlock_client_t *c)
{
    if (c == NULL)
        return;
    rlock_watchdog_stop(c);
    rcl_free(c->cmd);
    free(c->url);
    free(c->wd_list);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->wd_mu);
    pthread_mutex_destroy(&c->cb_mu);
    pthread_cond_destroy(&c->wd_cond);
    free(c);
}

const char *rlock_client_id(const rlock_client_t *c) { return c->id; }

rcl_ctx *rlock_client_connect(rlock_client_t *c, char *err, size_t errsz)
{
    return rlock_rcl_connect(c->url, c->tv, err, errsz);
}

redisContext *rlock_client_sub_connect(rlock_client_t *c, const char *channel, char *err, size_t errsz)
{
    pthread_mutex_lock(&c->mu);
    redisContext *s = c->cmd ? rcl_connect_node(c->cmd, channel, channel ? strlen(channel) : 0, err, errsz)
                             : NULL;
    pthread_mutex_unlock(&c->mu);
    if (s == NULL && c->cmd == NULL)
        snprintf(err, errsz, "not connected");
    return s;
}

void rlock_client_owner(const rlock_client_t *c, char out[RLOCK_OWNER_SIZE])
{
    snprintf(out, RLOCK_OWNER_SIZE, "%s:%ld", c->id, (long)syscall(SYS_gettid));
}

/* With c->mu held: the command context (it reconnects by itself), or NULL with err set
 * when even the first connect failed (only at rlock_client_new). */
static rcl_ctx *cmd_conn(rlock_client_t *c, char *err, size_t errsz)
{
    if (c->cmd == NULL)
        c->cmd = rlock_client_connect(c, err, errsz);
    return c->cmd;
}

int rlock_client_eval(rlock_client_t *c, int id, int nkeys, int argc, const char **argv,
                      redisReply **out, char *err, size_t errsz)
{
    *out = NULL;
    pthread_mutex_lock(&c->mu);
    rcl_ctx *rc = cmd_conn(c, err, errsz);
    int rv = rc ? rlock_script_eval_rcl(rc, id, nkeys, argc, argv, out, err, errsz) : RLOCK_ERR_IO;
    pthread_mutex_unlock(&c->mu);
    return rv;
}

int rlock_client_command(rlock_client_t *c, int argc, const char **argv, redisReply **out,
                         char *err, size_t errsz)
{
    size_t vl[16];
    *out = NULL;
    if (argc > 16)
        return RLOCK_ERR_ARG;
    for (int i = 0; i < argc; i++)
        vl[i] = strlen(argv[i]);
    pthread_mutex_lock(&c->mu);
    int rv = 0;
    rcl_ctx *rc = cmd_conn(c, err, errsz);
    if (rc == NULL) {
        rv = RLOCK_ERR_IO;
    } else {
        redisReply *r = rcl_command_argv(rc, argc, argv, vl);
        if (r == NULL) {
            snprintf(err, errsz, "redis: %s", rcl_errstr(rc)[0] ? rcl_errstr(rc) : "connection lost");
            rv = RLOCK_ERR_IO;
        } else if (r->type == REDIS_REPLY_ERROR) {
            snprintf(err, errsz, "redis: %s", r->str);
            freeReplyObject(r);
            rv = RLOCK_ERR_REDIS;
        } else {
            *out = r;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return rv;
}
