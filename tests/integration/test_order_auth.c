/* seckill-order against a Redis that requires a password (issue 7, hardening): a
 * throwaway redis-server with --requirepass and an ACL user, a private devkafka.
 *  - redis://:<pass>@host:port/0 (requirepass) and redis://<user>:<pass>@... (ACL user):
 *    orders go through (reserve.lua, idgen, confirm all authenticated)
 *  - a wrong password: the service starts, is not ready, answers 503, no crash
 *  - no password ever appears in the service's log */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <inttypes.h>
#include <signal.h>
#include <time.h>

#include "order_msg.h"
#include "seckill_lua.h"
#include "sk_test_redis.h"
#include "test_order_support.h"

static sk_test_redis *tr;
static to_kafka kafka;
static redisContext *rc;
static char pass[40], userpass[40];
static to_order srv;

static void random_hex(char *out, size_t n)
{
    FILE *f = fopen("/dev/urandom", "rb");
    unsigned char b[32];
    assert_non_null(f);
    assert_int_equal(fread(b, 1, n / 2, f), n / 2);
    fclose(f);
    for (size_t i = 0; i < n / 2; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static int setup(void **state)
{
    (void)state;
    random_hex(pass, 32);
    random_hex(userpass, 32);
    const char *extra[] = {"--requirepass", pass, NULL};
    char err[256];
    tr = sk_test_redis_start(extra, err, sizeof(err));
    if (!tr) {
        fprintf(stderr, "redis: %s\n", err);
        return -1;
    }
    char url[256];
    snprintf(url, sizeof(url), "redis://:%s@127.0.0.1:%d/0", pass, sk_test_redis_port(tr));
    rc = to_redis(url);
    if (!rc)
        return -1;
    redisReply *r = redisCommand(rc, "ACL SETUSER seckill on >%s ~* &* +@all", userpass);
    int ok = r && r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    if (!ok)
        return -1;
    return to_kafka_start(&kafka);
}

static int teardown(void **state)
{
    (void)state;
    if (srv.proc.pid)
        to_stop(&srv.proc, SIGKILL, 5000);
    to_kafka_stop(&kafka);
    if (rc)
        redisFree(rc);
    sk_test_redis_free(tr);
    return 0;
}

static uint64_t load_event(uint64_t id, long stock)
{
    char k1[ORDER_KEY_MAX], k2[ORDER_KEY_MAX], s[24], a[24], b[24];
    order_key(id, ORDER_KEY_STOCK, k1, sizeof(k1));
    order_key(id, ORDER_KEY_META, k2, sizeof(k2));
    int64_t now = (int64_t)time(NULL) * 1000;
    snprintf(s, sizeof(s), "%ld", stock);
    snprintf(a, sizeof(a), "%" PRId64, now - 60000);
    snprintf(b, sizeof(b), "%" PRId64, now + 3600000);
    const char *argv[] = {"EVAL", seckill_lua_find("event_load"), "2", k1, k2, s, a, b, "1"};
    redisReply *r = redisCommandArgv(rc, 9, argv, NULL);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    return id;
}

static int place(uint64_t event, uint64_t user, char *resp, size_t respsz)
{
    char tok[1024], path[128];
    to_token(&srv, user, 0, 600, tok, sizeof(tok));
    snprintf(path, sizeof(path), "/api/v1/events/%" PRIu64 "/orders", event);
    return to_http1(srv.port, "POST", path, tok, NULL, resp, respsz);
}

/* The child's log so far must not hold either password. */
static void log_has_no_secret(const to_order *o)
{
    FILE *f = fopen(o->proc.log, "r");
    assert_non_null(f);
    char line[4096];
    int lines = 0;
    while (fgets(line, sizeof(line), f)) {
        lines++;
        if (strstr(line, pass) || strstr(line, userpass))
            fail_msg("a password in the log: %s", line);
    }
    fclose(f);
    assert_true(lines > 0);
}

static void run_with(const char *url, uint64_t event)
{
    char resp[1024];
    static const char *env[] = {"SECKILL_WORKERS=1", "SECKILL_RATELIMIT_MODE=off", NULL};
    assert_int_equal(to_order_start(&srv, url, kafka.bootstrap, NULL, env), 0);
    load_event(event, 5);
    for (uint64_t u = 1; u <= 3; u++)
        if (place(event, u, resp, sizeof(resp)) != 202)
            fail_msg("order through %s-authenticated Redis: %s", strchr(url, '@') ? "password" : "?", resp);
    assert_int_equal(place(event, 1, resp, sizeof(resp)), 409); /* duplicate: it is the real gate */
    log_has_no_secret(&srv);
    assert_int_equal(to_stop(&srv.proc, SIGTERM, 10000), 0);
}

static void test_requirepass(void **state)
{
    (void)state;
    char url[256];
    snprintf(url, sizeof(url), "redis://:%s@127.0.0.1:%d/0", pass, sk_test_redis_port(tr));
    run_with(url, 77001);
}

static void test_acl_user(void **state)
{
    (void)state;
    char url[256];
    snprintf(url, sizeof(url), "redis://seckill:%s@127.0.0.1:%d/0", userpass, sk_test_redis_port(tr));
    run_with(url, 77002);
}

static int ready(void *arg)
{
    (void)arg;
    char resp[256];
    return to_http1(srv.port, "GET", "/readyz", NULL, NULL, resp, sizeof(resp)) == 200;
}

static void test_wrong_password(void **state)
{
    (void)state;
    char url[256], resp[1024];
    /* The right user with a wrong password (the real one reversed: it must not leak either). */
    char wrong[40];
    size_t n = strlen(userpass);
    for (size_t i = 0; i < n; i++)
        wrong[i] = userpass[n - 1 - i];
    wrong[n] = 0;
    snprintf(url, sizeof(url), "redis://seckill:%s@127.0.0.1:%d/0", wrong, sk_test_redis_port(tr));
    static const char *env[] = {"SECKILL_WORKERS=1", NULL};
    if (to_order_start(&srv, url, kafka.bootstrap, NULL, env) == 0) {
        assert_int_equal(to_wait(ready, NULL, 1500), 0);
        int st = place(77003, 9, resp, sizeof(resp));
        assert_int_equal(st, 503);
        FILE *f = fopen(srv.proc.log, "r");
        assert_non_null(f);
        char line[4096];
        while (fgets(line, sizeof(line), f))
            if (strstr(line, wrong) || strstr(line, userpass))
                fail_msg("a password in the log: %s", line);
        fclose(f);
        to_stop(&srv.proc, SIGTERM, 10000);
    }
    /* else: it refused to start, which is as good (nothing to serve without its Redis) */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requirepass),
        cmocka_unit_test(test_acl_user),
        cmocka_unit_test(test_wrong_password),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
