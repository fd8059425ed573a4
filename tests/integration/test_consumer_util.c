/* test_consumer_util: see test_consumer_util.h. */
#include "test_consumer_util.h"

#include "sk_order_msg.h"
#include "sk_test_redis.h" /* sk_test_free_port */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int ctu_wait_healthy(int port, int timeout_ms)
{
    int64_t deadline = sk_test_now_ms() + timeout_ms;
    while (sk_test_now_ms() < deadline) {
        if (ctu_http_get(port, "/healthz", NULL) == 200)
            return 0;
        sk_test_pause_ms(20);
    }
    return -1;
}

uint64_t ctu_seed(void)
{
    const char *s = getenv("SECKILL_TEST_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16);
    fprintf(stderr, "# seed %" PRIu64 " (set SECKILL_TEST_SEED to replay)\n", seed);
    return seed ? seed : 1;
}

uint64_t ctu_rand(uint64_t *x)
{
    /* xorshift64*: plenty for picking test cases. */
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 2685821657736338717ULL;
}

/* ---- dev Kafka ---- */

/* The orders topic of the test's Kafka (SECKILL_TOPIC when ctu_kafka_start set it). */
static const char *orders_topic(void)
{
    const char *t = getenv("SECKILL_TOPIC");
    return t && *t ? t : "seckill.orders";
}

/* Creates the test's topics on an Apache Kafka (admin API; replication factor 1). */
static int create_topics(const char *bootstrap, const char *const *names, int n, int partitions)
{
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    if (!rk) {
        fprintf(stderr, "create_topics: %s\n", err);
        return -1;
    }
    rd_kafka_NewTopic_t *nt[4];
    int rc = 0;
    for (int i = 0; i < n; i++)
        nt[i] = rd_kafka_NewTopic_new(names[i], partitions, 1, err, sizeof(err));
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, nt, (size_t)n, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 60000);
    const rd_kafka_CreateTopics_result_t *res = ev ? rd_kafka_event_CreateTopics_result(ev) : NULL;
    size_t nres = 0;
    const rd_kafka_topic_result_t **tr = res ? rd_kafka_CreateTopics_result_topics(res, &nres) : NULL;
    if (!res || nres != (size_t)n)
        rc = -1;
    for (size_t i = 0; i < nres; i++) {
        rd_kafka_resp_err_t e = rd_kafka_topic_result_error(tr[i]);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
            fprintf(stderr, "create_topics: %s: %s\n", rd_kafka_topic_result_name(tr[i]), rd_kafka_err2str(e));
            rc = -1;
        }
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy_array(nt, (size_t)n);
    rd_kafka_destroy(rk);
    return rc;
}

/* The `kafka` label's shared Apache Kafka (tests/kafka/fixture.sh writes its bootstrap). */
static int real_kafka_attach(ctu_kafka *k, const char *dir, int partitions)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/bootstrap", dir);
    if (sk_test_read_line(path, k->bootstrap, sizeof(k->bootstrap)) != 0) {
        fprintf(stderr, "ctu_kafka_start: no %s (did the fixture kafka_broker_up run?)\n", path);
        return -1;
    }
    snprintf(k->topic, sizeof(k->topic), "seckill.orders.c%d", (int)getpid());
    snprintf(k->dlq, sizeof(k->dlq), "%s.dlq", k->topic);
    const char *names[] = {k->topic, k->dlq};
    if (create_topics(k->bootstrap, names, 2, partitions) != 0)
        return -1;
    setenv("SECKILL_TOPIC", k->topic, 1);
    setenv("SECKILL_DLQ_TOPIC", k->dlq, 1);
    fprintf(stderr, "# Apache Kafka %s, topics %s and %s\n", k->bootstrap, k->topic, k->dlq);
    return 0;
}

int ctu_kafka_start(ctu_kafka *k, int partitions)
{
    memset(k, 0, sizeof(*k));
    const char *real = getenv("E2E_REAL_KAFKA");
    if (real && *real)
        return real_kafka_attach(k, real, partitions);
    snprintf(k->topic, sizeof(k->topic), "seckill.orders");
    snprintf(k->dlq, sizeof(k->dlq), "seckill.orders.dlq");
    if (sk_test_devkafka_start(&k->dev, partitions) != 0)
        return -1;
    snprintf(k->bootstrap, sizeof(k->bootstrap), "%s", k->dev.bootstrap);
    snprintf(k->control, sizeof(k->control), "%s", k->dev.control);
    return 0;
}

void ctu_kafka_stop(ctu_kafka *k)
{
    sk_test_devkafka_stop(&k->dev);
}

