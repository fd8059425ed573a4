/* consumer_http: see consumer_http.h. */
#include "consumer_http.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/thread.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct consumer_http {
    struct event_base *base;
    struct evhttp *http;
    pthread_t thread;
    consumer_metrics *m;
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
    const char *uri = evhttp_request_get_uri(req);
    size_t plen = strcspn(uri, "?");
    if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
        reply_text(req, 405, "Method Not Allowed", "text/plain", "method not allowed\n", 19);
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
        reply_text(req, 404, "Not Found", "text/plain", "not found\n", 10);
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

consumer_http *consumer_http_start(int port, consumer_metrics *m, char *errstr, size_t errstr_size)
{
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
    if (evhttp_bind_socket(h->http, "0.0.0.0", (ev_uint16_t)port) != 0) {
        snprintf(errstr, errstr_size, "http: cannot listen on port %d", port);
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
    event_base_free(h->base);
    free(h);
}
