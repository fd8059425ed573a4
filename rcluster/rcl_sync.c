/* rcl_sync: the blocking API (see rcluster.h).
 *
 * Design note: a cluster context keeps a node table (every address it has heard of:
 * seeds, masters of the map, MOVED/ASK targets; never shrinks, so indices are stable)
 * with one lazily opened blocking connection each, and the slot map as indices into it.
 * A single command runs in exec_cmd's loop, which owns every retry rule. A pipeline
 * sends each node its commands in one write, reads every reply of the batch, and only
 * then re-runs the redirected ones through exec_cmd, because a blocking connection
 * cannot take a new command while earlier replies are still unread on it. */
#include "rcl_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

typedef struct node {
    rcl_addr a;
    redisContext *c; /* NULL until used, or after an error */
    int broke;       /* in a batch: 1 the connection was lost, 2 it timed out */
} node;

typedef struct pend {
    void *mem; /* argv + lens + bytes (rcl_argv_copy) */
    int argc;
    const char **argv;
    size_t *lens;
    int slot;  /* -1 keyless */
    int node;  /* where it was sent, -1 not sent */
    int redo;  /* to be re-run through exec_cmd */
    int failed;
    int moved_slot; /* a MOVED answer, applied once the batch is read (-1 none) */
    rcl_addr moved_to;
    redisReply *reply;
    char err[RCL_ERR_SIZE];
} pend;

struct rcl_ctx {
    rcl_url url;
    struct timeval tv;
    char err[RCL_ERR_SIZE];
    rcl_scripts scripts;
    /* pass-through */
    redisContext *one;
    int one_used; /* the connection answered before: a failure is worth one retry */
    int one_readonly; /* sentinel URL: it answered -READONLY (demoted): drop it */
    int one_broke; /* as node.broke */
    char one_addr[300];
    /* cluster */
    node *nodes;
    int nnodes, capnodes;
    rcl_slotmap map;
    int *master_node; /* map.masters[i] -> node index */
    int64_t last_refresh_ms;
    char addr_buf[300];
    /* pipeline */
    pend *q;
    int nq, capq, nsent, next;
};

static void set_err(rcl_ctx *c, const char *what, const char *detail)
{
    /* The detail (a node's error, up to 255 bytes) is cut at 200: the message is for
     * people, and the bound keeps -Wformat-truncation quiet in Release builds. */
    snprintf(c->err, sizeof(c->err), "%s%s%.200s", what, detail && detail[0] ? ": " : "",
             detail ? detail : "");
}

/* A failure worth a retry on a new connection: closed or refused, not a timeout (which
 * would double the caller's wait). errno must be the failed call's. */
static int conn_lost(const redisContext *rc, int err_no)
{
    return rc->err == REDIS_ERR_EOF ||
           (rc->err == REDIS_ERR_IO && err_no != EAGAIN && err_no != EWOULDBLOCK && err_no != EINTR);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- nodes and map ---- */

static int node_find_add(rcl_ctx *c, const char *host, int port)
{
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].a.port == port && strcmp(c->nodes[i].a.host, host) == 0)
            return i;
    if (c->nnodes == c->capnodes) {
        int cap = c->capnodes ? c->capnodes * 2 : 16;
        node *p = realloc(c->nodes, (size_t)cap * sizeof(*p));
        if (!p)
            return -1;
        c->nodes = p;
        c->capnodes = cap;
    }
    node *n = &c->nodes[c->nnodes];
    memset(n, 0, sizeof(*n));
    snprintf(n->a.host, sizeof(n->a.host), "%s", host);
    n->a.port = port;
    return c->nnodes++;
}

static void node_drop(rcl_ctx *c, int i)
{
    if (c->nodes[i].c)
        redisFree(c->nodes[i].c);
    c->nodes[i].c = NULL;
}

