/* Integration test of the read paths of issue 17 (own devkafka, own consumer, a private
 * database, two seckill-order instances on the shared Redis):
 *  - an event created on front A is readable on front B (B loads it on a miss);
 *  - the page carries ETag, Cache-Control and `now` (RFC 3339, milliseconds); a matching
 *    If-None-Match gets 304, a stale one 200;
 *  - after a sale on A, B's page shows the new stock_left within stock_refresh_ms + 100 ms;
 *  - an order's status turns from queued to created within 1 s of its row's commit
 *    (the consumer records the outcome in the order index);
 *  - GET /api/v1/events lists current and upcoming events, paginated, with the same
 *    headers, and an event created on A shows up on B within the list refresh;
 *  - event page reads and order polls of young orders cost PostgreSQL 0 transactions, and
 *    a flood of random event ids a bounded number (pg_stat_database.xact_commit of the
 *    private database, read from the admin connection once the statistics are flushed).
 * The fronts run without a reconciler, so nothing else touches the database. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cmocka.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>

#include "order_msg.h"
#include "test_order_support.h"

static to_order fa, fb;
static to_kafka kafka;
static to_proc consumer;
static char pg_conninfo[512], pg_db[128];
static uint64_t user_base;
static uint64_t ev; /* the event of the run, created on A */

typedef struct http_answer {
    int status;
    char etag[64], cache_control[64];
    char body[4096];
} http_answer;

/* One GET on a fresh connection (Connection: close), headers and body kept. */
static int get(int port, const char *path, const char *token, const char *inm, http_answer *a)
{
    memset(a, 0, sizeof(*a));
    int fd = to_http_connect(port);
    if (fd < 0)
        return -1;
    char req[4096];
    int n = snprintf(req, sizeof(req),
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n%s%s%s"
                     "Connection: close\r\n\r\n",
                     path, token, inm ? "If-None-Match: " : "", inm ? inm : "", inm ? "\r\n" : "");
    if (send(fd, req, (size_t)n, 0) != n) {
        close(fd);
        return -1;
    }
    char buf[8192];
    size_t got = 0;
    ssize_t r;
    while (got < sizeof(buf) - 1 && (r = recv(fd, buf + got, sizeof(buf) - 1 - got, 0)) > 0)
        got += (size_t)r;
    close(fd);
    buf[got] = '\0';
    char *end = strstr(buf, "\r\n\r\n");
    if (!end || sscanf(buf, "HTTP/1.%*d %d", &a->status) != 1)
        return -1;
    *end = '\0';
    to_header_value(buf, "ETag", a->etag, sizeof(a->etag));
    to_header_value(buf, "Cache-Control", a->cache_control, sizeof(a->cache_control));
    snprintf(a->body, sizeof(a->body), "%s", end + 4);
    return a->status;
}

static long long json_int(const char *json, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\":", key);
    const char *p = strstr(json, pat);
    return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

/* ---- PostgreSQL transactions of the private database ---- */

static long long xact_commit(void)
{
    PGconn *c = PQconnectdb(getenv("SECKILL_PG_ADMIN"));
    long long v = -1;
    if (PQstatus(c) == CONNECTION_OK) {
        const char *params[1] = {pg_db};
        PGresult *r = PQexecParams(c, "SELECT xact_commit + xact_rollback FROM pg_stat_database "
                                      "WHERE datname = $1", 1, NULL, params, NULL, NULL, 0);
        if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
            v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        PQclear(r);
    }
    PQfinish(c);
    return v;
}

/* A backend flushes its statistics when idle, at most PGSTAT_IDLE_INTERVAL (10 s) late:
 * the count is settled once it has not moved for 11 s. */
typedef struct settle {
    long long v;
    int64_t since_ms;
} settle;

static int settled(void *arg)
{
    settle *s = arg;
    long long v = xact_commit();
    int64_t now = sk_test_now_ms();
    if (v != s->v) {
        s->v = v;
        s->since_ms = now;
        return 0;
    }
    return now - s->since_ms >= 11000;
}

