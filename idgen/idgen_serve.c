/* idgen_serve: `idgen serve`, libidgen as a network service (as Leaf and uid-generator
 * are used): per-tag generators behind Leaf's routes (idgen_serve_route.h), on the
 * project's HTTP layer (sk_http), with the front's bind and token rules (a numeric IPv4
 * bind address; jwt.secret of at least 32 bytes, and every /api request carries a valid
 * HS256 bearer token), Prometheus metrics on /metrics, and SIGTERM/SIGINT stopping it
 * cleanly (the loop ends, every generator is freed: worker ids released).
 *
 * One event loop thread. A segment-mode ID is in-process (no Redis) except when a block
 * must be fetched, which waits at most idgen.timeout_ms: a Redis that is down makes the
 * call fail within it, and the answer is 503, never a made-up ID. Worker-mode generators
 * are made on a tag's first snowflake request (they lease a worker id then). */
#include "idgen.h"
#include "idgen_serve.h"
#include "idgen_serve_route.h"
#include "idgen_worker.h"
#include "sk_config.h"
#include "sk_http.h"
#include "sk_id.h"
#include "sk_jwt.h"
#include "sk_listen.h"
#include "sk_log.h"
#include "sk_prom.h"

#include <arpa/inet.h>
#include <event2/event.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define JWT_SECRET_MIN 32
#define TAGS_MAX 64

typedef struct serve_cfg {
    char *http_bind;
    long long http_port;
    char *redis_url;
    char *jwt_secret;
    char *tags;
    long long timeout_ms;
    long long batch_max;
    long long max_connections;
    long long read_timeout_ms;
    long long idle_timeout_s;
} serve_cfg;

#define F(x) offsetof(serve_cfg, x)
/* serve.* rather than http.*: a shell with the stack's environment has SECKILL_HTTP_PORT
 * (the front's); redis.url and jwt.secret are shared on purpose (the same Redis, the
 * same tokens as the front). */
static const sk_cfg_entry serve_table[] = {
    {"serve.bind", SK_CFG_STRING, 0, 0, "127.0.0.1",
     "address the service listens on: a numeric IPv4 address", F(http_bind)},
    {"serve.port", SK_CFG_INT, 0, 65535, "18090", "port (0: any free port, logged)", F(http_port)},
    {"redis.url", SK_CFG_STRING, 0, 0, "redis://127.0.0.1:16379",
     "Redis of the counters and worker leases (redis://, unix://, redis-cluster://, redis-sentinel://)",
     F(redis_url)},
    {"jwt.secret", SK_CFG_SECRET, 0, 0, "",
     "HS256 secret of the bearer tokens every /api request carries (required, at least 32 "
     "bytes)", F(jwt_secret)},
    {"idgen.tags", SK_CFG_STRING, 0, 0, "order",
     "the tags served, comma-separated (each a libidgen prefix); any other is 404",
     F(tags)},
    {"idgen.timeout_ms", SK_CFG_INT, 1, 60000, "1000",
     "Redis timeout: the longest a request waits for a block before its 503", F(timeout_ms)},
    {"idgen.batch_max", SK_CFG_INT, 1, 100000, "1000", "the largest count of a batch request",
     F(batch_max)},
    {"serve.max_connections", SK_CFG_INT, 1, 1000000, "10000", "connections served at once",
     F(max_connections)},
    {"serve.read_timeout_ms", SK_CFG_INT, 1, 600000, "5000",
     "a request must arrive whole within this", F(read_timeout_ms)},
    {"serve.timeout_s", SK_CFG_INT, 1, 3600, "60", "an idle kept-alive connection is closed after",
     F(idle_timeout_s)},
    {NULL, 0, 0, 0, NULL, NULL, 0},
};
#undef F

typedef struct serve_tag {
    char name[IDGEN_TAG_MAX + 1];
    idgen_t *seg;
    idgen_worker_t *snow; /* made on the first snowflake request */
    uint64_t ids[2];      /* IDs served, by mode */
} serve_tag;

typedef struct serve {
    serve_cfg cfg;
    struct event_base *base;
    sk_http *http;
    sk_jwt_key *key;
    serve_tag tags[TAGS_MAX];
    int ntags;
    uint64_t replies[6]; /* 200, 400, 401, 404, 405, 503 (and 500 counted as 503) */
    uint64_t *ids_buf;
    char *out_buf;
} serve;

static const int reply_codes[6] = {200, 400, 401, 404, 405, 503};

static void reply(serve *s, sk_http_req *req, int code, const char *reason, const char *ctype,
                  const char *body, size_t len)
{
    for (int i = 0; i < 6; i++)
        if (reply_codes[i] == code)
            s->replies[i]++;
    sk_http_reply(req, code, reason, ctype, body, len);
}