/* The node's connection, opened when needed. NULL with c->err on failure. */
static redisContext *node_conn(rcl_ctx *c, int i)
{
    node *n = &c->nodes[i];
    if (n->c && n->c->err)
        node_drop(c, i);
    if (!n->c) {
        char e[RCL_ERR_SIZE];
        n->c = rcl_node_connect(&c->url, n->a.host, n->a.port, c->tv, e, sizeof(e));
        if (!n->c)
            set_err(c, "cluster node", e);
    }
    return n->c;
}

/* Loads the map from the first node that answers (masters of the old map first, then
 * every other known node: after a failover the old master is gone).
 * @returns 0, or -1 with c->err. */
static int refresh_map(rcl_ctx *c)
{
    c->last_refresh_ms = rcl_now_ms();
    int n = c->nnodes;
    int *order = malloc((size_t)(n ? n : 1) * sizeof(int));
    if (!order) {
        set_err(c, "out of memory", NULL);
        return -1;
    }
    int k = 0;
    for (int i = 0; i < c->map.nmasters; i++)
        order[k++] = c->master_node[i];
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < k && !seen; j++)
            seen = order[j] == i;
        if (!seen)
            order[k++] = i;
    }
    int rc = -1;
    for (int j = 0; j < k && rc != 0; j++) {
        int i = order[j];
        redisContext *rc_ = node_conn(c, i);
        if (!rc_)
            continue;
        redisReply *r = redisCommand(rc_, "CLUSTER SLOTS");
        if (!r) {
            set_err(c, "CLUSTER SLOTS", rc_->errstr);
            node_drop(c, i);
            continue;
        }
        char e[RCL_ERR_SIZE];
        rcl_slotmap m = {0};
        if (rcl_slotmap_parse(r, c->nodes[i].a.host, &m, e, sizeof(e)) != 0) {
            set_err(c, e, NULL);
            freeReplyObject(r);
            continue;
        }
        freeReplyObject(r);
        int *mn = malloc((size_t)m.nmasters * sizeof(int));
        int ok = mn != NULL;
        for (int x = 0; ok && x < m.nmasters; x++)
            ok = (mn[x] = node_find_add(c, m.masters[x].host, m.masters[x].port)) >= 0;
        if (!ok) {
            free(mn);
            rcl_slotmap_clear(&m);
            set_err(c, "out of memory", NULL);
            break;
        }
        rcl_slotmap_clear(&c->map);
        c->map = m;
        free(c->master_node);
        c->master_node = mn;
        rc = 0;
    }
    free(order);
    return rc;
}

/* The node serving `slot` (-1: any master, preferring one already connected). */
static int route(rcl_ctx *c, int slot)
{
    if (slot >= 0) {
        int m = c->map.owner[slot];
        return m >= 0 ? c->master_node[m] : -1;
    }
    for (int i = 0; i < c->map.nmasters; i++)
        if (c->nodes[c->master_node[i]].c)
            return c->master_node[i];
    return c->map.nmasters ? c->master_node[0] : -1;
}

/* MOVED: the slot is now served by `to`; a MOVED means more slots may have moved, so
 * refresh the whole map too, but not more often than RCL_REFRESH_MIN_MS. */
static void on_moved(rcl_ctx *c, int slot, const rcl_addr *to)
{
    int ni = node_find_add(c, to->host, to->port);
    if (ni < 0)
        return;
    if (rcl_slotmap_move(&c->map, &c->master_node, slot, to, ni) != 0)
        return;
    if (rcl_now_ms() - c->last_refresh_ms >= RCL_REFRESH_MIN_MS)
        refresh_map(c);
}

/* ---- one command ---- */

static redisReply *script_load(rcl_ctx *c, redisContext *rc, const char *body)
{
    const char *v[3] = {"SCRIPT", "LOAD", body};
    return redisCommandArgv(rc, 3, v, NULL);
}

/* Pass-through: the one connection, reopened when broken; one retry on a connection
 * that had answered before and was closed under us (the server restarted). */
