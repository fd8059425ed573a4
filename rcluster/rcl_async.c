/* rcl_async: the libevent API (see rcluster.h).
 *
 * Design note: like rcl_sync, a node table (stable indices, never shrinks) with one
 * hiredis async connection each, opened on first use; AUTH (and SELECT when pass-through)
 * are queued first on every new connection, so commands may be queued at once. Every
 * accepted command is an `acmd` that owns a copy of its arguments and lives on the
 * context's list until its callback has run exactly once. Retries are never sent from
 * inside a NULL-reply callback (the connection is being freed then): they go through a
 * per-command event timer. A connection that is closed because it timed out fails its
 * commands (NULL); one lost otherwise is retried after a map refresh (cluster mode).
 * Replies are hiredis's: freed by hiredis after our callback, hence the caller's too. */
#include "rcl_int.h"

#include <event2/event.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WATCH_MS 50
#define RECONNECT_MS 200

typedef struct anode {
    rcl_addr a;
    redisAsyncContext *ac; /* NULL until used, or after it closed */
    int connected;
    int timing_out;       /* set while we close it for a timeout */
    long outstanding;     /* our commands (and CLUSTER SLOTS) awaiting a reply */
    int64_t since_ms;     /* connect start, then last progress */
} anode;

typedef struct acmd {
    rcl_async *owner;
    rcl_async_cb *cb;
    void *priv;
    char *resp; /* the command in RESP (rcl_resp_format), sent again on a retry */
    size_t resplen;
    const char *body; /* registered script of an EVALSHA, else NULL */
    int slot;
    int node;  /* where it is in flight */
    int ask;   /* ASK target node, -1 none */
    int asked, loaded, waits, redirects;
    struct event *timer;
    struct acmd *prev, *next;
} acmd;

struct rcl_async {
    struct event_base *base;
    rcl_url url;
    struct timeval tv;
    int64_t tv_ms;
    char err[RCL_ERR_SIZE];
    unsigned long errors;
    rcl_scripts scripts;
    rcl_async_state_cb *state_cb;
    void *state_priv;
    int ready;
    int freeing;
    anode *nodes;
    int nnodes, capnodes;
    rcl_slotmap map;
    int *master_node;
    int refreshing, refresh_node, refresh_next, refresh_fails;
    int64_t last_refresh_ms;
    struct event *watch_ev, *refresh_ev, *reconnect_ev;
    struct event *write_ev; /* active while commands wait to be written (on_write_ev) */
    acmd *cmds; /* every live command */
    rcl_swatch *swatch; /* sentinel URL: +switch-master moves node 0 (rcl_swatch.c) */
};

static void on_reply(redisAsyncContext *hac, void *reply, void *priv);

static void arm(struct event *ev, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_add(ev, &tv);
}
static void request_refresh(rcl_async *a, int force);

static void set_ready(rcl_async *a, int ready)
{
    if (a->ready == ready || a->freeing)
        return;
    a->ready = ready;
    if (a->state_cb)
        a->state_cb(a, ready, a->state_priv);
}

/* ---- nodes ---- */

static int node_find_add(rcl_async *a, const char *host, int port)
{
    for (int i = 0; i < a->nnodes; i++)
        if (a->nodes[i].a.port == port && strcmp(a->nodes[i].a.host, host) == 0)
            return i;
    if (a->nnodes == a->capnodes) {
        int cap = a->capnodes ? a->capnodes * 2 : 16;
        anode *p = realloc(a->nodes, (size_t)cap * sizeof(*p));
        if (!p)
            return -1;
        a->nodes = p;
        a->capnodes = cap;
    }
    anode *n = &a->nodes[a->nnodes];
    memset(n, 0, sizeof(*n));
    snprintf(n->a.host, sizeof(n->a.host), "%s", host);
    n->a.port = port;
    return a->nnodes++;
}

static int node_of(rcl_async *a, const redisAsyncContext *hac)
{
    for (int i = 0; i < a->nnodes; i++)
        if (a->nodes[i].ac == hac)
            return i;
    return -1;
}