static long long xacts_settled(void)
{
    settle s = {xact_commit(), sk_test_now_ms()};
    assert_int_equal(to_wait(settled, &s, 60000), 1);
    return s.v;
}

/* ---- the tests ---- */

static void test_event_page(void **state)
{
    (void)state;
    char tok_b[1024], path[96];
    to_token(&fb, user_base + 1, 0, 600, tok_b, sizeof(tok_b));
    snprintf(path, sizeof(path), "/api/v1/events/%" PRIu64, ev);
    http_answer a, b;
    /* created on A, read on B */
    assert_int_equal(get(fb.port, path, tok_b, NULL, &a), 200);
    assert_int_equal(json_int(a.body, "stock_left"), 5);
    assert_int_equal(json_int(a.body, "stock_total"), 5);
    assert_int_equal(to_json_id(a.body, "event_id"), ev);
    assert_true(strncmp(a.etag, "W/\"", 3) == 0);
    assert_string_equal(a.cache_control, "public, max-age=1");
    const char *now = strstr(a.body, "\"now\":\"");
    assert_non_null(now);
    now += 7;
    int64_t now_ms = 0;
    /* RFC 3339 with milliseconds, close to the wall clock */
    assert_int_equal(strcspn(now, "\""), 24);
    assert_true(now[19] == '.' && now[23] == 'Z');
    struct tm tm = {0};
    assert_non_null(strptime(now, "%Y-%m-%dT%H:%M:%S", &tm));
    now_ms = (int64_t)timegm(&tm) * 1000 + strtol(now + 20, NULL, 10);
    assert_true(llabs(now_ms - (int64_t)time(NULL) * 1000) < 5000);
    /* If-None-Match: 304 with the same tag, 200 with another */
    assert_int_equal(get(fb.port, path, tok_b, a.etag, &b), 304);
    assert_string_equal(b.etag, a.etag);
    assert_string_equal(b.body, "");
    assert_int_equal(get(fb.port, path, tok_b, "W/\"0000000000000000\"", &b), 200);
    /* a sale on A shows on B within stock_refresh_ms (100) + 100 ms */
    char tok_a[1024], opath[96], resp[512];
    to_token(&fa, user_base + 2, 0, 600, tok_a, sizeof(tok_a));
    snprintf(opath, sizeof(opath), "/api/v1/events/%" PRIu64 "/orders", ev);
    assert_int_equal(to_http1(fa.port, "POST", opath, tok_a, NULL, resp, sizeof(resp)), 202);
    int64_t sold_ms = sk_test_now_ms(), seen_ms = 0;
    while (sk_test_now_ms() - sold_ms < 2000) {
        assert_int_equal(get(fb.port, path, tok_b, NULL, &b), 200);
        if (json_int(b.body, "stock_left") == 4) {
            seen_ms = sk_test_now_ms();
            break;
        }
    }
    assert_true(seen_ms > 0);
    print_message("stock_left seen on B %lld ms after the 202 on A\n", (long long)(seen_ms - sold_ms));
    assert_true(seen_ms - sold_ms <= 200);
    /* the old tag no longer matches */
    assert_int_equal(get(fb.port, path, tok_b, a.etag, &b), 200);
    assert_string_not_equal(b.etag, a.etag);
}

typedef struct row_poll {
    PGconn *c;
    uint64_t oid;
} row_poll;

static int row_exists(row_poll *p)
{
    char o[24];
    snprintf(o, sizeof(o), "%" PRIu64, p->oid);
    const char *params[1] = {o};
    PGresult *r = PQexecParams(p->c, "SELECT status FROM seckill_order WHERE order_id = $1", 1,
                               NULL, params, NULL, NULL, 0);
    int found = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    PQclear(r);
    return found;
}