/* ---- PostgreSQL ---- */

PGconn *ctu_pg(const char *conninfo)
{
    PGconn *c = PQconnectdb(conninfo);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "connect: %s", PQerrorMessage(c));
        abort();
    }
    PGresult *r = PQexec(c, "SET client_min_messages = warning");
    PQclear(r);
    return c;
}

int ctu_pg_exec(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok)
        fprintf(stderr, "sql: %s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    return ok ? 0 : -1;
}

long long ctu_pg_ll(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    long long v = LLONG_MIN;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0))
        v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    else if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fprintf(stderr, "sql: %s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    return v;
}

long long ctu_pg_wait_ll(PGconn *c, const char *sql, long long want, int timeout_ms)
{
    int64_t deadline = sk_test_now_ms() + timeout_ms;
    long long v;
    for (;;) {
        if (PQstatus(c) != CONNECTION_OK)
            PQreset(c);
        v = ctu_pg_ll(c, sql);
        if (v == want || sk_test_now_ms() >= deadline)
            return v;
        sk_test_pause_ms(50);
    }
}

int ctu_pg_add_event(PGconn *c, int64_t id, int stock)
{
    char sid[24], sst[16];
    snprintf(sid, sizeof(sid), "%" PRId64, id);
    snprintf(sst, sizeof(sst), "%d", stock);
    const char *p[] = {sid, sst};
    PGresult *r = PQexecParams(
        c,
        "INSERT INTO seckill_event (id, name, stock_total, stock_left, starts_at, ends_at)"
        " VALUES ($1::bigint, 'test ' || $1, $2::int, $2::int, now() - interval '1 hour',"
        " now() + interval '1 day')",
        2, NULL, p, NULL, NULL, 0);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        fprintf(stderr, "add event: %s", PQerrorMessage(c));
    PQclear(r);
    return ok ? 0 : -1;
}

char *ctu_db_create(const char *name)
{
    char db[128], conninfo[1024];
    sk_test_pg_name(db, sizeof(db), name);
    if (sk_test_pg_create(db, 0, conninfo, sizeof(conninfo)) != 0)
        return NULL;
    return strdup(conninfo);
}

void ctu_db_drop(const char *name)
{
    char db[128];
    sk_test_pg_name(db, sizeof(db), name);
    sk_test_pg_drop(db);
}

/* ---- throwaway PostgreSQL ---- */

#define PG_BIN "/usr/lib/postgresql/15/bin"

/* Runs argv (as user postgres when we are root: initdb refuses root) and waits.
 * @returns the exit code, or -1. */
static int run_as_pg(const char *const *argv)
{
    const char *full[32];
    int n = 0;
    if (geteuid() == 0) {
        full[n++] = "/usr/sbin/runuser";
        full[n++] = "-u";
        full[n++] = "postgres";
        full[n++] = "--";
    }
    for (const char *const *a = argv; *a && n < 31; a++)
        full[n++] = *a;
    full[n] = NULL;
    sk_test_spawn_opts o = {.out_path = "/dev/null"};
    pid_t pid = sk_test_spawn(full, &o);
    return pid < 0 ? -1 : sk_test_proc_stop(pid, 0, -1);
}

static int pgsrv_ctl_start(ctu_pgsrv *s)
{
    char data[300], logf[300], opts[512];
    snprintf(data, sizeof(data), "%s/data", s->dir);
    snprintf(logf, sizeof(logf), "%s/log", s->dir);
    /* fsync off: a test server, we stop it cleanly and never rely on crash recovery. */
    snprintf(opts, sizeof(opts),
             "-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=20 "
             "-c wal_level=logical", /* the order events are read from the WAL (issue 36) */
             s->port, s->dir);
    const char *argv[] = {PG_BIN "/pg_ctl", "-D", data, "-l", logf, "-o", opts, "-w", "-t", "60",
                          "start", NULL};
    return run_as_pg(argv) == 0 ? 0 : -1;
}

int ctu_pgsrv_start(ctu_pgsrv *s)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->dir, sizeof(s->dir), "/tmp/sk-consumer-pg-XXXXXX");
    if (!mkdtemp(s->dir))
        return -1;
    if (geteuid() == 0) {
        struct passwd *pw = getpwnam("postgres");
        if (!pw || chown(s->dir, pw->pw_uid, pw->pw_gid) != 0)
            return -1;
    }
    char data[300];
    snprintf(data, sizeof(data), "%s/data", s->dir);
    const char *initdb[] = {PG_BIN "/initdb", "-D", data, "-A", "trust", "-U", "postgres",
                            "--no-sync", NULL};
    if (run_as_pg(initdb) != 0)
        return -1;
    s->port = sk_test_free_port();
    snprintf(s->conninfo, sizeof(s->conninfo),
             "host=127.0.0.1 port=%d user=postgres dbname=postgres", s->port);
    return pgsrv_ctl_start(s);
}

