/* test_order_support: helpers of the seckill-order integration tests. See the header. */
#include "order_msg.h"
#include "test_order_support.h"

#include "sk_test_devkafka.h"
#include "sk_jwt.h"
#include "sk_redis_url.h"
#include "sk_test_redis.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int to_stack_available(void)
{
    return getenv("SECKILL_REDIS_URL") && getenv("SECKILL_PG") && getenv("SECKILL_PG_ADMIN");
}

int to_wait(int (*cond)(void *), void *arg, int timeout_ms)
{
    int64_t deadline = sk_test_now_ms() + timeout_ms;
    int r;
    while (!(r = cond(arg)) && sk_test_now_ms() < deadline)
        sk_test_pause_ms(20);
    return r;
}

int to_spawn(to_proc *p, const char *const *argv, const char *const *env, const char *log_path)
{
    snprintf(p->log, sizeof(p->log), "%s", log_path);
    sk_test_spawn_opts o = {.env = env, .clean_env = 1, .out_path = log_path, .err_path = log_path};
    pid_t pid = sk_test_spawn(argv, &o);
    if (pid < 0)
        return -1;
    p->pid = pid;
    return 0;
}

int to_stop(to_proc *p, int sig, int timeout_ms)
{
    if (p->pid <= 0)
        return -1;
    int st = sk_test_proc_stop(p->pid, sig, timeout_ms);
    p->pid = 0;
    if (st == 0)
        unlink(p->log); /* a clean exit: the log is of no further use (kept otherwise) */
    return st;
}

static int healthz_ok(void *arg)
{
    to_order *o = arg;
    char body[256];
    int st = to_http1(o->port, "GET", "/healthz", NULL, NULL, body, sizeof(body));
    if (st == 200)
        return 1;
    int status;
    if (waitpid(o->proc.pid, &status, WNOHANG) == o->proc.pid) {
        o->proc.pid = 0;
        return -1; /* died */
    }
    return 0;
}

int to_consumer_start(to_proc *p, const char *pg, const char *brokers,
                      const char *const *extra_env, const char *tag)
{
    char e1[600], e2[300];
    snprintf(e1, sizeof(e1), "SECKILL_PG=%s", pg);
    snprintf(e2, sizeof(e2), "SECKILL_KAFKA_BROKERS=%s", brokers);
    const char *env[16] = {e1, e2, "SECKILL_HTTP_PORT=0", "SECKILL_BATCH_MS=5"};
    for (int i = 0, k = 4; extra_env && extra_env[i] && k < 15; i++)
        env[k++] = extra_env[i];
    char path[512], log[256];
    sk_test_bin(path, sizeof(path), "seckill-consumer");
    snprintf(log, sizeof(log), "/tmp/%s_consumer_%d.log", tag, (int)getpid());
    const char *argv[] = {path, NULL};
    return to_spawn(p, argv, env, log);
}