static redisReply *exec_one(rcl_ctx *c, int argc, const char **argv, const size_t *lens)
{
    const char *body = rcl_scripts_body_for(&c->scripts, argc, argv, lens);
    int loaded = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (c->one && c->one->err) {
            redisFree(c->one);
            c->one = NULL;
        }
        if (!c->one) {
            char e[RCL_ERR_SIZE];
            c->one = sk_redis_url_connect(&c->url.plain, c->tv, e, sizeof(e));
            c->one_used = 0;
            if (!c->one) {
                set_err(c, e, NULL);
                return NULL;
            }
        }
        redisReply *r = redisCommandArgv(c->one, argc, argv, lens);
        int en = errno;
        if (!r) {
            set_err(c, "redis", c->one->errstr);
            if (c->one_used && attempt == 0 && conn_lost(c->one, en))
                continue;
            return NULL;
        }
        c->one_used = 1;
        if (c->url.plain.is_sentinel && sk_redis_reply_is_readonly(r)) {
            /* The master was demoted under us: find the new one (sk_redis_url_connect
             * asks the sentinels). Nothing ran, so once more is safe. */
            redisFree(c->one);
            c->one = NULL;
            if (attempt == 0) {
                freeReplyObject(r);
                continue;
            }
            return r;
        }
        int slot;
        rcl_addr to;
        if (body && !loaded && rcl_classify(r, &slot, &to) == RCL_R_NOSCRIPT) {
            freeReplyObject(r);
            loaded = 1;
            attempt--; /* the load is not a retry of a lost connection */
            redisReply *lr = script_load(c, c->one, body);
            if (!lr) {
                set_err(c, "SCRIPT LOAD", c->one->errstr);
                return NULL;
            }
            freeReplyObject(lr);
            continue;
        }
        return r;
    }
    return NULL;
}

/* exec_cmd's retry state for one command. */
typedef struct exec_state {
    const char *body; /* the script's body when the command is EVALSHA of a known one */
    int ask;          /* node of an ASK redirection, -1 none */
    int asked, loaded, waits, redirects;
} exec_state;

/* No connection, or a lost one: waits (backoff), refreshes the map, forgets an ASK.
 * @returns 0 to try again, -1 when the retries are spent. */
static int exec_backoff(rcl_ctx *c, exec_state *s)
{
    if (s->waits >= RCL_RETRIES)
        return -1;
    sleep_ms(rcl_backoff_ms(s->waits++));
    refresh_map(c);
    s->ask = -1;
    return 0;
}

/* Sends the command on `rc` (preceded by ASKING when `asking`) and reads its reply
 * into *r (the caller frees it). @returns 1, or 0 when the connection failed. */
static int exec_send(redisContext *rc, int asking, int argc, const char **argv, const size_t *lens,
                     redisReply **r)
{
    if (!asking) {
        *r = redisCommandArgv(rc, argc, argv, lens);
        return *r != NULL;
    }
    int ok = redisAppendCommand(rc, "ASKING") == REDIS_OK &&
             redisAppendCommandArgv(rc, argc, argv, lens) == REDIS_OK;
    void *ar = NULL;
    ok = ok && redisGetReply(rc, &ar) == REDIS_OK;
    if (ar)
        freeReplyObject(ar);
    return ok && redisGetReply(rc, (void **)r) == REDIS_OK;
}

/* Acts on a reply from node `ni`: follows MOVED and ASK, waits out TRYAGAIN and
 * CLUSTERDOWN, loads a missing script. @returns 1 to send again (r freed), or 0 with
 * *out the answer: r itself, or NULL on an error (set). */
