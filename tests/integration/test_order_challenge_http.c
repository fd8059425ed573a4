/* Integration tests of the proof-of-work challenge (issue 31 item 3), on a throwaway
 * redis-server and a private seckill-devkafka, with a seckill-order whose challenge key
 * the test knows (so it can sign expired challenges and another key's):
 *  - an event loaded with challenge_bits (event_load.lua's meta), learnt by the front:
 *    GET .../challenge gives one (no-store), solved it places the order (202); missing,
 *    of the wrong shape (400 naming the header), another user's, unsolved, expired,
 *    another key's: 403 with its code, and Redis is byte for byte as before;
 *  - used twice by its user: the gate's one-order-per-user rule answers (409 duplicate);
 *  - an event without a challenge: GET .../challenge 404, orders need no header;
 *  - a rotated key: challenges of challenge.key_previous still place orders;
 *  - a hidden order path (kind path): GET .../order-path 403 not_started before the start,
 *    then the user's own path; orders by it are placed, by the plain path, another user's
 *    path or a guessed one 404 with Redis unchanged; a path token on an event without a
 *    hidden path is 404 too. */
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
#include <signal.h>
#include <time.h>

#include "order_challenge.h"
#include "sk_pow.h"
#include "order_msg.h"
#include "seckill_lua.h"
#include "sk_test_redis.h"
#include "test_order_support.h"

#define KEY1 "challenge-test-key-one-0123456789abcdef"
#define KEY2 "challenge-test-key-two-0123456789abcdef"

static to_kafka kafka;
static sk_test_redis *tr;
static redisContext *rc;
static uint64_t next_event = 7000, next_user = 1000;

/* An open event straight into Redis with event_load.lua, as order_loader writes it, with
 * its challenge's bits in meta (0: none). */
static uint64_t load_event_at(long stock, int bits, int64_t starts_in_ms)
{
    uint64_t id = next_event++;
    char k1[ORDER_KEY_MAX], k2[ORDER_KEY_MAX], s[24], a[24], b[24], cb[8];
    order_key_seg(id, 0, ORDER_KEY_STOCK, k1, sizeof(k1));
    order_key_seg(id, 0, ORDER_KEY_META, k2, sizeof(k2));
    int64_t now = (int64_t)time(NULL) * 1000;
    snprintf(s, sizeof(s), "%ld", stock);
    snprintf(a, sizeof(a), "%" PRId64, now + starts_in_ms);
    snprintf(b, sizeof(b), "%" PRId64, now + 3600000);
    snprintf(cb, sizeof(cb), "%d", bits);
    const char *argv[] = {"EVAL", seckill_lua_find("event_load"), "2", k1, k2, s, a, b, "1", "1",
                          "0", "0", "0", cb};
    redisReply *rep = redisCommandArgv(rc, 14, argv, NULL);
    assert_non_null(rep);
    assert_int_equal(rep->integer, 1);
    freeReplyObject(rep);
    return id;
}

static uint64_t load_event(long stock, int bits)
{
    return load_event_at(stock, bits, -60000);
}

typedef struct {
    int status;
    char cache_control[64];
    char body[1024];
} answer;

/* One request on a fresh connection for `user`, with a Seckill-Challenge header when
 * `solution` is not NULL. */