int to_order_start(to_order *o, const char *redis_url, const char *kafka_brokers, const char *pg,
                   const char *const *extra_env)
{
    memset(o, 0, sizeof(*o));
    unsigned char raw[32];
    FILE *r = fopen("/dev/urandom", "rb");
    if (!r || fread(raw, 1, sizeof(raw), r) != sizeof(raw)) {
        if (r)
            fclose(r);
        return -1;
    }
    fclose(r);
    for (int i = 0; i < 32; i++)
        snprintf(o->secret + 2 * i, 3, "%02x", raw[i]);
    o->port = sk_test_free_port();
    static char env[16][512];
    const char *envp[40];
    int k = 0;
    snprintf(env[k], sizeof(env[k]), "SECKILL_HTTP_PORT=%d", o->port);
    envp[k] = env[k];
    k++;
    snprintf(env[k], sizeof(env[k]), "SECKILL_JWT_SECRET=%s", o->secret);
    envp[k] = env[k];
    k++;
    snprintf(env[k], sizeof(env[k]), "SECKILL_HTTP_BIND=127.0.0.1");
    envp[k] = env[k];
    k++;
    if (redis_url) {
        snprintf(env[k], sizeof(env[k]), "SECKILL_REDIS_URL=%s", redis_url);
        envp[k] = env[k];
        k++;
    }
    if (kafka_brokers) {
        snprintf(env[k], sizeof(env[k]), "SECKILL_KAFKA_BROKERS=%s", kafka_brokers);
        envp[k] = env[k];
        k++;
    }
    if (pg) {
        snprintf(env[k], sizeof(env[k]), "SECKILL_PG=%s", pg);
        envp[k] = env[k];
        k++;
    }
    /* A reconciler lock of its own unless the test names one: instances of different
     * tests (and the dev stack's) on the shared Redis must not elect one another. */
    int has_lock = 0;
    for (int i = 0; extra_env && extra_env[i]; i++)
        has_lock |= strncmp(extra_env[i], "SECKILL_RECONCILE_LOCK=", 23) == 0;
    if (!has_lock) {
        snprintf(env[k], sizeof(env[k]), "SECKILL_RECONCILE_LOCK=test:reconciler:%d:%d", (int)getpid(),
                 o->port);
        envp[k] = env[k];
        k++;
    }
    for (int i = 0; extra_env && extra_env[i] && k < 38; i++)
        envp[k++] = extra_env[i];
    envp[k] = NULL;
    char path[512], log[256];
    sk_test_bin(path, sizeof(path), "seckill-order");
    snprintf(log, sizeof(log), "/tmp/test_order_%d_%d.log", (int)getpid(), o->port);
    const char *argv[] = {path, NULL};
    if (to_spawn(&o->proc, argv, envp, log) != 0)
        return -1;
    if (to_wait(healthz_ok, o, 20000) != 1) {
        fprintf(stderr, "seckill-order did not come up; log %s\n", log);
        if (o->proc.pid)
            to_stop(&o->proc, SIGKILL, 2000);
        return -1;
    }
    return 0;
}

void to_token(const to_order *o, uint64_t user, int admin, int64_t ttl, char *out, size_t outsz)
{
    sk_jwt_mint((const unsigned char *)o->secret, strlen(o->secret), user, admin,
                (int64_t)time(NULL) + ttl, out, outsz);
}