static void reply_error(serve *s, sk_http_req *req, int code, const char *reason,
                        const char *error, const char *message)
{
    char body[512];
    int n = snprintf(body, sizeof(body), "{\"error\":\"%s\",\"message\":\"%s\"}", error, message);
    reply(s, req, code, reason, "application/json", body,
          n < 0 ? 0 : (size_t)n < sizeof(body) ? (size_t)n : sizeof(body) - 1);
}

static serve_tag *tag_find(serve *s, const char *name)
{
    for (int i = 0; i < s->ntags; i++)
        if (strcmp(s->tags[i].name, name) == 0)
            return &s->tags[i];
    return NULL;
}

/* Whether the request carries a valid bearer token (the front's rule). */
static int authorized(serve *s, sk_http_req *req)
{
    const char *h = sk_http_header(req, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return 0;
    sk_jwt_claims c;
    return sk_jwt_key_verify(s->key, h + 7, strlen(h + 7), (int64_t)time(NULL), &c) == SK_JWT_OK;
}

static void serve_metrics(serve *s, sk_http_req *req)
{
    sk_prom_text t;
    if (sk_prom_text_open(&t) != 0) {
        reply_error(s, req, 503, "Service Unavailable", "internal", "out of memory");
        return;
    }
    sk_prom_head(t.f, "idgen_serve_replies_total", "counter", "answers by HTTP status");
    for (int i = 0; i < 6; i++) {
        char code[8];
        snprintf(code, sizeof(code), "%d", reply_codes[i]);
        sk_prom_label l = {"code", code};
        sk_prom_sample_u64(t.f, "idgen_serve_replies_total", &l, 1, s->replies[i]);
    }
    sk_prom_head(t.f, "idgen_serve_ids_total", "counter", "IDs served, by tag and mode");
    sk_prom_head(t.f, "idgen_leases_total", "counter", "segment-mode leases (INCRBY) by tag");
    sk_prom_head(t.f, "idgen_redis_errors_total", "counter", "failed Redis round trips by tag");
    for (int i = 0; i < s->ntags; i++) {
        serve_tag *g = &s->tags[i];
        sk_prom_label l[2] = {{"tag", g->name}, {"mode", "segment"}};
        sk_prom_sample_u64(t.f, "idgen_serve_ids_total", l, 2, g->ids[0]);
        l[1].value = "snowflake";
        sk_prom_sample_u64(t.f, "idgen_serve_ids_total", l, 2, g->ids[1]);
        idgen_stats st;
        idgen_get_stats(g->seg, &st);
        sk_prom_sample_u64(t.f, "idgen_leases_total", l, 1, st.leases);
        sk_prom_sample_u64(t.f, "idgen_redis_errors_total", l, 1, st.redis_errors);
    }
    size_t len;
    char *text = sk_prom_text_close(&t, &len);
    if (!text) {
        reply_error(s, req, 503, "Service Unavailable", "internal", "out of memory");
        return;
    }
    reply(s, req, 200, "OK", "text/plain; version=0.0.4", text, len);
    free(text);
}

/* Takes r->count IDs of the tag's generator into s->ids_buf. @returns IDGEN_OK or an
 * error (message in err). */
static int take_ids(serve *s, serve_tag *g, const idgen_route *r, char *err, size_t errsz)
{
    int rc;
    if (r->mode == IDGEN_ROUTE_SEGMENT) {
        rc = r->count == 1 ? idgen_next(g->seg, s->ids_buf)
                           : idgen_next_batch(g->seg, s->ids_buf, (size_t)r->count);
        if (rc)
            snprintf(err, errsz, "%s", idgen_errstr(g->seg));
        return rc;
    }
    if (!g->snow) {
        idgen_worker_opts o;
        idgen_worker_opts_init(&o);
        o.timeout_ms = (int)s->cfg.timeout_ms;
        if (!(g->snow = idgen_worker_new(s->cfg.redis_url, g->name, &o, err, errsz)))
            return IDGEN_ERR_LEASE;
        sk_log(SK_LOG_INFO, "worker_leased", "tag=%s worker=%d", g->name,
               idgen_worker_id(g->snow));
    }
    rc = idgen_worker_next_batch(g->snow, s->ids_buf, (size_t)r->count);
    if (rc)
        snprintf(err, errsz, "%s", idgen_worker_errstr(g->snow));
    return rc;
}

static void on_request(sk_http_req *req, void *arg)
{
    serve *s = arg;
    const char *why = sk_http_framing(req);
    if (why) {
        reply_error(s, req, 400, "Bad Request", "bad_request", why);
        return;
    }
    sk_http_method m = sk_http_method_of(req);
    if (m != SK_HTTP_GET && m != SK_HTTP_HEAD) {
        sk_http_add_header(req, "Allow", "GET, HEAD");
        reply_error(s, req, 405, "Method Not Allowed", "method_not_allowed",
                    "this service answers GET and HEAD");
        return;
    }
    idgen_route r;
    int st = idgen_serve_route_parse(sk_http_uri(req), (long)s->cfg.batch_max, &r);
    if (st == 404) {
        reply_error(s, req, 404, "Not Found", "not_found", "no such route");
        return;
    }
    if (st == 0 && r.kind == IDGEN_ROUTE_HEALTHZ) {
        reply(s, req, 200, "OK", "text/plain", "ok\n", 3);
        return;
    }
    if (st == 0 && r.kind == IDGEN_ROUTE_METRICS) {
        serve_metrics(s, req);
        return;
    }
    /* The token first: a caller without one learns nothing of the tags. */
    if (!authorized(s, req)) {
        sk_http_add_header(req, "WWW-Authenticate", "Bearer");
        reply_error(s, req, 401, "Unauthorized", "unauthorized", "a valid bearer token is needed");
        return;
    }
    if (st == 400) {
        reply_error(s, req, 400, "Bad Request", "bad_request", r.why);
        return;
    }
    serve_tag *g = tag_find(s, r.tag);
    if (!g) {
        reply_error(s, req, 404, "Not Found", "unknown_tag", "this tag is not served");
        return;
    }
    char err[256] = "";
    int rc = take_ids(s, g, &r, err, sizeof(err));
    if (rc) {
        sk_log(SK_LOG_WARN, "ids_failed", "tag=%s err=\"%s\" detail=\"%s\"", g->name,
               idgen_strerror(rc), err);
        sk_http_add_header(req, "Retry-After", "1");
        reply_error(s, req, 503, "Service Unavailable", "unavailable", idgen_strerror(rc));
        return;
    }
    g->ids[r.mode] += (uint64_t)r.count;
    if (r.kind == IDGEN_ROUTE_GET) {
        char num[SK_ID_DEC_MAX];
        size_t n = sk_id_format(num, s->ids_buf[0]);
        reply(s, req, 200, "OK", "text/plain", num, n);
        return;
    }
    /* {"ids":["1","2"]}: strings, as 64-bit ids lose digits as JSON numbers in JS. */
    char *p = s->out_buf;
    memcpy(p, "{\"ids\":[", 8);
    p += 8;
    /* A batch is mostly consecutive numbers (one segment): the next one's digits are the
     * last one's plus one, carried in place, not formatted again (sk_id_format was the
     * top of the profile of a batch of 100). */
    char *last = NULL;
    size_t lastn = 0;
    for (long i = 0; i < r.count; i++) {
        if (i)
            *p++ = ',';
        *p++ = '"';
        if (last && s->ids_buf[i] == s->ids_buf[i - 1] + 1 && sk_id_format_succ(p, last, lastn)) {
            last = p;
        } else {
            lastn = sk_id_format(p, s->ids_buf[i]);
            last = p;
        }
        p += lastn;
        *p++ = '"';
    }
    memcpy(p, "]}", 2);
    p += 2;
    reply(s, req, 200, "OK", "application/json", s->out_buf, (size_t)(p - s->out_buf));
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    serve *s = arg;
    sk_log(SK_LOG_INFO, "stopping", "signal=%d", (int)sig);
    event_base_loopexit(s->base, NULL);
}

/* Makes the tags' segment generators. @returns 0 or -1 with err. */
static int tags_open(serve *s, char *err, size_t errsz)
{
    char *list = strdup(s->cfg.tags);
    if (!list) {
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    int rc = 0;
    for (char *save, *t = strtok_r(list, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
        if (!idgen_serve_tag_ok(t, strlen(t)) || tag_find(s, t) || s->ntags == TAGS_MAX) {
            snprintf(err, errsz, "idgen.tags: \"%s\" is not a tag, a second one, or the %dth",
                     t, TAGS_MAX + 1);
            rc = -1;
            break;
        }
        serve_tag *g = &s->tags[s->ntags];
        snprintf(g->name, sizeof(g->name), "%s", t);
        idgen_opts o;
        idgen_opts_init(&o);
        o.timeout_ms = (int)s->cfg.timeout_ms;
        if (!(g->seg = idgen_new(s->cfg.redis_url, t, &o, err, errsz)))
            rc = -1;
        else
            s->ntags++;
    }
    free(list);
    if (!rc && s->ntags == 0) {
        snprintf(err, errsz, "idgen.tags: none given");
        rc = -1;
    }
    return rc;
}

static void serve_free(serve *s)
{
    for (int i = 0; i < s->ntags; i++) {
        idgen_free(s->tags[i].seg);
        idgen_worker_free(s->tags[i].snow); /* releases the worker id */
    }
    sk_http_free(s->http);
    if (s->base)
        event_base_free(s->base);
    sk_jwt_key_free(s->key);
    free(s->ids_buf);
    free(s->out_buf);
    sk_config_free(serve_table, &s->cfg, NULL);
}

int idgen_serve_main(int argc, char **argv)
{
    static serve s;
    char err[512];
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "--help-markdown"))) {
        if (!strcmp(argv[1], "--help"))
            printf("usage: idgen serve [--config FILE] [--key=value ...]\n\n");
        sk_config_print_help(stdout, serve_table, !strcmp(argv[1], "--help-markdown"));
        return 0;
    }
    sk_log_init("idgen-serve", SK_LOG_INFO);
    /* SECKILL_KAFKA_* of a shared environment land in `kafka`, unused here. */
    sk_cfg_kv *kafka = NULL;
    int npos = 0;
    int cfg_rc = sk_config_load(serve_table, &s.cfg, sk_config_args_path(argc, argv), &kafka,
                                err, sizeof(err));
    if (cfg_rc == 0)
        cfg_rc = sk_config_args(serve_table, &s.cfg, &kafka, 0, argc, argv, NULL, 0, &npos, err,
                                sizeof(err));
    sk_config_free(NULL, NULL, kafka);
    if (cfg_rc == 0 && npos > 0) {
        snprintf(err, sizeof(err), "unexpected argument (settings are --key=value)");
        cfg_rc = -1;
    }
    if (cfg_rc != 0) {
        fprintf(stderr, "idgen serve: %s\n", err);
        serve_free(&s);
        return 2;
    }
    struct in_addr a;
    const char *bad = NULL;
    if (inet_pton(AF_INET, s.cfg.http_bind, &a) != 1)
        bad = "serve.bind: not a numeric IPv4 address";
    else if (strlen(s.cfg.jwt_secret) < JWT_SECRET_MIN)
        bad = "jwt.secret (SECKILL_JWT_SECRET): at least 32 bytes needed (RFC 7518 3.2)";
    if (bad) {
        fprintf(stderr, "idgen serve: %s\n", bad);
        serve_free(&s);
        return 2;
    }
    s.ids_buf = malloc((size_t)s.cfg.batch_max * sizeof(uint64_t));
    s.out_buf = malloc((size_t)s.cfg.batch_max * 23 + 16);
    s.key = sk_jwt_key_new((const unsigned char *)s.cfg.jwt_secret, strlen(s.cfg.jwt_secret));
    if (!s.ids_buf || !s.out_buf || !s.key || tags_open(&s, err, sizeof(err)) != 0) {
        fprintf(stderr, "idgen serve: %s\n", s.key ? err : "out of memory");
        serve_free(&s);
        return 2;
    }
    sk_http_opts ho = {.max_header_bytes = 8192,
                       .max_body_bytes = -1,
                       .read_timeout_ms = s.cfg.read_timeout_ms,
                       .idle_timeout_ms = s.cfg.idle_timeout_s * 1000,
                       .max_conns = s.cfg.max_connections,
                       .allow = "GET, HEAD"};
    int port = 0;
    int fd = -1;
    if ((s.base = event_base_new()))
        s.http = sk_http_new(s.base, &ho, on_request, &s);
    if (s.http)
        fd = sk_listen_tcp(s.cfg.http_bind, (int)s.cfg.http_port, 0, 1024, &port, err,
                           sizeof(err));
    if (!s.http || fd < 0 || sk_http_listen(s.http, fd) != 0) {
        fprintf(stderr, "idgen serve: cannot listen on %s:%lld: %s\n", s.cfg.http_bind,
                s.cfg.http_port, fd < 0 ? err : "out of memory");
        serve_free(&s);
        return 1;
    }
    struct event *sigterm = evsignal_new(s.base, SIGTERM, on_signal, &s);
    struct event *sigint = evsignal_new(s.base, SIGINT, on_signal, &s);
    signal(SIGPIPE, SIG_IGN);
    event_add(sigterm, NULL);
    event_add(sigint, NULL);
    sk_log(SK_LOG_INFO, "listening", "bind=%s port=%d tags=%s", s.cfg.http_bind, port,
           s.cfg.tags);
    event_base_dispatch(s.base);
    event_free(sigterm);
    event_free(sigint);
    serve_free(&s);
    sk_log(SK_LOG_INFO, "stopped", "clean=1");
    return 0;
}