static int created_on_a(void *arg)
{
    const char **a = arg; /* path, token */
    char resp[512];
    return to_http1(fa.port, "GET", a[0], a[1], NULL, resp, sizeof(resp)) == 200 &&
           strstr(resp, "\"status\":\"created\"") != NULL;
}

static void test_order_status_and_pg_cost(void **state)
{
    (void)state;
    char tok[1024], other[1024], opath[96], path[96], epath[96], resp[512];
    uint64_t user = user_base + 3;
    to_token(&fa, user, 0, 600, tok, sizeof(tok));
    to_token(&fa, user + 1, 0, 600, other, sizeof(other));
    snprintf(opath, sizeof(opath), "/api/v1/events/%" PRIu64 "/orders", ev);
    assert_int_equal(to_http1(fa.port, "POST", opath, tok, NULL, resp, sizeof(resp)), 202);
    uint64_t oid = to_json_id(resp, "order_id");
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRIu64, oid);
    /* queued -> created: measured from the moment the row is visible */
    row_poll p = {PQconnectdb(pg_conninfo), oid};
    assert_int_equal(PQstatus(p.c), CONNECTION_OK);
    int64_t t0 = sk_test_now_ms(), row_ms = 0, created_ms = 0;
    int saw_queued = 0;
    while (sk_test_now_ms() - t0 < 20000 && !(row_ms && created_ms)) {
        if (!row_ms && row_exists(&p))
            row_ms = sk_test_now_ms();
        if (!created_ms) {
            assert_int_equal(to_http1(fa.port, "GET", path, tok, NULL, resp, sizeof(resp)), 200);
            if (strstr(resp, "\"status\":\"created\""))
                created_ms = sk_test_now_ms();
            else if (strstr(resp, "\"status\":\"queued\""))
                saw_queued = 1;
            else
                fail_msg("unexpected answer %s", resp);
        }
    }
    PQfinish(p.c);
    assert_true(row_ms > 0 && created_ms > 0);
    print_message("created %lld ms after the row was visible (queued seen: %d)\n",
                  (long long)(created_ms - row_ms), saw_queued);
    assert_true(created_ms - row_ms <= 1000);
    /* the owner check stays */
    assert_int_equal(to_http1(fa.port, "GET", path, other, NULL, resp, sizeof(resp)), 403);
    /* a final outcome is kept in memory (order.status_cache_ms): with its index fields
     * gone, the next polls on A still answer created, without Redis or PostgreSQL;
     * B, which never saw it, asks PostgreSQL (older than the index) */
    {
        redisContext *rc = to_redis(getenv("SECKILL_REDIS_URL"));
        assert_non_null(rc);
        char key[ORDER_KEY_MAX];
        order_key_index(oid, key, sizeof(key));
        freeReplyObject(redisCommand(rc, "HDEL %s %" PRIu64 " %" PRIu64 ":o", key, oid, oid));
        redisFree(rc);
    }
    assert_int_equal(to_http1(fa.port, "GET", path, tok, NULL, resp, sizeof(resp)), 200);
    assert_non_null(strstr(resp, "\"status\":\"created\""));
    assert_int_equal(to_http1(fa.port, "GET", path, other, NULL, resp, sizeof(resp)), 403);
    char tokb[1024];
    to_token(&fb, user, 0, 600, tokb, sizeof(tokb));
    assert_int_equal(to_http1(fb.port, "GET", path, tokb, NULL, resp, sizeof(resp)), 200);
    assert_non_null(strstr(resp, "\"status\":\"created\""));

    /* a second young order, polled through the index while it is queued or created */
    uint64_t user2 = user_base + 5;
    char tok2[1024], path2[96];
    to_token(&fa, user2, 0, 600, tok2, sizeof(tok2));
    assert_int_equal(to_http1(fa.port, "POST", opath, tok2, NULL, resp, sizeof(resp)), 202);
    snprintf(path2, sizeof(path2), "/api/v1/orders/%" PRIu64, to_json_id(resp, "order_id"));
    /* Written by the consumer before the count starts: its INSERT is a transaction, and
     * a poll of an order still queued past order.queued_pg_after_s (2 s here: a slow
     * consumer start under the sanitizers) would be a lookup; neither is a read's cost. */
    const char *young[2] = {path2, tok2};
    assert_int_equal(to_wait(created_on_a, young, 30000), 1);
    /* PostgreSQL cost of the reads: none for pages and young orders (once each front
     * has loaded the event: one query each) ... */
    char tok_b[1024];
    to_token(&fb, user, 0, 600, tok_b, sizeof(tok_b));
    snprintf(epath, sizeof(epath), "/api/v1/events/%" PRIu64, ev);
    int fd = to_http_connect(fa.port), fdb = to_http_connect(fb.port);
    assert_int_equal(to_http(fd, "GET", epath, tok, NULL, NULL, 0, resp, sizeof(resp)), 200);
    assert_int_equal(to_http(fdb, "GET", epath, tok_b, NULL, NULL, 0, resp, sizeof(resp)), 200);
    long long x0 = xacts_settled();
    for (int i = 0; i < 200; i++) {
        assert_int_equal(to_http(fd, "GET", epath, tok, NULL, NULL, 0, resp, sizeof(resp)), 200);
        assert_int_equal(to_http(fdb, "GET", epath, tok_b, NULL, NULL, 0, resp, sizeof(resp)), 200);
        if (i % 10 == 0) {
            assert_int_equal(to_http(fdb, "GET", path2, tok_b, NULL, NULL, 0, resp, sizeof(resp)), 403);
            assert_int_equal(to_http(fd, "GET", path2, tok2, NULL, NULL, 0, resp, sizeof(resp)), 200);
            assert_true(strstr(resp, "\"status\":\"created\"") || strstr(resp, "\"status\":\"queued\""));
        }
    }
    long long x1 = xacts_settled();
    print_message("transactions for 400 page reads and 40 polls of a young order: %lld\n", x1 - x0);
    assert_int_equal(x1 - x0, 0);
    /* ... and a bounded number for a flood of random ids (events.miss_per_s = 50) */
    int64_t f0 = sk_test_now_ms();
    int n404 = 0, n503 = 0;
    srand((unsigned)getpid());
    for (int i = 0; i < 3000; i++) {
        /* an id of libidgen's layout from the past year, never issued */
        uint64_t sec = (uint64_t)(time(NULL) - 1704067200) - (uint64_t)(rand() % 31536000);
        uint64_t id = (sec << 32) | (uint64_t)(rand() & 0x7fffffff);
        snprintf(epath, sizeof(epath), "/api/v1/events/%" PRIu64, id);
        int st = to_http(fdb, "GET", epath, tok_b, NULL, NULL, 0, resp, sizeof(resp));
        n404 += st == 404;
        n503 += st == 503;
        assert_true(st == 404 || st == 503);
    }
    double secs = (double)(sk_test_now_ms() - f0) / 1000.0;
    close(fd);
    close(fdb);
    long long x2 = xacts_settled();
    print_message("flood: 3000 random ids in %.1f s: %d 404, %d 503, %lld transactions\n", secs,
                  n404, n503, x2 - x1);
    assert_true(x2 - x1 <= (long long)(50 * (secs + 2)));
    assert_true(x2 - x1 < 3000);
}

