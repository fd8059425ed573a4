/* order_worker: worker threads, their listening sockets and their inboxes. See order_app.h. */
#include "order_app.h"
#include "order_body.h"
#include "sk_listen.h"
#include "sk_log.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The worker whose loop runs on this thread (NULL elsewhere). */
static _Thread_local order_worker *self;

order_worker *order_worker_self(void)
{
    return self;
}

void order_worker_post(order_worker *w, order_task *t)
{
    t->next = NULL;
    pthread_mutex_lock(&w->inbox_mu);
    if (w->inbox_tail)
        w->inbox_tail->next = t;
    else
        w->inbox_head = t;
    w->inbox_tail = t;
    int wake = !w->inbox_signalled;
    w->inbox_signalled = 1;
    pthread_mutex_unlock(&w->inbox_mu);
    /* One activation per batch: the callback takes the whole list. event_active is
     * safe from any thread because evthread_use_pthreads() ran before the bases. */
    if (wake)
        event_active(w->inbox_ev, EV_READ, 0);
}

static void on_inbox(evutil_socket_t fd, short what, void *arg)
{
    order_worker *w = arg;
    pthread_mutex_lock(&w->inbox_mu);
    order_task *t = w->inbox_head;
    w->inbox_head = w->inbox_tail = NULL;
    w->inbox_signalled = 0;
    pthread_mutex_unlock(&w->inbox_mu);
    while (t) {
        order_task *next = t->next; /* t may be freed by its fn */
        t->fn(t);
        t = next;
    }
}

static void on_stop_accepting(order_task *t)
{
    order_worker *w = (order_worker *)((char *)t - offsetof(order_worker, stop_accepting_task));
    if (w->http && sk_http_listener(w->http)) {
        sk_http_stop_listening(w->http); /* closes the socket */
        sk_listen_backoff_free(w->accept_backoff);
        w->accept_backoff = NULL;
    }
}

static void on_exit_task(order_task *t)
{
    order_worker *w = (order_worker *)((char *)t - offsetof(order_worker, exit_task));
    event_base_loopbreak(w->base);
}

/* Kafka's delivery reports are waiting: serve them here (worker 0's loop). */
static void on_kafka_reports(evutil_socket_t fd, short what, void *arg)
{
    order_worker *w = arg;
    order_kafka_serve(w->app->kafka);
}