static int exec_on_reply(rcl_ctx *c, exec_state *s, int ni, redisContext *rc, redisReply *r,
                         redisReply **out)
{
    int rslot;
    rcl_addr to;
    *out = r;
    switch (rcl_classify(r, &rslot, &to)) {
    case RCL_R_MOVED:
        if (s->redirects++ >= RCL_RETRIES + 8)
            return 0;
        freeReplyObject(r);
        on_moved(c, rslot, &to);
        s->ask = -1;
        return 1;
    case RCL_R_ASK:
        if (s->asked)
            return 0;
        freeReplyObject(r);
        s->asked = 1;
        s->ask = node_find_add(c, to.host, to.port);
        if (s->ask < 0) {
            set_err(c, "out of memory", NULL);
            *out = NULL;
            return 0;
        }
        return 1;
    case RCL_R_TRYAGAIN:
    case RCL_R_CLUSTERDOWN:
        if (s->waits >= RCL_RETRIES)
            return 0;
        freeReplyObject(r);
        sleep_ms(rcl_backoff_ms(s->waits++));
        if (s->ask < 0)
            refresh_map(c);
        return 1;
    case RCL_R_NOSCRIPT:
        if (!s->body || s->loaded)
            return 0;
        freeReplyObject(r);
        s->loaded = 1;
        redisReply *lr = script_load(c, rc, s->body); /* on the node that lacks it */
        if (!lr) {
            set_err(c, "SCRIPT LOAD", rc->errstr);
            node_drop(c, ni);
            *out = NULL;
            return 0;
        }
        freeReplyObject(lr);
        return 1; /* an ASK target is asked again (ask is kept) */
    default:
        return 0;
    }
}

/* Cluster: route, send, follow MOVED/ASK, load scripts, retry with backoff. */
static redisReply *exec_cmd(rcl_ctx *c, int argc, const char **argv, const size_t *lens, int slot)
{
    if (!c->url.cluster)
        return exec_one(c, argc, argv, lens);
    exec_state s = {.body = rcl_scripts_body_for(&c->scripts, argc, argv, lens), .ask = -1};
    for (;;) {
        int ni = s.ask >= 0 ? s.ask : route(c, slot);
        redisContext *rc = NULL;
        if (ni < 0)
            set_err(c, "CLUSTERDOWN", "no node serves this slot");
        else
            rc = node_conn(c, ni);
        if (!rc) {
            /* Refused or unknown: after a failover the replica serves the slot. */
            if (exec_backoff(c, &s) != 0)
                return NULL;
            continue;
        }
        redisReply *r = NULL;
        int ok = exec_send(rc, s.ask >= 0, argc, argv, lens, &r);
        int en = errno;
        if (!ok) {
            set_err(c, "redis", rc->errstr);
            int lost = conn_lost(rc, en);
            node_drop(c, ni);
            if (r)
                freeReplyObject(r);
            if (!lost || exec_backoff(c, &s) != 0)
                return NULL;
            continue;
        }
        redisReply *out;
        if (!exec_on_reply(c, &s, ni, rc, r, &out))
            return out;
    }
}

/* ---- public ---- */

rcl_ctx *rcl_connect(const char *url, struct timeval timeout, char *err, size_t errsz)
{
    rcl_ctx *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errsz, "out of memory");
        return NULL;
    }
    c->tv = timeout;
    for (int i = 0; i < RCL_SLOTS; i++)
        c->map.owner[i] = -1;
    if (rcl_url_parse(url ? url : "", &c->url, err, errsz) != 0) {
        free(c);
        return NULL;
    }
    if (!c->url.cluster) {
        c->one = sk_redis_url_connect(&c->url.plain, timeout, err, errsz);
        if (!c->one) {
            free(c);
            return NULL;
        }
        return c;
    }
    for (int i = 0; i < c->url.nseeds; i++)
        if (node_find_add(c, c->url.seeds[i].host, c->url.seeds[i].port) < 0) {
            snprintf(err, errsz, "out of memory");
            rcl_free(c);
            return NULL;
        }
    if (refresh_map(c) != 0) {
        snprintf(err, errsz, "cluster: no seed answered CLUSTER SLOTS (%s)", c->err);
        rcl_free(c);
        return NULL;
    }
    return c;
}

static void pend_clear(rcl_ctx *c)
{
    for (int i = c->next; i < c->nq; i++)
        if (c->q[i].reply)
            freeReplyObject(c->q[i].reply);
    for (int i = 0; i < c->nq; i++)
        free(c->q[i].mem);
    c->nq = c->nsent = c->next = 0;
}