static int count_of(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static uint64_t create_on_a(const char *name)
{
    char admin[1024], a[32], b[32], body[256], resp[512];
    to_token(&fa, 1, 1, 3600, admin, sizeof(admin));
    time_t t = time(NULL) + 600;
    strftime(a, sizeof(a), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    t += 7200;
    strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    snprintf(body, sizeof(body), "{\"name\":\"%s\",\"stock\":9,\"starts_at\":\"%s\",\"ends_at\":\"%s\"}", name, a, b);
    assert_int_equal(to_http1(fa.port, "POST", "/api/v1/events", admin, body, resp, sizeof(resp)), 201);
    return to_json_id(resp, "event_id");
}

/* GET /api/v1/events: current and upcoming, paginated, cached; an event created on A
 * shows up on B within events.list_refresh_ms (300 here) plus a query. */
static void test_event_list(void **state)
{
    (void)state;
    char tok[1024], needle[64];
    to_token(&fb, user_base + 9, 0, 600, tok, sizeof(tok));
    http_answer a, b;
    assert_int_equal(get(fb.port, "/api/v1/events", tok, NULL, &a), 200);
    snprintf(needle, sizeof(needle), "\"event_id\":\"%" PRIu64 "\"", ev);
    assert_non_null(strstr(a.body, needle));
    assert_non_null(strstr(a.body, "\"now\":\""));
    assert_string_equal(a.cache_control, "public, max-age=1");
    assert_int_equal(get(fb.port, "/api/v1/events", tok, a.etag, &b), 304);
    uint64_t ev2 = create_on_a("upcoming");
    int64_t t0 = sk_test_now_ms(), seen = 0;
    snprintf(needle, sizeof(needle), "\"event_id\":\"%" PRIu64 "\"", ev2);
    while (sk_test_now_ms() - t0 < 5000) {
        assert_int_equal(get(fb.port, "/api/v1/events", tok, NULL, &b), 200);
        if (strstr(b.body, needle)) {
            seen = sk_test_now_ms();
            break;
        }
    }
    assert_true(seen > 0);
    print_message("an event created on A listed on B after %lld ms\n", (long long)(seen - t0));
    assert_true(seen - t0 <= 1500);
    /* upcoming after current: ev (started) first; pages of one */
    assert_int_equal(get(fb.port, "/api/v1/events?limit=1", tok, NULL, &b), 200);
    assert_int_equal(count_of(b.body, "\"event_id\""), 1);
    assert_non_null(strstr(b.body, "\"next_offset\":1"));
    assert_int_equal(get(fb.port, "/api/v1/events?offset=1&limit=100", tok, NULL, &b), 200);
    assert_non_null(strstr(b.body, needle));
    assert_non_null(strstr(b.body, "\"next_offset\":null"));
    assert_int_equal(get(fb.port, "/api/v1/events?limit=0", tok, NULL, &b), 400);
    assert_int_equal(get(fb.port, "/api/v1/events?limit=abc", tok, NULL, &b), 400);
    assert_int_equal(get(fb.port, "/api/v1/events?offset=-1", tok, NULL, &b), 400);
}

static int row_exists_cond(void *arg)
{
    return row_exists(arg);
}

static int created_on_b(void *arg)
{
    const char **a = arg; /* path, token */
    char resp[512];
    return to_http1(fb.port, "GET", a[0], a[1], NULL, resp, sizeof(resp)) == 200 &&
           strstr(resp, "\"status\":\"created\"") != NULL;
}

/* An outcome the consumer could not record (its field deleted here, as a Redis failure
 * would leave it): the index says queued, and once the order is older than
 * order.queued_pg_after_s (2 s here) the front asks PostgreSQL and answers created. */
static void test_lost_outcome(void **state)
{
    (void)state;
    char tok[1024], tokb[1024], opath[96], path[96], resp[512];
    uint64_t user = user_base + 11;
    to_token(&fa, user, 0, 600, tok, sizeof(tok));
    to_token(&fb, user, 0, 600, tokb, sizeof(tokb));
    snprintf(opath, sizeof(opath), "/api/v1/events/%" PRIu64 "/orders", ev);
    assert_int_equal(to_http1(fa.port, "POST", opath, tok, NULL, resp, sizeof(resp)), 202);
    uint64_t oid = to_json_id(resp, "order_id");
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRIu64, oid);
    row_poll p = {PQconnectdb(pg_conninfo), oid};
    assert_int_equal(PQstatus(p.c), CONNECTION_OK);
    assert_int_equal(to_wait(row_exists_cond, &p, 10000), 1);
    PQfinish(p.c);
    redisContext *rc = to_redis(getenv("SECKILL_REDIS_URL"));
    assert_non_null(rc);
    char key[ORDER_KEY_MAX], field[48];
    order_key_index(oid, key, sizeof(key));
    snprintf(field, sizeof(field), "%" PRIu64 ":o", oid);
    /* the consumer writes the field right after its commit: wait for it, then drop it */
    int64_t t1 = sk_test_now_ms();
    long long have = 0;
    while (!have && sk_test_now_ms() - t1 < 5000) {
        redisReply *r = redisCommand(rc, "HEXISTS %s %s", key, field);
        have = r && r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
        freeReplyObject(r);
    }
    assert_int_equal(have, 1);
    freeReplyObject(redisCommand(rc, "HDEL %s %s", key, field));
    redisFree(rc);
    const char *args[2] = {path, tokb};
    assert_int_equal(to_wait(created_on_b, args, 10000), 1);
}

/* A young order the index calls queued long after it was issued (the consumer lags or
 * its outcome write was lost), polled hard on both fronts, and young ids the index does
 * not know: PostgreSQL is asked at most once per order.pg_lookup_every_ms (5 s) per
 * order and front, and order.pg_lookups_per_s (20 here) per front in all (past it a
 * made-up id gets 404 without a lookup). */
static void test_stuck_queued_bounded(void **state)
{
    (void)state;
    uint64_t user = user_base + 13;
    char tok[1024], tokb[1024], path[96], resp[512];
    to_token(&fa, user, 0, 600, tok, sizeof(tok));
    to_token(&fb, user, 0, 600, tokb, sizeof(tokb));
    /* an acknowledged entry with no row behind it, issued 10 s ago (libidgen's layout) */
    uint64_t sec = (uint64_t)(time(NULL) - 1704067200 - 10);
    uint64_t oid = (sec << 32) | (uint64_t)(getpid() & 0xffff);
    redisContext *rc = to_redis(getenv("SECKILL_REDIS_URL"));
    assert_non_null(rc);
    char key[ORDER_KEY_MAX], val[ORDER_INDEX_VALUE_MAX];
    order_index_entry e = {ev, user, 1, 0, 0};
    order_key_index(oid, key, sizeof(key));
    order_index_encode(&e, val, sizeof(val));
    freeReplyObject(redisCommand(rc, "HSET %s %" PRIu64 " %s", key, oid, val));
    freeReplyObject(redisCommand(rc, "EXPIRE %s 600", key));
    redisFree(rc);
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRIu64, oid);
    int fd = to_http_connect(fa.port), fdb = to_http_connect(fb.port);
    long long x0 = xacts_settled();
    int64_t t0 = sk_test_now_ms();
    int queued = 0, n404 = 0;
    srand((unsigned)getpid() + 1);
    for (int i = 0; i < 400; i++) {
        assert_int_equal(to_http(i % 2 ? fdb : fd, "GET", path, i % 2 ? tokb : tok, NULL, NULL, 0,
                                 resp, sizeof(resp)), 200);
        queued += strstr(resp, "\"status\":\"queued\"") != NULL;
        /* a made-up young id: not in the index, issued 5 s ago */
        char rpath[96];
        uint64_t rid = ((sec + 5) << 32) | (uint64_t)(rand() & 0x7fffffff);
        snprintf(rpath, sizeof(rpath), "/api/v1/orders/%" PRIu64, rid);
        int st = to_http(i % 2 ? fdb : fd, "GET", rpath, i % 2 ? tokb : tok, NULL, NULL, 0, resp,
                         sizeof(resp));
        n404 += st == 404; /* looked up, or past the budget: 404 without a lookup */
    }
    double secs = (double)(sk_test_now_ms() - t0) / 1000.0;
    close(fd);
    close(fdb);
    long long x1 = xacts_settled();
    print_message("400 polls of a stuck order and 400 made-up young ids on two fronts in %.1f s: "
                  "%lld transactions\n", secs, x1 - x0);
    assert_int_equal(queued, 400);
    assert_int_equal(n404, 400);
    /* per front: the stuck order once per 5 s, the made-up ids 20 a calendar second (a
     * run of T seconds touches at most T + 2 of them) */
    long long bound = 2 * ((long long)(secs / 5) + 1) + 2 * 20 * ((long long)secs + 2);
    assert_true(x1 - x0 <= bound);
    assert_true(x1 - x0 < 400);
}