static void on_connect(const redisAsyncContext *hac, int status)
{
    rcl_async *a = hac->data;
    int i = node_of(a, hac);
    if (i < 0)
        return;
    if (status != REDIS_OK) {
        /* hiredis frees it after this; its commands get NULL replies (retried). */
        snprintf(a->err, sizeof(a->err), "connect %.64s:%d: %.120s", a->nodes[i].a.host,
                 a->nodes[i].a.port, hac->errstr);
        a->nodes[i].ac = NULL;
        a->nodes[i].connected = 0;
        if (!a->url.cluster) {
            set_ready(a, 0);
            arm(a->reconnect_ev, RECONNECT_MS);
        }
        return;
    }
    a->nodes[i].connected = 1;
    a->nodes[i].since_ms = rcl_now_ms();
    /* Pass-through: ready only once the handshake's PING answers (on_handshake), not on
     * the TCP connect, or a wrong password would look ready until AUTH's error came back. */
}

static void on_disconnect(const redisAsyncContext *hac, int status)
{
    rcl_async *a = hac->data;
    int i = node_of(a, hac);
    if (i < 0)
        return; /* we closed it ourselves */
    a->nodes[i].ac = NULL;
    a->nodes[i].connected = 0;
    if (!a->url.cluster) {
        set_ready(a, 0);
        arm(a->reconnect_ev, RECONNECT_MS);
    } else {
        request_refresh(a, 1); /* a failover may have made a replica master */
    }
}

static void on_auth(redisAsyncContext *hac, void *reply, void *priv)
{
    redisReply *r = reply;
    rcl_async *a = hac->data;
    if (r && r->type == REDIS_REPLY_ERROR) {
        /* The reply never echoes the password. */
        snprintf(a->err, sizeof(a->err), "AUTH/SELECT: %s", r->str);
        redisAsyncDisconnect(hac);
    }
}

/* The PING queued after AUTH and SELECT on a pass-through connection: its answer means
 * the handshake went through (a failed AUTH disconnects before it, see on_auth). An
 * error answer (LOADING while Redis reads its AOF or RDB at start) closes the
 * connection, so that the reconnect timer tries the handshake again until Redis
 * answers PONG: left open, the connection would never become ready. */
static void on_handshake(redisAsyncContext *hac, void *reply, void *priv)
{
    redisReply *r = reply;
    rcl_async *a = hac->data;
    (void)priv;
    if (!r || node_of(a, hac) < 0)
        return; /* torn down: on_disconnect has it */
    /* Sentinel URL: ROLE instead of PING; a replica (a sentinel that named a master
     * since demoted) is closed and the sentinels asked again on the reconnect. */
    if (r->type != REDIS_REPLY_ERROR && (!a->url.plain.is_sentinel || sk_redis_role_is_master(r))) {
        set_ready(a, 1);
        return;
    }
    snprintf(a->err, sizeof(a->err), "handshake: %.200s",
             r->type == REDIS_REPLY_ERROR ? r->str : "the sentinels' master is not a master");
    redisAsyncDisconnect(hac);
}

/* The node's connection, opened (AUTH, SELECT queued) when needed; NULL on failure. */
static redisAsyncContext *node_ac(rcl_async *a, int i)
{
    anode *n = &a->nodes[i];
    if (n->ac)
        return n->ac;
    const sk_redis_url *u = &a->url.plain;
    if (!a->url.cluster && u->is_sentinel) {
        /* The master now, asked of the sentinels at every (re)connect: blocking, each
         * sentinel within the timeout, on the loop's thread (rcluster.h). */
        char e[RCL_ERR_SIZE];
        if (sk_redis_sentinel_master(u, a->tv, n->a.host, sizeof(n->a.host), &n->a.port, e,
                                     sizeof(e)) != 0) {
            snprintf(a->err, sizeof(a->err), "%s", e);
            return NULL;
        }
    }
    redisAsyncContext *hac = !a->url.cluster && u->is_unix ? redisAsyncConnectUnix(u->host)
                                                           : redisAsyncConnect(n->a.host, n->a.port);
    if (!hac || hac->err) {
        snprintf(a->err, sizeof(a->err), "connect %.64s:%d: %.120s", n->a.host, n->a.port,
                 hac ? hac->errstr : "out of memory");
        if (hac)
            redisAsyncFree(hac);
        return NULL;
    }
    hac->data = a;
    redisLibeventAttach(hac, a->base);
    redisAsyncSetConnectCallback(hac, on_connect);
    redisAsyncSetDisconnectCallback(hac, on_disconnect);
    n->ac = hac;
    n->connected = 0;
    n->since_ms = rcl_now_ms();
    if (u->pass[0]) {
        const char *v[3] = {"AUTH", u->user[0] ? u->user : u->pass, u->pass};
        redisAsyncCommandArgv(hac, on_auth, NULL, u->user[0] ? 3 : 2, v, NULL);
    }
    if (!a->url.cluster && u->db) {
        char db[16];
        snprintf(db, sizeof(db), "%d", u->db);
        const char *v[2] = {"SELECT", db};
        redisAsyncCommandArgv(hac, on_auth, NULL, 2, v, NULL);
    }
    if (!a->url.cluster)
        redisAsyncCommand(hac, on_handshake, NULL, u->is_sentinel ? "ROLE" : "PING");
    return hac;
}