void rcl_free(rcl_ctx *c)
{
    if (!c)
        return;
    pend_clear(c);
    free(c->q);
    if (c->one)
        redisFree(c->one);
    for (int i = 0; i < c->nnodes; i++)
        node_drop(c, i);
    free(c->nodes);
    free(c->map.masters);
    free(c->master_node);
    rcl_scripts_free(&c->scripts);
    free(c);
}

int rcl_is_cluster(const rcl_ctx *c) { return c->url.cluster; }

const char *rcl_errstr(const rcl_ctx *c) { return c->err; }

redisReply *rcl_command_argv(rcl_ctx *c, int argc, const char **argv, const size_t *lens)
{
    c->err[0] = '\0';
    if (c->next < c->nq) {
        set_err(c, "rcl_command_argv", "replies of a pipeline are still pending");
        return NULL;
    }
    int slot = -1;
    if (c->url.cluster) {
        slot = rcl_command_slot(argc, argv, lens, c->err, sizeof(c->err));
        if (slot < -1)
            return NULL;
    }
    return exec_cmd(c, argc, argv, lens, slot);
}

int rcl_append_argv(rcl_ctx *c, int argc, const char **argv, const size_t *lens)
{
    int slot = -1;
    if (c->url.cluster) {
        slot = rcl_command_slot(argc, argv, lens, c->err, sizeof(c->err));
        if (slot < -1)
            return -1;
        if (slot == -1 && c->nq > c->nsent)
            slot = c->q[c->nq - 1].slot; /* WAIT goes where the writes before it went */
    }
    if (c->nq == c->capq) {
        int cap = c->capq ? c->capq * 2 : 16;
        pend *p = realloc(c->q, (size_t)cap * sizeof(*p));
        if (!p) {
            set_err(c, "out of memory", NULL);
            return -1;
        }
        c->q = p;
        c->capq = cap;
    }
    pend *p = &c->q[c->nq];
    memset(p, 0, sizeof(*p));
    p->mem = rcl_argv_copy(argc, argv, lens, &p->argv, &p->lens);
    if (!p->mem) {
        set_err(c, "out of memory", NULL);
        return -1;
    }
    p->argc = argc;
    p->slot = slot;
    p->node = -1;
    p->moved_slot = -1;
    c->nq++;
    return 0;
}

/* The single server's connection for a batch, reopened when broken; when it cannot be
 * had, `p` fails now (refused or timed out: final for a single server, no second
 * wait). @returns the connection or NULL. */
static redisContext *batch_conn_one(rcl_ctx *c, pend *p)
{
    if (c->one && c->one->err) {
        redisFree(c->one);
        c->one = NULL;
    }
    if (!c->one) {
        c->one = sk_redis_url_connect(&c->url.plain, c->tv, c->err, sizeof(c->err));
        c->one_used = 0;
    }
    p->node = 0;
    if (!c->one) {
        snprintf(p->err, sizeof(p->err), "%s", c->err);
        p->node = -1;
        p->failed = 1;
    }
    return c->one;
}

/* Appends q[from..nq) to their nodes' output buffers (sent at the first read); what
 * cannot be appended is marked to be re-run. */
static void batch_send(rcl_ctx *c, int from)
{
    for (int i = from; i < c->nq; i++) {
        pend *p = &c->q[i];
        redisContext *rc;
        if (c->url.cluster) {
            p->node = route(c, p->slot);
            rc = p->node >= 0 ? node_conn(c, p->node) : NULL;
        } else if (!(rc = batch_conn_one(c, p))) {
            continue;
        }
        if (!rc || redisAppendCommandArgv(rc, p->argc, p->argv, p->lens) != REDIS_OK) {
            p->node = -1;
            p->redo = 1;
        }
    }
}

