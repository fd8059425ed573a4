/* consumer_http: see consumer_http.h. */
#include "consumer_http.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <pthread.h>
#include <sk_http.h>
#include <sk_listen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct consumer_http {
    struct event_base *base;
    sk_http *http; /* connection cap, whole-request deadline, JSON refusals (sk_http.h) */
    pthread_t thread;
    consumer_metrics *m;
    const consumer_cfg *cfg; /* metrics.token, metrics.open */
    sk_listen_backoff *backoff; /* accept() out of descriptors: pause */
};

static void reply_json(sk_http_req *req, int code, const char *reason, const char *body, size_t len)
{
    sk_http_reply(req, code, reason, "application/json", body, len);
}

static void on_request(sk_http_req *req, void *arg)
{
    consumer_http *h = arg;
    const char *uri = sk_http_uri(req);
    size_t plen = strcspn(uri, "?");
    sk_http_method cmd = sk_http_method_of(req);
    /* Framing the port refuses: sk_http closes the connection after the answer. */
    const char *why = sk_http_framing(req);
    if (why) {
        char body[256];
        int n = snprintf(body, sizeof(body), "{\"error\":\"bad_request\",\"message\":\"%s\"}", why);
        reply_json(req, 400, "Bad Request", body,
                   n < 0 ? 0 : (size_t)n < sizeof(body) ? (size_t)n : sizeof(body) - 1);
    } else if (cmd != SK_HTTP_GET && cmd != SK_HTTP_HEAD) {
        sk_http_add_header(req, "Allow", "GET, HEAD");
        sk_http_close_after(req);
        static const char body[] =
            "{\"error\":\"method_not_allowed\",\"message\":\"this port answers GET and HEAD\"}";
        reply_json(req, 405, "Method Not Allowed", body, sizeof(body) - 1);
    } else if (plen == 8 && strncmp(uri, "/healthz", 8) == 0) {
        sk_http_reply(req, 200, "OK", "text/plain", "ok\n", 3);
    } else if (plen == 8 && strncmp(uri, "/metrics", 8) == 0 &&
               !sk_http_guard_ok(req, h->cfg->metrics_token, (int)h->cfg->metrics_open)) {
        static const char body[] = "{\"error\":\"unauthorized\",\"message\":\"/metrics: send "
                                   "Authorization: Bearer <metrics.token>, or ask from this "
                                   "host (metrics.open opens it)\"}";
        reply_json(req, 401, "Unauthorized", body, sizeof(body) - 1);
    } else if (plen == 8 && strncmp(uri, "/metrics", 8) == 0) {
        size_t len;
        char *text = consumer_metrics_render(h->m, &len);
        if (!text) {
            static const char body[] = "{\"error\":\"internal\",\"message\":\"out of memory\"}";
            reply_json(req, 500, "Internal Server Error", body, sizeof(body) - 1);
            return;
        }
        /* The sale console (seckill-order's /console, another origin) reads these
         * counters without credentials; any page may, as any client of this port may. */
        sk_http_add_header(req, "Access-Control-Allow-Origin", "*");
        sk_http_reply(req, 200, "OK", "text/plain; version=0.0.4", text, len);
        free(text);
    } else {
        static const char body[] =
            "{\"error\":\"not_found\",\"message\":\"this port serves /healthz and /metrics\"}";
        reply_json(req, 404, "Not Found", body, sizeof(body) - 1);
    }
}

static void use_pthreads(void)
{
    evthread_use_pthreads();
}

static void *http_thread(void *arg)
{
    consumer_http *h = arg;
    event_base_dispatch(h->base);
    return NULL;
}

consumer_http *consumer_http_start(const consumer_cfg *cfg, consumer_metrics *m, char *errstr,
                                   size_t errstr_size)
{
    int port = (int)cfg->http_port;
    /* Needed so that event_base_loopbreak from the main thread wakes the loop. */
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, use_pthreads);
    consumer_http *h = calloc(1, sizeof(*h));
    if (!h) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    h->m = m;
    h->cfg = cfg;
    h->base = event_base_new();
    /* The front's limits: bounded headers, no body at all (GET only: a body is refused
     * with 413 before it is buffered), a whole request within http.read_timeout_ms, an
     * idle connection closed after http.timeout_s, a cap on connections. Every method
     * sk_http knows reaches on_request, which answers 405. */
    sk_http_opts o = {
        .max_header_bytes = (size_t)cfg->http_max_header_bytes,
        .max_body_bytes = -1,
        .read_timeout_ms = cfg->http_read_timeout_ms,
        .idle_timeout_ms = cfg->http_timeout_s * 1000,
        .max_conns = cfg->max_connections,
        .allow = "GET, HEAD",
    };
    h->http = h->base ? sk_http_new(h->base, &o, on_request, h) : NULL;
    if (!h->http) {
        snprintf(errstr, errstr_size, "http: cannot create the event loop");
        goto fail;
    }
    char why[256];
    int fd = sk_listen_tcp(cfg->http_bind, port, 0, 128, NULL, why, sizeof(why));
    if (fd < 0) {
        snprintf(errstr, errstr_size, "http: %s", why);
        goto fail;
    }
    if (sk_http_listen(h->http, fd) != 0) {
        snprintf(errstr, errstr_size, "http: cannot listen on %s:%d", cfg->http_bind, port);
        goto fail;
    }
    h->backoff = sk_listen_backoff_install(sk_http_listener(h->http), h->base, 100);
    if (!h->backoff) {
        snprintf(errstr, errstr_size, "out of memory");
        goto fail;
    }
    if (pthread_create(&h->thread, NULL, http_thread, h) != 0) {
        snprintf(errstr, errstr_size, "http: cannot start the thread");
        goto fail;
    }
    return h;
fail:
    sk_listen_backoff_free(h->backoff);
    sk_http_free(h->http);
    if (h->base)
        event_base_free(h->base);
    free(h);
    return NULL;
}

void consumer_http_stop(consumer_http *h)
{
    if (!h)
        return;
    event_base_loopbreak(h->base);
    pthread_join(h->thread, NULL);
    sk_listen_backoff_free(h->backoff);
    sk_http_free(h->http);
    event_base_free(h->base);
    free(h);
}