/* Closes node i because it timed out: its commands end with NULL, not retried. */
static void node_drop_timeout(rcl_async *a, int i)
{
    redisAsyncContext *hac = a->nodes[i].ac;
    snprintf(a->err, sizeof(a->err), "timeout: %.64s:%d did not answer", a->nodes[i].a.host,
             a->nodes[i].a.port);
    a->nodes[i].ac = NULL;
    a->nodes[i].connected = 0;
    a->nodes[i].timing_out = 1;
    redisAsyncFree(hac);
    a->nodes[i].timing_out = 0;
    a->nodes[i].outstanding = 0;
    if (!a->url.cluster) {
        set_ready(a, 0);
        arm(a->reconnect_ev, RECONNECT_MS);
    }
}

static void on_watch(evutil_socket_t fd, short what, void *arg)
{
    rcl_async *a = arg;
    int64_t now = rcl_now_ms();
    for (int i = 0; i < a->nnodes; i++) {
        anode *n = &a->nodes[i];
        if (n->ac && (!n->connected || n->outstanding > 0) && now - n->since_ms > a->tv_ms)
            node_drop_timeout(a, i);
    }
}

/* The sentinels announced a failover: leave the old master now (its answers, if it
 * still gives any, are read first), and the reconnect asks the sentinels. */
static void on_switch_master(void *arg, const char *host, int port)
{
    rcl_async *a = arg;
    anode *n = &a->nodes[0];
    if (!n->ac || (n->a.port == port && strcmp(n->a.host, host) == 0) ||
        (n->ac->c.flags & REDIS_DISCONNECTING))
        return;
    snprintf(a->err, sizeof(a->err), "the sentinels moved the master to %.64s:%d", host, port);
    redisAsyncDisconnect(n->ac);
}

static void on_reconnect(evutil_socket_t fd, short what, void *arg)
{
    rcl_async *a = arg;
    if (!node_ac(a, 0))
        arm(a->reconnect_ev, RECONNECT_MS);
}

/* ---- the slot map ---- */

static void on_slots(redisAsyncContext *hac, void *reply, void *priv)
{
    rcl_async *a = priv;
    if (a->freeing)
        return;
    int ni = a->refresh_node;
    a->refreshing = 0;
    if (ni >= 0 && ni < a->nnodes && a->nodes[ni].outstanding > 0) {
        a->nodes[ni].outstanding--;
        a->nodes[ni].since_ms = rcl_now_ms();
    }
    rcl_slotmap m = {0};
    char e[RCL_ERR_SIZE];
    int ok = reply && rcl_slotmap_parse(reply, a->nodes[ni].a.host, &m, e, sizeof(e)) == 0;
    int *mn = ok ? malloc((size_t)m.nmasters * sizeof(int)) : NULL;
    for (int x = 0; mn && x < m.nmasters; x++)
        if ((mn[x] = node_find_add(a, m.masters[x].host, m.masters[x].port)) < 0) {
            free(mn);
            mn = NULL;
        }
    if (!mn) {
        if (ok)
            rcl_slotmap_clear(&m);
        else
            snprintf(a->err, sizeof(a->err), "CLUSTER SLOTS from %.64s:%d: %.120s", a->nodes[ni].a.host,
                     a->nodes[ni].a.port, reply ? e : "no answer");
        /* Try the next node; when a whole round failed, nothing is reachable. */
        if (++a->refresh_fails >= a->nnodes)
            set_ready(a, 0);
        arm(a->refresh_ev, (a->refresh_fails >= a->nnodes ? RECONNECT_MS : 10));
        return;
    }
    rcl_slotmap_clear(&a->map);
    a->map = m;
    free(a->master_node);
    a->master_node = mn;
    a->refresh_fails = 0;
    set_ready(a, 1);
}

