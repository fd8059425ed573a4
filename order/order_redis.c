/* order_redis: a worker's async Redis connection and script calls. See order_redis.h. */
#include "order_redis.h"
#include "order_time.h"
#include "seckill_lua.h"

#include <event2/event.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 12
#define RECONNECT_MS 200
#define WATCH_MS 50

static const char *script_names[ORDER_SCRIPT_COUNT] = {
    "reserve", "cancel", "confirm", "ratelimit", "event_load", "order_status",
    "event_reload"};

int order_scripts_init(order_scripts *s)
{
    for (int i = 0; i < ORDER_SCRIPT_COUNT; i++) {
        s->body[i] = seckill_lua_find(script_names[i]);
        if (!s->body[i])
            return -1;
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int mdlen = 0;
        if (!EVP_Digest(s->body[i], strlen(s->body[i]), md, &mdlen, EVP_sha1(), NULL) ||
            mdlen != 20)
            return -1;
        for (unsigned j = 0; j < 20; j++)
            snprintf(s->sha[i] + 2 * j, 3, "%02x", md[j]);
    }
    return 0;
}

int order_scripts_load(const order_scripts *s, redisContext *c, char *err, size_t errsz)
{
    for (int i = 0; i < ORDER_SCRIPT_COUNT; i++) {
        redisReply *r = redisCommand(c, "SCRIPT LOAD %s", s->body[i]);
        if (!r) {
            snprintf(err, errsz, "SCRIPT LOAD %s: %s", script_names[i], c->errstr);
            return -1;
        }
        int ok = r->type == REDIS_REPLY_STRING && strcmp(r->str, s->sha[i]) == 0;
        if (!ok)
            snprintf(err, errsz, "SCRIPT LOAD %s: unexpected answer %s", script_names[i],
                     r->type == REDIS_REPLY_ERROR ? r->str : "");
        freeReplyObject(r);
        if (!ok)
            return -1;
    }
    return 0;
}

struct order_redis {
    struct event_base *base;
    const sk_redis_url *url;
    const order_scripts *scripts;
    int timeout_ms;
    redisAsyncContext *ac; /* NULL while disconnected */
    int connected;
    struct event *reconnect_ev, *watch_ev;
    /* Replies come back in order, so "no reply for timeout_ms while some are due" is
     * the whole timeout check: no per-command timer. */
    long outstanding;
    int64_t last_progress_us;
    int64_t connect_started_us; /* a connect that hangs (dropped SYNs) is cut at timeout_ms */
    unsigned long errors;
};

/* One command in flight; for scripts, its arguments are kept for the NOSCRIPT retry. */
typedef struct rcall {
    order_redis *r;
    order_redis_cb *cb;
    void *arg;
    int script; /* order_script_id, or -1 */
    int retried;
    int nkeys, n;
    const char *argv[MAX_ARGS];
    size_t lens[MAX_ARGS];
    char buf[]; /* the argument bytes */
} rcall;

static void connect_now(order_redis *r);

static void on_reconnect_timer(evutil_socket_t fd, short what, void *arg)
{
    connect_now(arg);
}

static void schedule_reconnect(order_redis *r)
{
    struct timeval tv = {0, RECONNECT_MS * 1000};
    evtimer_add(r->reconnect_ev, &tv);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    order_redis *r = ac->data;
    if (status != REDIS_OK) {
        /* hiredis frees the context after this callback. */
        r->ac = NULL;
        r->connected = 0;
        r->outstanding = 0;
        schedule_reconnect(r);
        return;
    }
    r->connected = 1;
    r->last_progress_us = order_time_mono_us();
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    order_redis *r = ac->data;
    if (r->ac == ac) {
        r->ac = NULL;
        r->connected = 0;
        r->outstanding = 0;
        if (r->reconnect_ev)
            schedule_reconnect(r);
    }
}

static void on_auth(redisAsyncContext *ac, void *reply, void *priv)
{
    (void)priv;
    redisReply *rep = reply;
    order_redis *r = ac->data;
    if (r->ac == ac)
        r->outstanding--;
    if (rep && rep->type == REDIS_REPLY_ERROR) {
        /* Wrong password or db: every command would fail; drop and retry later. */
        r->errors++;
        redisAsyncDisconnect(ac);
    }
}

static void connect_now(order_redis *r)
{
    redisAsyncContext *ac = r->url->is_unix ? redisAsyncConnectUnix(r->url->host)
                                            : redisAsyncConnect(r->url->host, r->url->port);
    if (!ac || ac->err) {
        if (ac)
            redisAsyncFree(ac);
        schedule_reconnect(r);
        return;
    }
    ac->data = r;
    r->ac = ac;
    r->connected = 0;
    r->outstanding = 0;
    redisLibeventAttach(ac, r->base);
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    /* Sent as soon as the socket connects, before any request's command. */
    if (r->url->pass[0]) {
        if (r->url->user[0])
            redisAsyncCommand(ac, on_auth, NULL, "AUTH %s %s", r->url->user, r->url->pass);
        else
            redisAsyncCommand(ac, on_auth, NULL, "AUTH %s", r->url->pass);
        r->outstanding++;
    }
    if (r->url->db) {
        redisAsyncCommand(ac, on_auth, NULL, "SELECT %d", r->url->db);
        r->outstanding++;
    }
    r->last_progress_us = order_time_mono_us();
    r->connect_started_us = r->last_progress_us;
}

