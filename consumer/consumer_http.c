/* consumer_http: see consumer_http.h. */
#include "consumer_http.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/thread.h>
#include <pthread.h>
#include <sk_httpguard.h>
#include <sk_listen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct consumer_http {
    struct event_base *base;
    struct evhttp *http;
    pthread_t thread;
    consumer_metrics *m;
    sk_listen_backoff *backoff; /* accept() out of descriptors: pause */
    sk_httpguard *guard;        /* connection cap, whole-request deadline, JSON refusals */
};

static void reply_text(struct evhttp_request *req, int code, const char *reason,
                       const char *ctype, const char *body, size_t len)
{
    struct evbuffer *out = evbuffer_new();
    if (!out) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    evbuffer_add(out, body, len);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", ctype);
    evhttp_send_reply(req, code, reason, out);
    evbuffer_free(out);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    consumer_http *h = arg;
    sk_httpguard_track(h->guard, req); /* a refused later request waits for this answer */
    const char *uri = evhttp_request_get_uri(req);
    size_t plen = strcspn(uri, "?");
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    /* Framing the port refuses: the guard closes the connection after the answer. */
    const char *why = sk_httpguard_framing(req);
    if (why) {
        char body[256];
        int n = snprintf(body, sizeof(body), "{\"error\":\"bad_request\",\"message\":\"%s\"}", why);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
        reply_text(req, 400, "Bad Request", "application/json", body,
                   n < 0 ? 0 : (size_t)n < sizeof(body) ? (size_t)n : sizeof(body) - 1);
    } else if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
        evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
        static const char body[] =
            "{\"error\":\"method_not_allowed\",\"message\":\"this port answers GET and HEAD\"}";
        reply_text(req, 405, "Method Not Allowed", "application/json", body, sizeof(body) - 1);
    } else if (plen == 8 && strncmp(uri, "/healthz", 8) == 0) {
        reply_text(req, 200, "OK", "text/plain", "ok\n", 3);
    } else if (plen == 8 && strncmp(uri, "/metrics", 8) == 0) {
        size_t len;
        char *text = consumer_metrics_render(h->m, &len);
        if (!text) {
            evhttp_send_error(req, 500, "out of memory");
            return;
        }
        /* The sale console (seckill-order's /console, another origin) reads these
         * counters without credentials; any page may, as any client of this port may. */
        evhttp_add_header(evhttp_request_get_output_headers(req), "Access-Control-Allow-Origin", "*");
        reply_text(req, 200, "OK", "text/plain; version=0.0.4", text, len);
        free(text);
    } else {
        static const char body[] =
            "{\"error\":\"not_found\",\"message\":\"this port serves /healthz and /metrics\"}";
        reply_text(req, 404, "Not Found", "application/json", body, sizeof(body) - 1);
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
    h->base = event_base_new();
    h->http = h->base ? evhttp_new(h->base) : NULL;
    if (!h->http) {
        snprintf(errstr, errstr_size, "http: cannot create the event loop");
        goto fail;
    }
    evhttp_set_gencb(h->http, on_request, h);
    /* The front's limits: bounded headers, no body at all (GET only: a body is refused
     * with 413 before it is buffered), an idle connection or a partial request closed
     * after http.timeout_s. Every method reaches on_request, which answers 405. */
    evhttp_set_max_headers_size(h->http, (ev_ssize_t)cfg->http_max_header_bytes);
    evhttp_set_max_body_size(h->http, 0);
    evhttp_set_timeout(h->http, (int)cfg->http_timeout_s);
    /* What evhttp cannot do: a cap on connections, a deadline for a whole request (a
     * client sending a byte per http.timeout_s is cut), and JSON answers where evhttp
     * would answer HTML (headers too large, a body, Expect, Transfer-Encoding, unknown
     * methods). The same guard as seckill-order's workers. */
    h->guard = sk_httpguard_install(h->http, h->base, cfg->http_read_timeout_ms,
                                    cfg->max_connections, (size_t)cfg->http_max_header_bytes,
                                    -1, "GET, HEAD");
    if (!h->guard) {
        snprintf(errstr, errstr_size, "out of memory");
        goto fail;
    }
    evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST |
                                            EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                            EVHTTP_REQ_PATCH | EVHTTP_REQ_OPTIONS |
                                            EVHTTP_REQ_CONNECT | EVHTTP_REQ_TRACE);
    struct evhttp_bound_socket *bound =
        evhttp_bind_socket_with_handle(h->http, cfg->http_bind, (ev_uint16_t)port);
    if (!bound) {
        snprintf(errstr, errstr_size, "http: cannot listen on %s:%d", cfg->http_bind, port);
        goto fail;
    }
    h->backoff = sk_listen_backoff_install(evhttp_bound_socket_get_listener(bound), h->base, 100);
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
    if (h->http)
        evhttp_free(h->http);
    sk_httpguard_free(h->guard);
    sk_listen_backoff_free(h->backoff);
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
    evhttp_free(h->http);
    sk_httpguard_free(h->guard);
    sk_listen_backoff_free(h->backoff);
    event_base_free(h->base);
    free(h);
}