static void *worker_main(void *arg)
{
    order_worker *w = arg;
    self = w;
    event_base_loop(w->base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

/* Makes w->base with the event method of http.event_method and checks that libevent
 * gave that one. @returns 0 or -1 (err set). */
static int worker_base_new(order_app *app, order_worker *w, char *err, size_t errsz)
{
    /* The epoll changelist folds add/del/modify churn into one epoll_ctl per fd per
     * loop (evhttp made some on every request: +40% on the sold-out path then; sk_http
     * keeps its read events added, hiredis still toggles writes). Its one hazard, fds
     * cloned with dup(), does not arise here (sockets from accept and hiredis only). */
    struct event_config *ecfg = event_config_new();
    if (ecfg) {
        event_config_set_flag(ecfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
        /* poll: one scan of every descriptor per loop turn. With evhttp it won over
         * epoll (evhttp changed each connection's interest three times per request);
         * with sk_http, whose read events stay added, epoll costs 2-4 us less CPU per
         * accepted order (bench-ceiling, order/README.md): epoll is the default.
         * EVENT_NOEPOLL and the like are ignored: the configuration alone decides. */
        event_config_set_flag(ecfg, EVENT_BASE_FLAG_IGNORE_ENV);
        if (strcmp(app->cfg.http_event_method, "poll") == 0)
            event_config_avoid_method(ecfg, "epoll");
        w->base = event_base_new_with_config(ecfg);
        event_config_free(ecfg);
    }
    if (!w->base) {
        snprintf(err, errsz, "event_base_new failed");
        return -1;
    }
    /* libevent names it "epoll (with changelist)" when the changelist is on */
    const char *got = event_base_get_method(w->base);
    size_t want = strlen(app->cfg.http_event_method);
    if (strncmp(got, app->cfg.http_event_method, want) != 0 || (got[want] && got[want] != ' ')) {
        snprintf(err, errsz, "http.event_method %s: libevent offers %s", app->cfg.http_event_method,
                 got);
        return -1;
    }
    return 0;
}

/* Every route takes at most ORDER_BODY_MAX (order_http_body): said at head time, so
 * that sk_http refuses a larger Content-Length before buffering any of it. */
static int64_t route_body_limit(const sk_http_req *r, void *arg)
{
    (void)r, (void)arg;
    return ORDER_BODY_MAX;
}

/* Makes w->http on w->base with its bounds and handler, and the worker's JWT key.
 * @returns 0 or -1 (err set). */
static int worker_http_new(order_app *app, order_worker *w, char *err, size_t errsz)
{
    /* The body bound stops absurd uploads before they are buffered (JSON 413, closed);
     * the handlers answer bodies over 4 KiB with their own 413. */
    sk_http_opts o = {
        .max_header_bytes = (size_t)app->cfg.http_max_header_bytes,
        .max_body_bytes = app->cfg.http_max_body_bytes,
        .read_timeout_ms = app->cfg.http_read_timeout_ms,
        .idle_timeout_ms = app->cfg.http_idle_timeout_s * 1000,
        .max_conns = (app->cfg.max_connections + app->nworkers - 1) / app->nworkers,
        .allow = "GET, HEAD, POST",
        .body_limit = route_body_limit,
    };
    w->http = sk_http_new(w->base, &o, app->hooks.handle, w);
    if (!w->http) {
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    w->jwt = sk_jwt_key_new((const unsigned char *)app->cfg.jwt_secret, strlen(app->cfg.jwt_secret));
    if (!w->jwt) {
        snprintf(err, errsz, "jwt: no HMAC-SHA256 key (OpenSSL has no HMAC, or out of memory)");
        return -1;
    }
    sk_jwt_key_set_leeway(w->jwt, app->cfg.jwt_leeway_s);
    return 0;
}

/* Binds worker `w`'s own listening socket (SO_REUSEPORT, the port of the first
 * worker for the others) to w->http, with its accept backoff. Sets app->port.
 * @returns 0 or -1 (err set). */
static int worker_listen(order_app *app, order_worker *w, char *err, size_t errsz)
{
    int port = 0;
    /* Every worker has a socket of its own on the port (SO_REUSEPORT): the kernel spreads
     * the connections, and no accept lock is shared. The first proves the port free. */
    char why[256];
    int fd = sk_listen_tcp(app->cfg.http_bind, app->port ? app->port : (int)app->cfg.http_port,
                           SK_LISTEN_REUSEPORT | (w->index == 0 ? SK_LISTEN_CHECK_FREE : 0), 1024,
                           &port, why, sizeof(why));
    if (fd < 0) {
        snprintf(err, errsz, "http.bind: %s", why);
        return -1;
    }
    app->port = port;
    if (sk_http_listen(w->http, fd) != 0) { /* closes fd on failure */
        snprintf(err, errsz, "listen: out of memory");
        return -1;
    }
    w->accept_backoff = sk_listen_backoff_install(sk_http_listener(w->http), w->base, 100);
    if (!w->accept_backoff) {
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    return 0;
}

/* Worker 0 serves every delivery report: its own requests' go on inline, the others'
 * through their worker's inbox (the producer's delivery callback). One producer for all
 * keeps the batches (linger.ms) as full as they can be. @returns 0 or -1 (err set). */
static int worker_watch_kafka(order_app *app, order_worker *w, char *err, size_t errsz)
{
    w->kafka_ev = event_new(w->base, order_kafka_report_fd(app->kafka), EV_READ | EV_PERSIST,
                            on_kafka_reports, w);
    if (!w->kafka_ev || event_add(w->kafka_ev, NULL) != 0) {
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    event_active(w->kafka_ev, EV_READ, 0); /* anything queued before the fd was watched */
    return 0;
}

static int worker_init(order_app *app, order_worker *w, int index, char *err, size_t errsz)
{
    w->index = index;
    w->app = app;
    pthread_mutex_init(&w->inbox_mu, NULL);
    w->stop_accepting_task.fn = on_stop_accepting;
    w->exit_task.fn = on_exit_task;
    if (worker_base_new(app, w, err, errsz) != 0)
        return -1;
    w->inbox_ev = event_new(w->base, -1, 0, on_inbox, w);
    if (!w->inbox_ev) {
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    if (worker_http_new(app, w, err, errsz) != 0 || worker_listen(app, w, err, errsz) != 0)
        return -1;
    w->redis = order_redis_new(w->base, app->cfg.redis_url, &app->scripts,
                               (int)app->cfg.redis_timeout_ms);
    if (!w->redis || app->hooks.chain_new(w) != 0) {
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    if (index == 0 && app->kafka)
        return worker_watch_kafka(app, w, err, errsz);
    return 0;
}

int order_workers_start(order_app *app, char *err, size_t errsz)
{
    app->workers = calloc((size_t)app->nworkers, sizeof(order_worker));
    if (!app->workers) {
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    for (int i = 0; i < app->nworkers; i++)
        if (worker_init(app, &app->workers[i], i, err, errsz) != 0)
            return -1;
    for (int i = 0; i < app->nworkers; i++) {
        order_worker *w = &app->workers[i];
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            snprintf(err, errsz, "pthread_create failed");
            return -1;
        }
        w->started = 1;
    }
    return 0;
}

void order_workers_stop_accepting(order_app *app)
{
    for (int i = 0; i < app->nworkers; i++)
        if (app->workers[i].started)
            order_worker_post(&app->workers[i], &app->workers[i].stop_accepting_task);
}

void order_workers_detach_kafka(order_app *app)
{
    /* event_del waits for a report callback running on worker 0 to return (libevent
     * with threads), so no serve is under way once this returns. */
    if (app->workers && app->workers[0].kafka_ev)
        event_del(app->workers[0].kafka_ev);
}

void order_workers_free(order_app *app)
{
    if (!app->workers)
        return;
    for (int i = 0; i < app->nworkers; i++) {
        order_worker *w = &app->workers[i];
        if (w->started) {
            order_worker_post(w, &w->exit_task);
            pthread_join(w->thread, NULL);
        }
    }
    for (int i = 0; i < app->nworkers; i++) {
        order_worker *w = &app->workers[i];
        /* Messages and confirms queued in the loop's last turn go out (or fail: without a
         * producer the stock is given back) with the rest; then Redis: its pending
         * callbacks (NULL replies) may still answer requests. */
        if (w->chain)
            app->hooks.chain_flush(w);
        order_redis_free(w->redis);
        if (w->chain)
            app->hooks.chain_free(w);
        sk_http_free(w->http);
        if (w->inbox_ev)
            event_free(w->inbox_ev);
        if (w->kafka_ev)
            event_free(w->kafka_ev);
        if (w->base)
            event_base_free(w->base);
        sk_listen_backoff_free(w->accept_backoff);
        w->accept_backoff = NULL;
        sk_jwt_key_free(w->jwt);
        pthread_mutex_destroy(&w->inbox_mu);
    }
    free(app->workers);
    app->workers = NULL;
}