static void send_refresh(rcl_async *a)
{
    if (a->refreshing || a->freeing || a->nnodes == 0)
        return;
    /* Masters of the current map first, then every node in turn. */
    int ni = a->refresh_fails < a->map.nmasters ? a->master_node[a->refresh_fails]
                                                : a->refresh_next++ % a->nnodes;
    a->last_refresh_ms = rcl_now_ms();
    redisAsyncContext *hac = node_ac(a, ni);
    if (!hac || redisAsyncCommand(hac, on_slots, a, "CLUSTER SLOTS") != REDIS_OK) {
        if (++a->refresh_fails >= a->nnodes)
            set_ready(a, 0);
        arm(a->refresh_ev, RECONNECT_MS);
        return;
    }
    a->refreshing = 1;
    a->refresh_node = ni;
    if (a->nodes[ni].outstanding++ == 0)
        a->nodes[ni].since_ms = rcl_now_ms();
}

static void on_refresh_timer(evutil_socket_t fd, short what, void *arg) { send_refresh(arg); }

/* The commands of one loop turn, written: hiredis only queues them, and its write event,
 * added with the first, fires in the next dispatch and is removed after the write, one
 * epoll_ctl each way for every turn with commands. write_ev is made active by the first
 * command of a turn instead, so it runs after the callbacks already active (timers
 * that expired in this turn's dispatch, such as order_gate's end of turn, among them)
 * and writes what they queued: the commands of the turn leave in one write per node,
 * in the turn itself, and hiredis's write event is added and removed within the turn,
 * which libevent's epoll changelist folds into no system call. Not from inside a
 * command callback: a failed write closes the connection and runs its callbacks. */
static void on_write_ev(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rcl_async *a = arg;
    for (int i = 0; i < a->nnodes; i++) {
        redisAsyncContext *hac = a->nodes[i].ac; /* a write error frees it (on_disconnect) */
        if (hac && a->nodes[i].connected && sdslen(hac->c.obuf) > 0)
            redisAsyncHandleWrite(hac);
    }
}

static void request_refresh(rcl_async *a, int force)
{
    if (!a->url.cluster || a->refreshing || a->freeing)
        return;
    if (!force && rcl_now_ms() - a->last_refresh_ms < RCL_REFRESH_MIN_MS)
        return;
    arm(a->refresh_ev, 0);
}

static int route(rcl_async *a, int slot)
{
    if (!a->url.cluster)
        return 0;
    if (slot >= 0) {
        int m = a->map.owner[slot];
        return m >= 0 ? a->master_node[m] : -1;
    }
    for (int i = 0; i < a->map.nmasters; i++)
        if (a->nodes[a->master_node[i]].connected)
            return a->master_node[i];
    return a->map.nmasters ? a->master_node[0] : -1;
}

static void on_moved(rcl_async *a, int slot, const rcl_addr *to)
{
    int ni = node_find_add(a, to->host, to->port);
    if (ni < 0)
        return;
    if (rcl_slotmap_move(&a->map, &a->master_node, slot, to, ni) != 0)
        return;
    request_refresh(a, 0);
}

/* ---- commands ---- */

static void cmd_free(acmd *c)
{
    rcl_async *a = c->owner;
    if (c->prev)
        c->prev->next = c->next;
    else
        a->cmds = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (c->timer)
        event_free(c->timer);
    free(c->resp);
    free(c);
}

static void finish(acmd *c, redisReply *r)
{
    rcl_async *a = c->owner;
    if (!r || r->type == REDIS_REPLY_ERROR)
        a->errors++;
    if (c->cb)
        c->cb(a, r, c->priv);
    cmd_free(c);
}

/* Sends c to node ni (ASKING first when asked; SCRIPT LOAD first when `load`). */
static int send_to(acmd *c, int ni, int load)
{
    rcl_async *a = c->owner;
    if (ni < 0) {
        snprintf(a->err, sizeof(a->err), "CLUSTERDOWN: no node serves slot %d", c->slot);
        return -1;
    }
    redisAsyncContext *hac = node_ac(a, ni);
    if (!hac)
        return -1;
    if (load) {
        const char *v[3] = {"SCRIPT", "LOAD", c->body};
        redisAsyncCommandArgv(hac, NULL, NULL, 3, v, NULL);
    }
    if (c->ask >= 0)
        redisAsyncCommand(hac, NULL, NULL, "ASKING");
    if (redisAsyncFormattedCommand(hac, on_reply, c, c->resp, c->resplen) != REDIS_OK)
        return -1;
    if (!event_pending(a->write_ev, EV_TIMEOUT, NULL)) /* pending: active, not yet run */
        event_active(a->write_ev, EV_TIMEOUT, 0);
    c->node = ni;
    if (a->nodes[ni].outstanding++ == 0 && a->nodes[ni].connected)
        a->nodes[ni].since_ms = rcl_now_ms();
    return 0;
}