/* ---- set-up ---- */

static int consumer_start(void)
{
    char e[300];
    snprintf(e, sizeof(e), "SECKILL_REDIS_URL=%s", getenv("SECKILL_REDIS_URL"));
    /* the expiry and the events publisher poll PostgreSQL on their own (issue 22): off
     * here, where pg_stat_database must count the reads' transactions alone */
    const char *env[] = {e, "SECKILL_EXPIRY_INTERVAL_MS=0", "SECKILL_EVENTS_TOPIC=", NULL};
    return to_consumer_start(&consumer, pg_conninfo, kafka.bootstrap, env, "test_order_reads");
}

static int setup(void **state)
{
    (void)state;
    if (!to_stack_available()) {
        fprintf(stderr, "the local stack is not up: deploy/local.sh up; source .run/env\n");
        return -1;
    }
    if (to_kafka_start(&kafka) != 0 || to_pg_create(pg_conninfo, sizeof(pg_conninfo), pg_db, sizeof(pg_db)) != 0)
        return -1;
    if (consumer_start() != 0)
        return -1;
    user_base = (uint64_t)getpid() * 10000000ULL + (uint64_t)(sk_test_now_ms() % 1000) * 1000000000000ULL;
    const char *env[] = {"SECKILL_REDIS_TIMEOUT_MS=5000", "SECKILL_RECONCILE_INTERVAL_MS=0",
                         "SECKILL_EVENTS_STOCK_REFRESH_MS=100", "SECKILL_EVENTS_LIST_REFRESH_MS=300", "SECKILL_ORDER_QUEUED_PG_AFTER_S=2",
                         "SECKILL_ORDER_PG_LOOKUPS_PER_S=20", NULL};
    if (to_order_start(&fa, getenv("SECKILL_REDIS_URL"), kafka.bootstrap, pg_conninfo, env) != 0 ||
        to_order_start(&fb, getenv("SECKILL_REDIS_URL"), kafka.bootstrap, pg_conninfo, env) != 0)
        return -1;
    char admin[1024], a[32], b[32], body[256], resp[512];
    to_token(&fa, 1, 1, 3600, admin, sizeof(admin));
    time_t t = time(NULL) - 60;
    strftime(a, sizeof(a), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    t += 7200;
    strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    snprintf(body, sizeof(body), "{\"name\":\"reads\",\"stock\":5,\"starts_at\":\"%s\",\"ends_at\":\"%s\"}", a, b);
    if (to_http1(fa.port, "POST", "/api/v1/events", admin, body, resp, sizeof(resp)) != 201)
        return -1;
    ev = to_json_id(resp, "event_id");
    return ev ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    int rc = 0;
    if (fa.proc.pid && to_stop(&fa.proc, SIGTERM, 10000) != 0)
        rc = -1;
    if (fb.proc.pid && to_stop(&fb.proc, SIGTERM, 10000) != 0)
        rc = -1;
    if (consumer.pid && to_stop(&consumer, SIGTERM, 10000) != 0)
        rc = -1;
    to_kafka_stop(&kafka);
    if (pg_db[0])
        to_pg_drop(pg_db);
    return rc;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_page),
        cmocka_unit_test(test_order_status_and_pg_cost),
        cmocka_unit_test(test_event_list),
        cmocka_unit_test(test_lost_outcome),
        cmocka_unit_test(test_stuck_queued_bounded),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