int ctu_pgsrv_stop(ctu_pgsrv *s)
{
    char data[300];
    snprintf(data, sizeof(data), "%s/data", s->dir);
    const char *argv[] = {PG_BIN "/pg_ctl", "-D", data, "-m", "fast", "-w", "stop", NULL};
    return run_as_pg(argv) == 0 ? 0 : -1;
}

int ctu_pgsrv_restart(ctu_pgsrv *s)
{
    return pgsrv_ctl_start(s);
}

void ctu_pgsrv_destroy(ctu_pgsrv *s)
{
    if (!s->dir[0])
        return;
    ctu_pgsrv_stop(s); /* fails harmlessly when already stopped */
    sk_test_rmtree(s->dir);
    s->dir[0] = '\0';
}

/* ---- producing ---- */

static int dr_failures;

static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    if (m->err)
        dr_failures++;
}

rd_kafka_t *ctu_producer(const char *bootstrap)
{
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *kv[] = {"bootstrap.servers", bootstrap, "linger.ms", "5",
                        "enable.idempotence", "true", "queue.buffering.max.messages", "1000000",
                        "batch.num.messages", "10000",
                        /* The dev Kafka keeps ~5 MB per partition (librdkafka's mock log
                         * limit) and silently drops older batches beyond: compress. */
                        "compression.type", "lz4", NULL};
    for (int i = 0; kv[i]; i += 2)
        if (rd_kafka_conf_set(conf, kv[i], kv[i + 1], err, sizeof(err)) != RD_KAFKA_CONF_OK) {
            fprintf(stderr, "producer conf: %s\n", err);
            abort();
        }
    rd_kafka_conf_set_dr_msg_cb(conf, on_dr);
    rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    if (!p) {
        fprintf(stderr, "producer: %s\n", err);
        abort();
    }
    dr_failures = 0;
    return p;
}

int ctu_produce(rd_kafka_t *p, const char *topic, int32_t partition, const void *key, size_t klen,
                const void *val, size_t vlen)
{
    for (;;) {
        rd_kafka_resp_err_t err = rd_kafka_producev(
            p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition < 0 ? RD_KAFKA_PARTITION_UA : partition),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY((void *)key, klen),
            RD_KAFKA_V_VALUE((void *)val, vlen), RD_KAFKA_V_END);
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            rd_kafka_poll(p, 10); /* waits on the condition: room in the queue */
            continue;
        }
        if (err)
            fprintf(stderr, "produce: %s\n", rd_kafka_err2str(err));
        return err ? -1 : 0;
    }
}

int ctu_producer_close(rd_kafka_t *p)
{
    rd_kafka_resp_err_t err = rd_kafka_flush(p, 60000);
    int rc = (err || dr_failures) ? -1 : 0;
    if (rc)
        fprintf(stderr, "producer flush: %s, %d delivery failures\n", rd_kafka_err2str(err),
                dr_failures);
    rd_kafka_destroy(p);
    return rc;
}

/* The front's encoder (sk_order_msg.h): what the consumer gets in production; signed
 * under `spec` when it names keys. */
static size_t order_msg(char *buf, size_t sz, int64_t order_id, int64_t event_id,
                        int64_t user_id, int64_t ts_ms, uint32_t quantity, const char *spec)
{
    sk_order_msg m = {.order_id = (uint64_t)order_id, .event_id = (uint64_t)event_id,
                      .user_id = (uint64_t)user_id, .ts_ms = ts_ms, .quantity = quantity};
    if (spec && *spec) {
        char err[128];
        sk_order_msg_keys *k = sk_order_msg_keys_new(spec, err, sizeof(err));
        if (!k || sk_order_msg_sign(k, &m) != 0)
            abort();
        sk_order_msg_keys_free(k);
    }
    return sk_order_msg_encode(&m, buf, sz);
}

size_t ctu_order_signed(char *buf, size_t sz, int64_t order_id, int64_t event_id,
                        int64_t user_id, int64_t ts_ms, const char *spec)
{
    return order_msg(buf, sz, order_id, event_id, user_id, ts_ms, 1, spec);
}