/* Reads the reply of sent command `p`; a redirection, a NOSCRIPT or a lost connection
 * marks it to be re-run, a timeout fails it. */
static void batch_read_one(rcl_ctx *c, pend *p)
{
    redisContext *rc = c->url.cluster ? c->nodes[p->node].c : c->one;
    void *r = NULL;
    int *broke = c->url.cluster ? &c->nodes[p->node].broke : &c->one_broke;
    if (!rc || rc->err || redisGetReply(rc, &r) != REDIS_OK) {
        /* A timeout is final; a lost connection is retried (on a single server
         * only if it had answered before: a restarted server, not a dead one).
         * Later commands of the batch on that connection share the first verdict. */
        if (!*broke)
            *broke = rc && conn_lost(rc, errno) ? 1 : 2;
        int lost = *broke == 1 && (c->url.cluster || c->one_used);
        snprintf(p->err, sizeof(p->err), "redis: %.120s", rc ? rc->errstr : "connection lost");
        p->redo = lost;
        p->failed = !lost;
        return;
    }
    if (!c->url.cluster)
        c->one_used = 1;
    p->reply = r;
    if (c->url.plain.is_sentinel && sk_redis_reply_is_readonly(p->reply)) {
        /* Demoted under us: re-run (nothing ran) once the batch is read, on the master
         * the sentinels name then. */
        c->one_readonly = 1;
        freeReplyObject(p->reply);
        p->reply = NULL;
        p->redo = 1;
        return;
    }
    int slot;
    rcl_addr to;
    int k = rcl_classify(p->reply, &slot, &to);
    if (k == RCL_R_NOSCRIPT && !rcl_scripts_body_for(&c->scripts, p->argc, p->argv, p->lens))
        k = RCL_R_NONE;
    if (k != RCL_R_NONE && (c->url.cluster || k == RCL_R_NOSCRIPT)) {
        /* Not now: a map refresh would use connections whose replies are unread. */
        if (k == RCL_R_MOVED)
            p->moved_slot = slot, p->moved_to = to;
        freeReplyObject(p->reply);
        p->reply = NULL;
        p->redo = 1;
    }
}

/* Once every reply of the batch is read: drops the connections whose batch broke
 * (replies may be left on them), applies the MOVED answers, and re-runs through
 * exec_cmd what was redirected, lost or NOSCRIPT. */
static void batch_redo(rcl_ctx *c, int from)
{
    if (c->one_readonly && c->one) {
        redisFree(c->one);
        c->one = NULL;
    }
    c->one_readonly = 0;
    if (c->url.cluster) {
        for (int i = 0; i < c->nnodes; i++)
            if (c->nodes[i].c && c->nodes[i].c->err)
                node_drop(c, i);
    }
    for (int i = from; i < c->nq; i++)
        if (c->q[i].moved_slot >= 0)
            on_moved(c, c->q[i].moved_slot, &c->q[i].moved_to);
    for (int i = from; i < c->nq; i++) {
        pend *p = &c->q[i];
        if (!p->redo)
            continue;
        p->reply = exec_cmd(c, p->argc, p->argv, p->lens, p->slot);
        if (!p->reply) {
            p->failed = 1;
            snprintf(p->err, sizeof(p->err), "%s", c->err);
        }
    }
}

/* Sends q[nsent..nq) (each node's share in one write, at the read), reads every reply,
 * then re-runs what was redirected, lost, or NOSCRIPT through exec_cmd. */
static void flush_batch(rcl_ctx *c)
{
    int from = c->nsent;
    c->nsent = c->nq;
    c->one_broke = 0;
    for (int i = 0; i < c->nnodes; i++)
        c->nodes[i].broke = 0;
    batch_send(c, from);
    for (int i = from; i < c->nq; i++)
        if (c->q[i].node >= 0)
            batch_read_one(c, &c->q[i]);
    batch_redo(c, from);
}