static int send_routed(acmd *c)
{
    return send_to(c, c->ask >= 0 ? c->ask : route(c->owner, c->slot), 0);
}

static void retry_later(acmd *c, int refresh);

static void on_retry_timer(evutil_socket_t fd, short what, void *arg)
{
    acmd *c = arg;
    if (send_routed(c) != 0)
        retry_later(c, 1);
}

/* Waits (backoff) then sends again; NULL to the caller when the retries are spent. */
static void retry_later(acmd *c, int refresh)
{
    rcl_async *a = c->owner;
    if (c->waits >= RCL_RETRIES || a->freeing) {
        finish(c, NULL);
        return;
    }
    if (!c->timer)
        c->timer = evtimer_new(a->base, on_retry_timer, c);
    if (!c->timer) {
        finish(c, NULL);
        return;
    }
    int ms = rcl_backoff_ms(c->waits++);
    if (refresh) {
        c->ask = -1;
        request_refresh(a, 1);
    }
    arm(c->timer, ms);
}

static void on_reply(redisAsyncContext *hac, void *reply, void *priv)
{
    acmd *c = priv;
    rcl_async *a = c->owner;
    redisReply *r = reply;
    anode *n = &a->nodes[c->node];
    if (n->outstanding > 0)
        n->outstanding--;
    n->since_ms = rcl_now_ms();
    if (!r) {
        /* Closed: by us for a timeout or at free (final), or lost (retried in a cluster). */
        if (a->freeing || n->timing_out || !a->url.cluster)
            finish(c, NULL);
        else
            retry_later(c, 1);
        return;
    }
    if (a->url.plain.is_sentinel && sk_redis_reply_is_readonly(r) && n->ac == hac &&
        !(hac->c.flags & REDIS_DISCONNECTING)) {
        /* Demoted under us: the reconnect asks the sentinels (node_ac). The command did
         * not run; its caller gets the error. */
        snprintf(a->err, sizeof(a->err), "%.64s:%d is a replica now", n->a.host, n->a.port);
        redisAsyncDisconnect(hac);
    }
    int slot;
    rcl_addr to;
    int k = rcl_classify(r, &slot, &to);
    if (!a->url.cluster && k != RCL_R_NOSCRIPT)
        k = RCL_R_NONE;
    switch (k) {
    case RCL_R_MOVED:
        if (c->redirects++ >= RCL_RETRIES + 8)
            break;
        on_moved(a, slot, &to);
        c->ask = -1;
        if (send_routed(c) != 0)
            retry_later(c, 1);
        return;
    case RCL_R_ASK:
        if (c->asked)
            break;
        c->asked = 1;
        c->ask = node_find_add(a, to.host, to.port);
        if (c->ask < 0 || send_routed(c) != 0)
            retry_later(c, 1);
        return;
    case RCL_R_TRYAGAIN:
    case RCL_R_CLUSTERDOWN:
        if (c->waits >= RCL_RETRIES)
            break;
        retry_later(c, k == RCL_R_CLUSTERDOWN && c->ask < 0);
        return;
    case RCL_R_NOSCRIPT:
        if (!c->body || c->loaded)
            break;
        c->loaded = 1;
        /* On the node that lacks it, in one pipeline with the retry. */
        if (send_to(c, c->node, 1) != 0)
            retry_later(c, 1);
        return;
    default:
        break;
    }
    finish(c, r);
}

/* ---- public ---- */