size_t ctu_order_json(char *buf, size_t sz, int64_t order_id, int64_t event_id, int64_t user_id,
                      int64_t ts_ms)
{
    /* signed as the gate signs when the stack has keys (SECKILL_ORDER_MSG_KEYS, from
     * .run/env): a consumer that inherits them takes only signed orders */
    return ctu_order_signed(buf, sz, order_id, event_id, user_id, ts_ms,
                            getenv("SECKILL_ORDER_MSG_KEYS"));
}

int ctu_produce_orders(rd_kafka_t *p, int64_t order_base, int n, int64_t event_base, int nevents,
                       int64_t user_base)
{
    char buf[256], key[32];
    for (int i = 0; i < n; i++) {
        int64_t e = event_base + i % nevents;
        size_t len = ctu_order_json(buf, sizeof(buf), order_base + i, e, user_base + i,
                                    1700000000000LL + i);
        int kn = snprintf(key, sizeof(key), "%" PRId64, e);
        if (ctu_produce(p, orders_topic(), -1, key, (size_t)kn, buf, len) != 0)
            return -1;
    }
    return 0;
}

int ctu_check_orders(PGconn *c, int64_t order_base, int n, int64_t event_base, int nevents,
                     int64_t user_base)
{
    char sql[768];
    long long total = ctu_pg_ll(c, "SELECT count(*) FROM seckill_order");
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM seckill_order WHERE order_id - %" PRId64 " BETWEEN 0 AND %d"
             " AND user_id = %" PRId64 " + (order_id - %" PRId64 ")"
             " AND event_id = %" PRId64 " + (order_id - %" PRId64 ") %% %d AND status = 'created'",
             order_base, n - 1, user_base, order_base, event_base, order_base, nevents);
    long long good = ctu_pg_ll(c, sql);
    if (total != n || good != n) {
        fprintf(stderr, "orders: %lld rows, %lld matching, want %d\n", total, good, n);
        return -1;
    }
    return 0;
}

/* ---- DLQ ---- */

size_t ctu_dlq_read(const char *bootstrap, const char *topic, size_t want, int timeout_ms,
                    ctu_dlq_msg **out)
{
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, err, sizeof(err));
    rd_kafka_conf_set(conf, "group.id", "ctu-dlq-reader", err, sizeof(err));
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof(err));
    rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
    if (!c)
        abort();
    rd_kafka_poll_set_consumer(c);
    const rd_kafka_metadata_t *md = NULL;
    rd_kafka_topic_t *t = rd_kafka_topic_new(c, topic, NULL);
    if (rd_kafka_metadata(c, 0, t, &md, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR || md->topic_cnt < 1)
        abort();
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(16);
    for (int i = 0; i < md->topics[0].partition_cnt; i++)
        rd_kafka_topic_partition_list_add(parts, topic, md->topics[0].partitions[i].id)->offset =
            RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(t);
    rd_kafka_assign(c, parts);
    rd_kafka_topic_partition_list_destroy(parts);

    size_t n = 0, cap = want + 16;
    ctu_dlq_msg *v = calloc(cap, sizeof(*v));
    int64_t deadline = sk_test_now_ms() + timeout_ms, quiet_until = -1;
    while (sk_test_now_ms() < deadline && (quiet_until < 0 || sk_test_now_ms() < quiet_until)) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 100);
        if (!m)
            continue;
        if (!m->err) {
            if (n == cap) {
                cap *= 2;
                v = realloc(v, cap * sizeof(*v));
            }
            ctu_dlq_msg *d = &v[n++];
            memset(d, 0, sizeof(*d));
            d->klen = m->key_len;
            d->key = strndup(m->key ? (const char *)m->key : "", m->key_len);
            d->vlen = m->len;
            d->val = calloc(1, m->len + 1);
            if (m->len)
                memcpy(d->val, m->payload, m->len);
            rd_kafka_headers_t *h = NULL;
            const void *hv;
            size_t hs;
            d->src_partition = -1;
            d->src_offset = -1;
            d->original_size = -1;
            if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR) {
                char tmp[32];
                if (rd_kafka_header_get_last(h, "error", &hv, &hs) == 0)
                    snprintf(d->error, sizeof(d->error), "%.*s", (int)hs, (const char *)hv);
                if (rd_kafka_header_get_last(h, "source.partition", &hv, &hs) == 0) {
                    snprintf(tmp, sizeof(tmp), "%.*s", (int)hs, (const char *)hv);
                    d->src_partition = (int32_t)atoi(tmp);
                }
                if (rd_kafka_header_get_last(h, "source.offset", &hv, &hs) == 0) {
                    snprintf(tmp, sizeof(tmp), "%.*s", (int)hs, (const char *)hv);
                    d->src_offset = strtoll(tmp, NULL, 10);
                }
                if (rd_kafka_header_get_last(h, "source.topic", &hv, &hs) == 0)
                    snprintf(d->src_topic, sizeof(d->src_topic), "%.*s", (int)hs, (const char *)hv);
                if (rd_kafka_header_get_last(h, "truncated", &hv, &hs) == 0)
                    d->truncated = hs == 4 && memcmp(hv, "true", 4) == 0;
                if (rd_kafka_header_get_last(h, "original.size", &hv, &hs) == 0) {
                    snprintf(tmp, sizeof(tmp), "%.*s", (int)hs, (const char *)hv);
                    d->original_size = strtoll(tmp, NULL, 10);
                }
                if (rd_kafka_header_get_last(h, "dlq.error", &hv, &hs) == 0)
                    snprintf(d->dlq_error, sizeof(d->dlq_error), "%.*s", (int)hs, (const char *)hv);
            }
            if (n >= want)
                quiet_until = sk_test_now_ms() + 1000;
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    *out = v;
    return n;
}