static int request(const to_order *o, const char *method, const char *path, uint64_t user,
                   const char *solution, answer *a)
{
    char tok[1024], req[4096];
    to_token(o, user, 0, 600, tok, sizeof(tok));
    int n = snprintf(req, sizeof(req),
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                     "Connection: close\r\n%s%s%s%s\r\n",
                     method, path, tok, solution ? ORDER_CHALLENGE_HEADER ": " : "",
                     solution ? solution : "", solution ? "\r\n" : "",
                     strcmp(method, "POST") == 0 ? "Content-Length: 0\r\n" : "");
    int fd = to_http_connect(o->port);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, req, (size_t)n), n);
    char buf[8192];
    size_t got = 0;
    ssize_t r;
    while (got < sizeof(buf) - 1 && (r = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
        got += (size_t)r;
    close(fd);
    buf[got] = '\0';
    memset(a, 0, sizeof(*a));
    if (sscanf(buf, "HTTP/1.%*d %d", &a->status) != 1)
        return -1;
    char *end = strstr(buf, "\r\n\r\n");
    assert_non_null(end);
    *end = '\0';
    to_header_value(buf, "Cache-Control", a->cache_control, sizeof(a->cache_control));
    snprintf(a->body, sizeof(a->body), "%s", end + 4);
    return a->status;
}

static int order(const to_order *o, uint64_t event, uint64_t user, const char *solution, answer *a)
{
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/events/%" PRIu64 "/orders", event);
    return request(o, "POST", path, user, solution, a);
}

/* GET .../challenge for user, solved: the solution into sol. @returns the difficulty. */
static int get_solved(const to_order *o, uint64_t event, uint64_t user, char *sol, size_t solsz)
{
    char path[96];
    answer a;
    snprintf(path, sizeof(path), "/api/v1/events/%" PRIu64 "/challenge", event);
    if (request(o, "GET", path, user, NULL, &a) != 200)
        fail_msg("GET %s: %d %s", path, a.status, a.body);
    assert_string_equal(a.cache_control, "no-store");
    assert_non_null(strstr(a.body, "\"header\":\"Seckill-Challenge\""));
    const char *c = strstr(a.body, "\"challenge\":\"");
    assert_non_null(c);
    c += 13;
    size_t n = strcspn(c, "\"");
    int bits = atoi(strstr(a.body, "\"difficulty\":") + 13);
    assert_int_equal(order_challenge_bits_of(c, n), bits);
    uint64_t tries;
    assert_true(sk_pow_solve(c, n, (unsigned)bits, 0, 1u << 26, sol, solsz, &tries) > 0);
    return bits;
}

static void is_refused(const answer *a, int status, const char *code)
{
    char want[64];
    snprintf(want, sizeof(want), "\"error\":\"%s\"", code);
    if (a->status != status || !strstr(a->body, want))
        fail_msg("want %d %s, got %d %s", status, code, a->status, a->body);
}

static int front_ready(void *o)
{
    char resp[512];
    return to_http1(((to_order *)o)->port, "GET", "/readyz", NULL, NULL, resp, sizeof(resp)) == 200;
}

static void start(to_order *o, const char *const *env)
{
    assert_int_equal(to_order_start(o, sk_test_redis_url(tr), kafka.bootstrap, NULL, env), 0);
    assert_int_equal(to_wait(front_ready, o, 10000), 1);
}

/* A solution of a challenge the test signs itself with `key`. */
static void signed_by(const char *key, uint64_t user, uint64_t event, unsigned bits,
                      int64_t expires_ms, char *sol, size_t solsz)
{
    order_challenge_key *k =
        order_challenge_key_new((const unsigned char *)key, strlen(key), NULL, 0);
    char ch[ORDER_CHALLENGE_MAX];
    int n = order_challenge_issue(k, user, event, bits, expires_ms, 99, ch, sizeof(ch));
    assert_true(sk_pow_solve(ch, (size_t)n, bits, 0, 1u << 26, sol, solsz, NULL) > 0);
    order_challenge_key_free(k);
}

static void test_challenge(void **state)
{
    (void)state;
    const char *env[] = {"SECKILL_CHALLENGE_KEY=" KEY1, "SECKILL_RATELIMIT_MODE=off", NULL};
    to_order o;
    start(&o, env);
    uint64_t ev = load_event(10, 10), plain = load_event(10, 0);
    uint64_t u = next_user++, v = next_user++;
    answer a;
    /* learnt from meta by the first order: refused, nothing written */
    char before[16384], after[16384];
    to_redis_snapshot(rc, "*", before, sizeof(before));
    order(&o, ev, u, NULL, &a);
    is_refused(&a, 403, "challenge_required");
    char sol[ORDER_CHALLENGE_SOLUTION_MAX], bad[ORDER_CHALLENGE_SOLUTION_MAX];
    assert_int_equal(get_solved(&o, ev, u, sol, sizeof(sol)), 10);
    order(&o, ev, u, "not-a-solution", &a);
    is_refused(&a, 400, "bad_request");
    assert_non_null(strstr(a.body, ORDER_CHALLENGE_HEADER));
    order(&o, ev, v, sol, &a); /* u's, sent by v */
    is_refused(&a, 403, "challenge_invalid");
    /* unsolved: the same challenge with a counter whose hash has too few zero bits */
    snprintf(bad, sizeof(bad), "%s", sol);
    char *dot = strrchr(bad, '.');
    for (int c = 0;; c++) {
        snprintf(dot + 1, 24, "%d", 900000 + c);
        if (sk_pow_zero_bits(bad, strlen(bad)) < 10)
            break;
    }
    order(&o, ev, u, bad, &a);
    is_refused(&a, 403, "challenge_invalid");
    int64_t now = (int64_t)time(NULL) * 1000;
    signed_by(KEY1, u, ev, 10, now - 1000, bad, sizeof(bad));
    order(&o, ev, u, bad, &a);
    is_refused(&a, 403, "challenge_expired");
    signed_by(KEY2, u, ev, 10, now + 60000, bad, sizeof(bad)); /* not this front's key */
    order(&o, ev, u, bad, &a);
    is_refused(&a, 403, "challenge_invalid");
    signed_by(KEY1, u, ev, 2, now + 60000, bad, sizeof(bad)); /* easier than the event's */
    order(&o, ev, u, bad, &a);
    is_refused(&a, 403, "challenge_invalid");
    to_redis_snapshot(rc, "*", after, sizeof(after));
    assert_string_equal(before, after);
    /* solved: placed; the same solution again: the gate's one order per user */
    if (order(&o, ev, u, sol, &a) != 202)
        fail_msg("a solved challenge: %d %s", a.status, a.body);
    order(&o, ev, u, sol, &a);
    is_refused(&a, 409, "duplicate");
    assert_int_equal(to_key_int(rc, ev, ORDER_KEY_STOCK, "GET %s"), 9);
    /* no challenge on this event: none given, none needed */
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/events/%" PRIu64 "/challenge", plain);
    request(&o, "GET", path, u, NULL, &a);
    is_refused(&a, 404, "not_found");
    assert_int_equal(order(&o, plain, u, NULL, &a), 202);
    snprintf(path, sizeof(path), "/api/v1/events/%" PRIu64 "/challenge", next_event + 100);
    request(&o, "GET", path, u, NULL, &a);
    is_refused(&a, 404, "not_found");
    assert_int_equal(to_stop(&o.proc, SIGTERM, 10000), 0);
}

static void test_rotation(void **state)
{
    (void)state;
    const char *env[] = {"SECKILL_CHALLENGE_KEY=" KEY2, "SECKILL_CHALLENGE_KEY_PREVIOUS=" KEY1,
                         "SECKILL_RATELIMIT_MODE=off", NULL};
    to_order o;
    start(&o, env);
    uint64_t ev = load_event(10, 6);
    uint64_t u = next_user++, v = next_user++;
    int64_t now = (int64_t)time(NULL) * 1000;
    char sol[ORDER_CHALLENGE_SOLUTION_MAX];
    answer a;
    signed_by(KEY1, u, ev, 6, now + 60000, sol, sizeof(sol)); /* before the rotation */
    if (order(&o, ev, u, sol, &a) != 202)
        fail_msg("the previous key's challenge: %d %s", a.status, a.body);
    get_solved(&o, ev, v, sol, sizeof(sol)); /* the current key's */
    assert_int_equal(order(&o, ev, v, sol, &a), 202);
    assert_int_equal(to_stop(&o.proc, SIGTERM, 10000), 0);
}

/* The path of GET .../order-path's answer into path. @returns the status. */
static int order_path(const to_order *o, uint64_t event, uint64_t user, char *path, size_t pathsz)
{
    char p[96];
    answer a;
    snprintf(p, sizeof(p), "/api/v1/events/%" PRIu64 "/order-path", event);
    request(o, "GET", p, user, NULL, &a);
    const char *s = strstr(a.body, "\"path\":\"");
    snprintf(path, pathsz, "%.*s", s ? (int)strcspn(s + 8, "\"") : 0, s ? s + 8 : "");
    if (a.status == 200)
        assert_string_equal(a.cache_control, "no-store");
    else if (a.status != 403 || !strstr(a.body, "not_started"))
        fail_msg("GET %s: %d %s", p, a.status, a.body);
    return a.status;
}

static int front_has_started(void *arg)
{
    void **args = arg;
    char path[160];
    return order_path(args[0], *(uint64_t *)args[1], *(uint64_t *)args[2], path, sizeof(path)) == 200;
}

static void test_hidden_path(void **state)
{
    (void)state;
    const char *env[] = {"SECKILL_CHALLENGE_KEY=" KEY1, "SECKILL_RATELIMIT_MODE=off", NULL};
    to_order o;
    start(&o, env);
    uint64_t ev = load_event_at(10, ORDER_CHALLENGE_PATH, 1500), pow = load_event(10, 8);
    uint64_t u = next_user++, v = next_user++;
    char path[160], vpath[160], plain[96];
    answer a;
    assert_int_equal(order_path(&o, ev, u, path, sizeof(path)), 403); /* before the start */
    void *args[3] = {&o, &ev, &u};
    assert_int_equal(to_wait(front_has_started, args, 5000), 1);
    assert_int_equal(order_path(&o, ev, u, path, sizeof(path)), 200);
    assert_int_equal(order_path(&o, ev, v, vpath, sizeof(vpath)), 200);
    assert_string_not_equal(path, vpath);
    snprintf(plain, sizeof(plain), "/api/v1/events/%" PRIu64 "/orders", ev);
    assert_int_equal(strncmp(path, plain, strlen(plain)), 0);
    char before[16384], after[16384], guessed[160];
    to_redis_snapshot(rc, "*", before, sizeof(before));
    request(&o, "POST", plain, u, NULL, &a); /* the plain path */
    is_refused(&a, 404, "not_found");
    request(&o, "POST", vpath, u, NULL, &a); /* v's path, taken by u */
    is_refused(&a, 404, "not_found");
    snprintf(guessed, sizeof(guessed), "%s/00000000000000000000000000000000", plain);
    request(&o, "POST", guessed, u, NULL, &a);
    is_refused(&a, 404, "not_found");
    snprintf(guessed, sizeof(guessed), "/api/v1/events/%" PRIu64 "/orders/%s", pow, path + strlen(plain) + 1);
    request(&o, "POST", guessed, u, NULL, &a); /* a path token on an event without a hidden path */
    is_refused(&a, 404, "not_found");
    to_redis_snapshot(rc, "*", after, sizeof(after));
    assert_string_equal(before, after);
    if (request(&o, "POST", path, u, NULL, &a) != 202)
        fail_msg("by the user's own path: %d %s", a.status, a.body);
    assert_int_equal(request(&o, "POST", vpath, v, NULL, &a), 202);
    assert_int_equal(to_key_int(rc, ev, ORDER_KEY_STOCK, "GET %s"), 8);
    /* GET .../order-path of an event without a hidden path, GET .../challenge of this one */
    snprintf(guessed, sizeof(guessed), "/api/v1/events/%" PRIu64 "/order-path", pow);
    request(&o, "GET", guessed, u, NULL, &a);
    is_refused(&a, 404, "not_found");
    snprintf(guessed, sizeof(guessed), "/api/v1/events/%" PRIu64 "/challenge", ev);
    request(&o, "GET", guessed, u, NULL, &a);
    is_refused(&a, 404, "not_found");
    assert_int_equal(to_stop(&o.proc, SIGTERM, 10000), 0);
}

static int setup(void **state)
{
    (void)state;
    char err[256];
    tr = sk_test_redis_start(NULL, err, sizeof(err));
    if (!tr) {
        fprintf(stderr, "redis-server: %s\n", err);
        return -1;
    }
    rc = to_redis(sk_test_redis_url(tr));
    next_user = (uint64_t)getpid() * 100000ULL;
    return rc && to_kafka_start(&kafka) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    to_kafka_stop(&kafka);
    if (rc)
        redisFree(rc);
    sk_test_redis_free(tr);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_challenge),
        cmocka_unit_test(test_rotation),
        cmocka_unit_test(test_hidden_path),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