static void on_watch(evutil_socket_t fd, short what, void *arg)
{
    order_redis *r = arg;
    int64_t now = order_time_mono_us();
    int64_t limit = (int64_t)r->timeout_ms * 1000;
    if (r->ac && ((r->outstanding > 0 && now - r->last_progress_us > limit) ||
                  (!r->connected && now - r->connect_started_us > limit))) {
        /* Redis stopped answering, or the connect hangs: fail everything queued (NULL
         * replies) and reconnect. */
        redisAsyncContext *ac = r->ac;
        r->ac = NULL;
        r->connected = 0;
        r->outstanding = 0;
        redisAsyncFree(ac);
        schedule_reconnect(r);
    } else if (r->outstanding == 0) {
        r->last_progress_us = now;
    }
}

order_redis *order_redis_new(struct event_base *base, const sk_redis_url *url,
                             const order_scripts *scripts, int timeout_ms)
{
    order_redis *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->base = base;
    r->url = url;
    r->scripts = scripts;
    r->timeout_ms = timeout_ms;
    r->reconnect_ev = evtimer_new(base, on_reconnect_timer, r);
    r->watch_ev = event_new(base, -1, EV_PERSIST, on_watch, r);
    if (!r->reconnect_ev || !r->watch_ev) {
        order_redis_free(r);
        return NULL;
    }
    struct timeval tv = {0, WATCH_MS * 1000};
    event_add(r->watch_ev, &tv);
    connect_now(r);
    return r;
}

int order_redis_connected(const order_redis *r)
{
    return r->ac != NULL && r->connected;
}

unsigned long order_redis_errors(const order_redis *r)
{
    return r->errors;
}

static int send_call(order_redis *r, rcall *c);

static void on_reply(redisAsyncContext *ac, void *reply, void *priv)
{
    rcall *c = priv;
    order_redis *r = c->r;
    redisReply *rep = reply;
    if (r->ac == ac) {
        r->outstanding--;
        r->last_progress_us = order_time_mono_us();
    }
    if (rep && rep->type == REDIS_REPLY_ERROR && c->script >= 0 && !c->retried &&
        strncmp(rep->str, "NOSCRIPT", 8) == 0 && r->ac) {
        c->retried = 1;
        if (send_call(r, c) == 0)
            return;
        rep = NULL;
    }
    if (!rep || rep->type == REDIS_REPLY_ERROR)
        r->errors++;
    if (c->cb)
        c->cb(rep, c->arg);
    free(c);
}

static int send_call(order_redis *r, rcall *c)
{
    const char *argv[MAX_ARGS + 3];
    size_t lens[MAX_ARGS + 3];
    char nkeys[16];
    int argc = 0;
    if (c->script >= 0) {
        argv[argc] = c->retried ? "EVAL" : "EVALSHA";
        lens[argc] = strlen(argv[argc]);
        argc++;
        argv[argc] = c->retried ? r->scripts->body[c->script] : r->scripts->sha[c->script];
        lens[argc] = strlen(argv[argc]);
        argc++;
        lens[argc] = (size_t)snprintf(nkeys, sizeof(nkeys), "%d", c->nkeys);
        argv[argc++] = nkeys;
    }
    for (int i = 0; i < c->n; i++) {
        argv[argc] = c->argv[i];
        lens[argc++] = c->lens[i];
    }
    if (redisAsyncCommandArgv(r->ac, on_reply, c, argc, argv, lens) != REDIS_OK)
        return -1;
    if (r->outstanding++ == 0)
        r->last_progress_us = order_time_mono_us();
    return 0;
}

static int call(order_redis *r, int script, int nkeys, int n, const char **args,
                const size_t *lens, order_redis_cb *cb, void *arg)
{
    if (!r->ac || n > MAX_ARGS || n < 0) {
        r->errors++;
        return -1;
    }
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += lens[i];
    rcall *c = malloc(sizeof(*c) + total + 1);
    if (!c)
        return -1;
    c->r = r;
    c->cb = cb;
    c->arg = arg;
    c->script = script;
    c->retried = 0;
    c->nkeys = nkeys;
    c->n = n;
    char *p = c->buf;
    for (int i = 0; i < n; i++) {
        memcpy(p, args[i], lens[i]);
        c->argv[i] = p;
        c->lens[i] = lens[i];
        p += lens[i];
    }
    if (send_call(r, c) != 0) {
        free(c);
        r->errors++;
        return -1;
    }
    return 0;
}

int order_redis_script(order_redis *r, order_script_id id, int nkeys, int n, const char **args,
                       const size_t *lens, order_redis_cb *cb, void *arg)
{
    return call(r, (int)id, nkeys, n, args, lens, cb, arg);
}

int order_redis_command(order_redis *r, int argc, const char **argv, const size_t *lens,
                        order_redis_cb *cb, void *arg)
{
    return call(r, -1, 0, argc, argv, lens, cb, arg);
}

void order_redis_free(order_redis *r)
{
    if (!r)
        return;
    if (r->reconnect_ev) {
        event_free(r->reconnect_ev);
        r->reconnect_ev = NULL; /* on_disconnect must not schedule a reconnect now */
    }
    if (r->watch_ev)
        event_free(r->watch_ev);
    if (r->ac) {
        redisAsyncContext *ac = r->ac;
        r->ac = NULL;
        redisAsyncFree(ac);
    }
    free(r);
}