rcl_async *rcl_async_connect(const char *url, struct event_base *base, struct timeval timeout,
                             char *err, size_t errsz)
{
    rcl_async *a = calloc(1, sizeof(*a));
    if (!a) {
        snprintf(err, errsz, "out of memory");
        return NULL;
    }
    a->base = base;
    a->tv = timeout;
    a->tv_ms = (int64_t)timeout.tv_sec * 1000 + timeout.tv_usec / 1000;
    if (a->tv_ms <= 0)
        a->tv_ms = 1000;
    for (int i = 0; i < RCL_SLOTS; i++)
        a->map.owner[i] = -1;
    if (rcl_url_parse(url ? url : "", &a->url, err, errsz) != 0) {
        free(a);
        return NULL;
    }
    a->watch_ev = event_new(base, -1, EV_PERSIST, on_watch, a);
    a->refresh_ev = evtimer_new(base, on_refresh_timer, a);
    a->reconnect_ev = evtimer_new(base, on_reconnect, a);
    a->write_ev = event_new(base, -1, 0, on_write_ev, a);
    int ok = a->watch_ev && a->refresh_ev && a->reconnect_ev && a->write_ev;
    if (ok && !a->url.cluster) {
        const sk_redis_url *u = &a->url.plain;
        ok = node_find_add(a, u->is_unix ? u->host : u->host, u->is_unix ? 0 : u->port) == 0;
    }
    if (ok && a->url.plain.is_sentinel)
        ok = (a->swatch = rcl_swatch_new(base, &a->url.plain, timeout, on_switch_master, a)) != NULL;
    for (int i = 0; ok && a->url.cluster && i < a->url.nseeds; i++)
        ok = node_find_add(a, a->url.seeds[i].host, a->url.seeds[i].port) >= 0;
    if (!ok) {
        snprintf(err, errsz, "out of memory");
        rcl_async_free(a);
        return NULL;
    }
    arm(a->watch_ev, WATCH_MS);
    if (a->url.cluster)
        send_refresh(a);
    else if (!node_ac(a, 0))
        arm(a->reconnect_ev, RECONNECT_MS);
    return a;
}

void rcl_async_set_state_cb(rcl_async *a, rcl_async_state_cb *cb, void *privdata)
{
    a->state_cb = cb;
    a->state_priv = privdata;
}

int rcl_async_ready(const rcl_async *a) { return a->ready; }

int rcl_async_command_argv(rcl_async *a, rcl_async_cb *cb, void *privdata, int argc,
                           const char **argv, const size_t *lens)
{
    if (!a->ready || a->freeing) {
        snprintf(a->err, sizeof(a->err), "not ready (%s)", a->url.cluster ? "no slot map" : "not connected");
        return -1;
    }
    int slot = -1;
    if (a->url.cluster) {
        slot = rcl_command_slot(argc, argv, lens, a->err, sizeof(a->err));
        if (slot < -1)
            return -1;
    }
    acmd *c = calloc(1, sizeof(*c));
    if (!c || !(c->resp = rcl_resp_format(argc, argv, lens, &c->resplen))) {
        free(c);
        snprintf(a->err, sizeof(a->err), "out of memory");
        return -1;
    }
    c->owner = a;
    c->cb = cb;
    c->priv = privdata;
    c->slot = slot;
    c->ask = -1;
    c->body = rcl_scripts_body_for(&a->scripts, argc, argv, lens);
    c->next = a->cmds;
    if (a->cmds)
        a->cmds->prev = c;
    a->cmds = c;
    if (send_routed(c) != 0) {
        if (!a->url.cluster) {
            cmd_free(c);
            return -1;
        }
        retry_later(c, 1); /* accepted: the callback will run */
    }
    return 0;
}

int rcl_async_script_add(rcl_async *a, const char *body, char sha[41])
{
    if (rcl_scripts_add(&a->scripts, body, sha) != 0) {
        snprintf(a->err, sizeof(a->err), "out of memory");
        return -1;
    }
    return 0;
}

const char *rcl_async_errstr(const rcl_async *a) { return a->err; }

unsigned long rcl_async_errors(const rcl_async *a) { return a->errors; }

void rcl_async_free(rcl_async *a)
{
    if (!a)
        return;
    a->freeing = 1;
    rcl_swatch_free(a->swatch);
    for (int i = 0; i < a->nnodes; i++) {
        redisAsyncContext *hac = a->nodes[i].ac;
        a->nodes[i].ac = NULL;
        if (hac)
            redisAsyncFree(hac); /* in-flight callbacks: NULL, finished */
    }
    while (a->cmds)
        finish(a->cmds, NULL); /* waiting on a retry timer */
    if (a->watch_ev)
        event_free(a->watch_ev);
    if (a->refresh_ev)
        event_free(a->refresh_ev);
    if (a->reconnect_ev)
        event_free(a->reconnect_ev);
    if (a->write_ev)
        event_free(a->write_ev);
    free(a->nodes);
    free(a->map.masters);
    free(a->master_node);
    rcl_scripts_free(&a->scripts);
    free(a);
}