int to_http_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct timeval tv = {30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int to_http_send(int fd, const char *method, const char *path, const char *token,
                 const char *raw_auth, const char *body, size_t blen)
{
    char head[4096];
    int n = snprintf(head, sizeof(head), "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n", method, path);
    if (token)
        n += snprintf(head + n, sizeof(head) - (size_t)n, "Authorization: Bearer %s\r\n", token);
    else if (raw_auth)
        n += snprintf(head + n, sizeof(head) - (size_t)n, "Authorization: %s\r\n", raw_auth);
    if (body)
        n += snprintf(head + n, sizeof(head) - (size_t)n,
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n", blen);
    n += snprintf(head + n, sizeof(head) - (size_t)n, "\r\n");
    if (write_all(fd, head, (size_t)n) != 0 || (body && blen && write_all(fd, body, blen) != 0))
        return -1;
    return 0;
}

int to_http_recv(int fd, const char *method, char *resp, size_t respsz)
{
    /* Read the head, then Content-Length bytes. */
    char buf[16384];
    size_t got = 0;
    char *end = NULL;
    while (!(end = memmem(buf, got, "\r\n\r\n", 4))) {
        if (got == sizeof(buf))
            return -1;
        ssize_t r = recv(fd, buf + got, sizeof(buf) - got, 0);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    int status = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
        return -1;
    size_t hlen = (size_t)(end - buf) + 4, clen = 0;
    for (char *p = buf; p < end; p++) {
        if (strncasecmp(p, "\r\nContent-Length:", 17) == 0) {
            clen = strtoul(p + 17, NULL, 10);
            break;
        }
    }
    if (strcmp(method, "HEAD") == 0)
        clen = 0;
    size_t have = got - hlen;
    size_t keep = 0;
    if (respsz) {
        keep = have < clen ? have : clen;
        if (keep > respsz - 1)
            keep = respsz - 1;
        memcpy(resp, buf + hlen, keep);
    }
    while (have < clen) {
        char tmp[4096];
        size_t want = clen - have < sizeof(tmp) ? clen - have : sizeof(tmp);
        ssize_t r = recv(fd, tmp, want, 0);
        if (r <= 0)
            return -1;
        if (respsz && keep < respsz - 1) {
            size_t c = (size_t)r < respsz - 1 - keep ? (size_t)r : respsz - 1 - keep;
            memcpy(resp + keep, tmp, c);
            keep += c;
        }
        have += (size_t)r;
    }
    if (respsz)
        resp[keep] = '\0';
    return status;
}

int to_http(int fd, const char *method, const char *path, const char *token, const char *raw_auth,
            const char *body, size_t blen, char *resp, size_t respsz)
{
    if (to_http_send(fd, method, path, token, raw_auth, body, blen) != 0)
        return -1;
    return to_http_recv(fd, method, resp, respsz);
}

int to_http1(int port, const char *method, const char *path, const char *token, const char *body,
             char *resp, size_t respsz)
{
    int fd = to_http_connect(port);
    if (fd < 0)
        return -1;
    int st = to_http(fd, method, path, token, NULL, body, body ? strlen(body) : 0, resp, respsz);
    close(fd);
    return st;
}

uint64_t to_json_id(const char *json, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\":\"", key);
    const char *p = strstr(json, pat);
    return p ? strtoull(p + strlen(pat), NULL, 10) : 0;
}

int to_error_is(const char *json, const char *code)
{
    json_error_t jerr;
    json_t *o = json_loads(json, 0, &jerr);
    if (!o)
        return 0;
    const char *got = json_string_value(json_object_get(o, "error"));
    int ok = got && strcmp(got, code) == 0 && json_is_string(json_object_get(o, "message"));
    json_decref(o);
    return ok;
}

redisContext *to_redis(const char *url)
{
    sk_redis_url u;
    char err[256];
    if (sk_redis_url_parse(url, &u, err, sizeof(err)) != 0)
        return NULL;
    struct timeval tv = {5, 0};
    return sk_redis_url_connect(&u, tv, err, sizeof(err));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void to_redis_snapshot(redisContext *c, const char *pattern, char *out, size_t outsz)
{
    size_t n = 0;
    out[0] = '\0';
    redisReply *keys = redisCommand(c, "KEYS %s", pattern);
    if (!keys || keys->type != REDIS_REPLY_ARRAY) {
        if (keys)
            freeReplyObject(keys);
        snprintf(out, outsz, "error");
        return;
    }
    char **names = calloc(keys->elements + 1, sizeof(char *));
    for (size_t i = 0; i < keys->elements; i++)
        names[i] = keys->element[i]->str;
    qsort(names, keys->elements, sizeof(char *), cmp_str);
    for (size_t i = 0; i < keys->elements; i++) {
        /* DUMP is a canonical serialisation of the value whatever its type; for sets and
         * hashes the internal order may differ for equal content only after rewrites,
         * which nothing here does. */
        redisReply *d = redisCommand(c, "DUMP %s", names[i]);
        n += (size_t)snprintf(out + n, n < outsz ? outsz - n : 0, "%s=", names[i]);
        if (d && d->type == REDIS_REPLY_STRING)
            for (size_t j = 0; j < d->len && n + 3 < outsz; j++)
                n += (size_t)snprintf(out + n, outsz - n, "%02x", (unsigned char)d->str[j]);
        if (n + 2 < outsz)
            out[n++] = ';', out[n] = '\0';
        if (d)
            freeReplyObject(d);
    }
    free(names);
    freeReplyObject(keys);
}

int to_pg_create(char *conninfo, size_t size, char *dbname, size_t dbsize)
{
    /* A new name each time: a test may want several databases. */
    snprintf(dbname, dbsize, "seckill_order_t%d_%" PRId64, (int)getpid(), sk_test_now_ms() % 1000000);
    return sk_test_pg_create(dbname, 1, conninfo, size);
}

void to_pg_drop(const char *dbname)
{
    sk_test_pg_drop(dbname);
}

int to_kafka_start(to_kafka *k)
{
    return sk_test_devkafka_start(k, 0);
}

void to_kafka_stop(to_kafka *k)
{
    sk_test_devkafka_stop(k);
}

int to_kafka_control(const to_kafka *k, const char *line)
{
    return sk_test_devkafka_control(k->control, line);
}

int to_kafka_find_order(const char *brokers, const char *topic, uint64_t order_id, int timeout_ms)
{
    char errstr[512], group[64], needle[64];
    snprintf(group, sizeof(group), "test-order-%d-%" PRId64, (int)getpid(), sk_test_now_ms());
    snprintf(needle, sizeof(needle), "\"order_id\":\"%" PRIu64 "\"", order_id);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", brokers, errstr, sizeof(errstr));
    rd_kafka_conf_set(conf, "group.id", group, errstr, sizeof(errstr));
    rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", errstr, sizeof(errstr));
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof(errstr));
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (!rk)
        return 0;
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *subs = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(subs, topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(rk, subs);
    rd_kafka_topic_partition_list_destroy(subs);
    int found = 0;
    int64_t deadline = sk_test_now_ms() + timeout_ms;
    while (!found && sk_test_now_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m)
            continue;
        if (!m->err && m->len && memmem(m->payload, m->len, needle, strlen(needle)))
            found = 1;
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return found;
}

long long to_key_int(redisContext *c, uint64_t event, int kind, const char *fmt)
{
    char k[ORDER_KEY_MAX];
    order_key(event, (order_key_kind)kind, k, sizeof(k));
    return to_cmd_int(c, fmt, k);
}

long long to_acked_orders(redisContext *c, uint64_t event)
{
    long long n = 0;
    char cursor[32] = "0";
    do {
        redisReply *r = redisCommand(c, "SCAN %s MATCH seckill:oidx:* COUNT 1000", cursor);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            freeReplyObject(r);
            return -999;
        }
        snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
        for (size_t i = 0; i < r->element[1]->elements; i++) {
            redisReply *v = redisCommand(c, "HVALS %s", r->element[1]->element[i]->str);
            if (!v || v->type != REDIS_REPLY_ARRAY) {
                freeReplyObject(v);
                freeReplyObject(r);
                return -999;
            }
            for (size_t j = 0; j < v->elements; j++) {
                order_index_entry e;
                if (order_index_decode(v->element[j]->str, v->element[j]->len, &e) == 0 &&
                    e.event_id == event && e.acked)
                    n++;
            }
            freeReplyObject(v);
        }
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    return n;
}

long long to_cmd_int(redisContext *c, const char *fmt, const char *key)
{
    redisReply *r = redisCommand(c, fmt, key);
    long long v = -999;
    if (r && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else if (r && r->type == REDIS_REPLY_STRING)
        v = strtoll(r->str, NULL, 10);
    freeReplyObject(r);
    return v;
}

int to_order_burst(const to_order *o, int n, const uint64_t *events, const uint64_t *users,
                   int *statuses, char (*bodies)[512])
{
    int fds[TO_BURST_MAX];
    char toks[TO_BURST_MAX][1024], paths[TO_BURST_MAX][128];
    if (n > TO_BURST_MAX)
        return -1;
    for (int i = 0; i < n; i++) {
        to_token(o, users[i], 0, 600, toks[i], sizeof(toks[i]));
        snprintf(paths[i], sizeof(paths[i]), "/api/v1/events/%" PRIu64 "/orders", events[i]);
        fds[i] = to_http_connect(o->port);
        if (fds[i] < 0) {
            while (i-- > 0)
                close(fds[i]);
            return -1;
        }
    }
    int rc = 0;
    for (int i = 0; i < n; i++)
        if (to_http_send(fds[i], "POST", paths[i], toks[i], NULL, NULL, 0) != 0)
            rc = -1;
    for (int i = 0; i < n; i++) {
        statuses[i] = rc == 0 ? to_http_recv(fds[i], "POST", bodies[i], 512) : -1;
        close(fds[i]);
    }
    return rc;
}

long long to_order_metric(const to_order *o, const char *name)
{
    static char text[65536];
    if (to_http1(o->port, "GET", "/metrics", NULL, NULL, text, sizeof(text)) != 200)
        return -1;
    char pat[160];
    snprintf(pat, sizeof(pat), "\n%s ", name);
    const char *p = strstr(text, pat);
    return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

const char *to_header_value(const char *head, const char *name, char *out, size_t outsz)
{
    out[0] = '\0';
    size_t nl = strlen(name);
    for (const char *p = head; (p = strstr(p, "\r\n")); p += 2) {
        if (strncasecmp(p + 2, name, nl) == 0 && p[2 + nl] == ':') {
            const char *v = p + 3 + nl;
            while (*v == ' ')
                v++;
            size_t n = strcspn(v, "\r\n");
            snprintf(out, outsz, "%.*s", (int)(n < outsz ? n : outsz - 1), v);
            return out;
        }
    }
    return NULL;
}