void ctu_dlq_free(ctu_dlq_msg *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(m[i].key);
        free(m[i].val);
    }
    free(m);
}

/* ---- processes ---- */

pid_t ctu_consumer_spawn(const char *const *env)
{
    return ctu_consumer_spawn_arg(env, NULL);
}

int ctu_consumer_migrate(const char *conninfo)
{
    char pg[1024];
    snprintf(pg, sizeof(pg), "SECKILL_PG=%s", conninfo);
    const char *env[] = {pg, NULL};
    return sk_test_proc_stop(ctu_consumer_spawn_arg(env, "migrate"), 0, 60000);
}

pid_t ctu_consumer_spawn_arg(const char *const *env, const char *arg)
{
    char exe[512];
    const char *argv[] = {sk_test_bin(exe, sizeof(exe), "seckill-consumer"), arg, NULL};
    sk_test_spawn_opts o = {.env = env, .death_sig = SIGKILL};
    return sk_test_spawn(argv, &o);
}

int ctu_http_get(int port, const char *path, char **body)
{
    if (body)
        *body = NULL;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    char req[512];
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return -1;
    }
    size_t len = 0, cap = 65536;
    char *buf = malloc(cap);
    ssize_t r;
    while ((r = read(fd, buf + len, cap - len - 1)) > 0) {
        len += (size_t)r;
        if (len + 1 == cap)
            buf = realloc(buf, cap *= 2);
    }
    close(fd);
    buf[len] = '\0';
    int code = -1;
    if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1)
        code = -1;
    char *b = strstr(buf, "\r\n\r\n");
    if (body && b)
        *body = strdup(b + 4);
    free(buf);
    return code;
}

double ctu_metric(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, name, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    }
    return -1;
}

double ctu_metric_of(int port, const char *name)
{
    char *body = NULL;
    double v = -1;
    if (ctu_http_get(port, "/metrics", &body) == 200)
        v = ctu_metric(body, name);
    free(body);
    return v;
}

/* ---- the usual start of a consumer test ---- */

void ctu_env_fill(ctu_env *e, const char *conninfo, const char *bootstrap)
{
    snprintf(e->pg, sizeof(e->pg), "SECKILL_PG=%s", conninfo);
    snprintf(e->brokers, sizeof(e->brokers), "SECKILL_KAFKA_BROKERS=%s", bootstrap);
}

char *ctu_setup(ctu_kafka *k, int partitions, const char *name, int64_t event_base, int nevents,
                int stock, PGconn **pg)
{
    char *conninfo = NULL;
    if (ctu_kafka_start(k, partitions) != 0 || !(conninfo = ctu_db_create(name)) ||
        ctu_consumer_migrate(conninfo) != 0) {
        fprintf(stderr, "ctu_setup: the test's Kafka or database did not start\n");
        abort();
    }
    *pg = ctu_pg(conninfo);
    for (int e = 0; e < nevents; e++)
        if (ctu_pg_add_event(*pg, event_base + e, stock) != 0)
            abort();
    return conninfo;
}

size_t ctu_order_json_units(char *buf, size_t sz, int64_t order_id, int64_t event_id,
                            int64_t user_id, int64_t ts_ms, uint32_t quantity)
{
    /* signed as ctu_order_json signs */
    return order_msg(buf, sz, order_id, event_id, user_id, ts_ms, quantity,
                     getenv("SECKILL_ORDER_MSG_KEYS"));
}