int rcl_get_reply(rcl_ctx *c, redisReply **reply)
{
    *reply = NULL;
    if (c->next == c->nq) {
        set_err(c, "rcl_get_reply", "no command pending");
        return -1;
    }
    if (c->next == c->nsent)
        flush_batch(c);
    pend *p = &c->q[c->next++];
    int rc = 0;
    if (p->reply) {
        *reply = p->reply;
        p->reply = NULL;
    } else {
        set_err(c, p->err[0] ? p->err : "redis: no reply", NULL);
        rc = -1;
    }
    if (c->next == c->nq)
        pend_clear(c);
    return rc;
}

int rcl_script_add(rcl_ctx *c, const char *body, char sha[41])
{
    if (rcl_scripts_add(&c->scripts, body, sha) != 0) {
        set_err(c, "out of memory", NULL);
        return -1;
    }
    return 0;
}

int rcl_master_count(rcl_ctx *c) { return c->url.cluster ? c->map.nmasters : 1; }

redisReply *rcl_command_on_master(rcl_ctx *c, int i, int argc, const char **argv,
                                  const size_t *lens)
{
    c->err[0] = '\0';
    if (!c->url.cluster)
        return i == 0 ? exec_one(c, argc, argv, lens) : NULL;
    if (i < 0 || i >= c->map.nmasters) {
        set_err(c, "rcl_command_on_master", "no such master");
        return NULL;
    }
    int ni = c->master_node[i];
    redisContext *rc = node_conn(c, ni);
    if (!rc)
        return NULL;
    redisReply *r = redisCommandArgv(rc, argc, argv, lens);
    if (!r) {
        set_err(c, "redis", rc->errstr);
        node_drop(c, ni);
    }
    return r;
}

int rcl_command_all_masters(rcl_ctx *c, int argc, const char **argv, const size_t *lens)
{
    int n = rcl_master_count(c), rc = 0;
    char first[RCL_ERR_SIZE] = "";
    for (int i = 0; i < n; i++) {
        redisReply *r = rcl_command_on_master(c, i, argc, argv, lens);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            if (!first[0])
                snprintf(first, sizeof(first), "%.20s %.60s: %.160s", argv[0], rcl_master_addr(c, i),
                         r ? r->str : c->err);
            rc = -1;
        }
        if (r)
            freeReplyObject(r);
    }
    if (rc)
        set_err(c, first, NULL);
    return rc;
}

const char *rcl_master_addr(rcl_ctx *c, int i)
{
    if (!c->url.cluster) {
        if (i != 0)
            return NULL;
        const sk_redis_url *u = &c->url.plain;
        if (u->is_sentinel && c->one && c->one->tcp.host) /* the master found at connect */
            snprintf(c->addr_buf, sizeof(c->addr_buf), "%s:%d", c->one->tcp.host, c->one->tcp.port);
        else if (u->is_sentinel)
            snprintf(c->addr_buf, sizeof(c->addr_buf), "%s (not connected)", u->master_name);
        else if (u->is_unix)
            snprintf(c->addr_buf, sizeof(c->addr_buf), "%s", u->host);
        else
            snprintf(c->addr_buf, sizeof(c->addr_buf), "%s:%d", u->host, u->port);
        return c->addr_buf;
    }
    if (i < 0 || i >= c->map.nmasters)
        return NULL;
    snprintf(c->addr_buf, sizeof(c->addr_buf), "%s:%d", c->map.masters[i].host,
             c->map.masters[i].port);
    return c->addr_buf;
}

redisContext *rcl_connect_node(rcl_ctx *c, const char *key, size_t keylen, char *err,
                               size_t errsz)
{
    if (!c->url.cluster)
        return sk_redis_url_connect(&c->url.plain, c->tv, err, errsz);
    int ni = route(c, key ? rcl_keyslot(key, keylen) : -1);
    if (ni < 0) {
        snprintf(err, errsz, "cluster: no node serves this slot");
        return NULL;
    }
    return rcl_node_connect(&c->url, c->nodes[ni].a.host, c->nodes[ni].a.port, c->tv, err, errsz);
}
