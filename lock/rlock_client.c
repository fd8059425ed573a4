/* rlock_client: the client context: URL, process-unique id, the shared command
 * context (an rcluster context, so one Redis or a Redis Cluster, which reconnects by
 * itself after an I/O error) and the pipeline every thread's commands share on it, and
 * error strings.
 *
 * The pipeline: a blocking connection per thread costs each call a write, a read and a
 * wake-up of its own, which is nearly all of a lock/unlock pair's client CPU (profiled:
 * lock/README.md). Here concurrent callers' commands go out together: the first caller
 * that finds nobody sending takes every queued command, sends them in one write per
 * node, reads the replies in as few reads, and hands each to its caller; callers that
 * queued meanwhile form the next batch. Redis runs one connection's commands in order,
 * so a caller's own commands stay in its order; commands of different callers were
 * never ordered. */
#include "rlock_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* The watchdog's way to open its own connection (rlock_connect_fn). */
static rcl_ctx *client_connect_fn(void *arg, char *err, size_t errsz)
{
    return rlock_client_connect(arg, err, errsz);
}

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
    pthread_mutex_init(&c->q_mu, NULL);
    rlock_watchdog_init(&c->wd, o.watchdog_timeout_ms, client_connect_fn, c);
    rlock_gates_init(&c->gates);
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
    rlock_watchdog_stop(&c->wd);
    rlock_gates_destroy(&c->gates);
    rcl_free(c->cmd);
    free(c->url);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->q_mu);
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
    snprintf(out, RLOCK_OWNER_SIZE, "%s:%ld", c->id, rlock_thread_id());
}

/* With c->mu held: the command context (it reconnects by itself), or NULL with err set
 * when even the first connect failed (only at rlock_client_new). */
static rcl_ctx *cmd_conn(rlock_client_t *c, char *err, size_t errsz)
{
    if (c->cmd == NULL)
        c->cmd = rlock_client_connect(c, err, errsz);
    return c->cmd;
}

/* Settles q from its reply (NULL: see rcl_errstr(rc)). */
static void req_finish(rlock_req *q, redisReply *r, rcl_ctx *rc)
{
    if (r == NULL) {
        const char *e = rcl_errstr(rc);
        snprintf(q->err, q->errsz, "redis: %s", e[0] ? e : "connection lost");
        /* CROSSSLOT (keys of one lock in two slots) is a bug, not a lost connection. */
        q->rv = strncmp(e, "CROSSSLOT", 9) == 0 ? RLOCK_ERR_ARG : RLOCK_ERR_IO;
    } else if (r->type == REDIS_REPLY_ERROR) {
        snprintf(q->err, q->errsz, "%s: %s", q->what, r->str);
        freeReplyObject(r);
        q->rv = RLOCK_ERR_REDIS;
    } else {
        q->reply = r;
        q->rv = 0;
    }
}

/* Sends a batch (a list through ->next) and settles every request in it. Holds c->mu
 * for the I/O. One command goes as a plain round trip (nothing copied); more are
 * pipelined: rcluster sends each node's commands in one write, and mends NOSCRIPT and
 * redirections per command after the batch is read. */
static void client_batch_run(rlock_client_t *c, rlock_req *batch)
{
    char err[RLOCK_ERRSTR_SIZE];
    pthread_mutex_lock(&c->mu);
    rcl_ctx *rc = cmd_conn(c, err, sizeof(err));
    if (rc == NULL) {
        for (rlock_req *q = batch; q; q = q->next) {
            snprintf(q->err, q->errsz, "%s", err);
            q->rv = RLOCK_ERR_IO;
        }
    } else if (batch->next == NULL) {
        req_finish(batch, rcl_command_argv(rc, batch->n, (const char **)batch->v, batch->vl), rc);
    } else {
        for (rlock_req *q = batch; q; q = q->next) {
            q->rv = 1; /* queued */
            if (rcl_append_argv(rc, q->n, (const char **)q->v, q->vl) != 0)
                req_finish(q, NULL, rc);
        }
        for (rlock_req *q = batch; q; q = q->next) {
            if (q->rv != 1)
                continue;
            redisReply *r = NULL;
            rcl_get_reply(rc, &r);
            req_finish(q, r, rc);
        }
    }
    pthread_mutex_unlock(&c->mu);
}

/* Runs q through the pipeline (design note at the top); returns with q settled. The
 * leader posts semaphores outside q_mu: a woken caller never waits for the mutex, and a
 * caller may destroy its semaphore as soon as its wait returns (glibc's sem_post does
 * not touch it after the count it waits for). */
static void client_submit(rlock_client_t *c, rlock_req *q)
{
    q->lead = 0;
    q->next = NULL;
    q->reply = NULL;
    sem_init(&q->sem, 0, 0);
    pthread_mutex_lock(&c->q_mu);
    if (c->q_tail)
        c->q_tail->next = q;
    else
        c->q_head = q;
    c->q_tail = q;
    int lead = !c->q_leading;
    c->q_leading = 1;
    pthread_mutex_unlock(&c->q_mu);
    if (!lead) {
        while (sem_wait(&q->sem) != 0)
            ; /* EINTR */
        if (!q->lead) {
            sem_destroy(&q->sem);
            return;
        }
    }
    /* Leading: q is still queued (only a leader dequeues). */
    pthread_mutex_lock(&c->q_mu);
    rlock_req *batch = c->q_head;
    c->q_head = c->q_tail = NULL;
    pthread_mutex_unlock(&c->q_mu);
    client_batch_run(c, batch);
    pthread_mutex_lock(&c->q_mu);
    rlock_req *next = c->q_head; /* queued meanwhile: it leads the next batch */
    if (next == NULL)
        c->q_leading = 0;
    pthread_mutex_unlock(&c->q_mu);
    for (rlock_req *b = batch, *nx; b; b = nx) {
        nx = b->next; /* read before the post: its caller may return at once */
        if (b != q)
            sem_post(&b->sem);
    }
    if (next) {
        next->lead = 1;
        sem_post(&next->sem);
    }
    sem_destroy(&q->sem);
}

int rlock_client_eval(rlock_client_t *c, int id, int nkeys, int argc, const char **argv,
                      redisReply **out, char *err, size_t errsz)
{
    rlock_script_cmd s;
    *out = NULL;
    int rv = rlock_script_cmd_fill(&s, id, nkeys, argc, argv, err, errsz);
    if (rv != 0)
        return rv;
    rlock_req q = {.n = s.n, .v = s.v, .vl = s.vl, .what = "script", .err = err, .errsz = errsz};
    client_submit(c, &q);
    *out = q.reply;
    return q.rv;
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
    rlock_req q = {.n = argc, .v = argv, .vl = vl, .what = "redis", .err = err, .errsz = errsz};
    client_submit(c, &q);
    *out = q.reply;
    return q.rv;
}
