/* Unit tests of seckill-order's configuration: the table through sk_config (file, errors
 * naming file and line, SECKILL_* overrides, kafka.* pass-through), order_config_check,
 * and the binary's command line (--help, --version, a bad line exits 2). No network:
 * the binary stops at its configuration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "order_config.h"

static char tmpdir[] = "/tmp/test_order_config.XXXXXX";

static void clear_env(void)
{
    extern char **environ;
    /* The stack's SECKILL_* variables must not leak into what is tested. */
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; *e; e++)
            if (strncmp(*e, "SECKILL_", 8) == 0 && strncmp(*e, "SECKILL_BIN_DIR", 15) != 0 &&
                strncmp(*e, "SECKILL_SOURCE_DIR", 18) != 0) {
                char name[256];
                snprintf(name, sizeof(name), "%.*s", (int)(strchr(*e, '=') - *e), *e);
                unsetenv(name);
                again = 1;
                break;
            }
    }
}

static const char *write_file(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_defaults_file_env(void **state)
{
    clear_env();
    order_config cfg = {0};
    sk_cfg_kv *kafka = NULL;
    char err[512];
    const char *path = write_file("ok.conf", "# comment\n"
                                             "redis.url = redis://10.0.0.1:7000/2\n"
                                             "http.port = 9090\n"
                                             "ratelimit.mode = redis\n"
                                             "kafka.message.timeout.ms = 1500\n"
                                             "jwt.secret = s3cret-s3cret-s3cret-s3cret-0123\n");
    setenv("SECKILL_HTTP_PORT", "18080", 1);
    setenv("SECKILL_KAFKA_BROKERS", "127.0.0.1:9092", 1);
    assert_int_equal(sk_config_load(order_config_table, &cfg, path, &kafka, err, sizeof(err)), 0);
    assert_int_equal(order_config_check(&cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg.redis_url, "redis://10.0.0.1:7000/2");
    assert_int_equal(cfg.http_port, 18080); /* the environment wins over the file */
    assert_int_equal(cfg.rl_mode, ORDER_RL_REDIS);
    assert_string_equal(cfg.jwt_secret, "s3cret-s3cret-s3cret-s3cret-0123");
    assert_string_equal(cfg.topic, "seckill.orders");
    assert_int_equal(cfg.soldout_ttl_ms, 500);
    assert_string_equal(cfg.http_event_method, "epoll");
    int seen_timeout = 0, seen_brokers = 0;
    for (sk_cfg_kv *kv = kafka; kv; kv = kv->next) {
        if (strcmp(kv->key, "message.timeout.ms") == 0 && strcmp(kv->value, "1500") == 0)
            seen_timeout = 1;
        if (strcmp(kv->key, "bootstrap.servers") == 0 && strcmp(kv->value, "127.0.0.1:9092") == 0)
            seen_brokers = 1;
    }
    assert_true(seen_timeout && seen_brokers);
    sk_config_free(order_config_table, &cfg, kafka);
    unsetenv("SECKILL_HTTP_PORT");
    unsetenv("SECKILL_KAFKA_BROKERS");
}

static void test_errors_name_file_and_line(void **state)
{
    clear_env();
    static const struct {
        const char *text;
        const char *want;
    } cases[] = {
        {"http.port = 80\nhttp.port = 99999\n", ":2: http.port"},
        {"\n\nnot a setting\n", ":3: expected"},
        {"workers = two\n", ":1: workers: not an integer"},
        {"no.such.key = 1\n", ":1: unknown setting"},
        {"soldout.ttl_ms = 5000\n", ":1: soldout.ttl_ms"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        order_config cfg = {0};
        sk_cfg_kv *kafka = NULL;
        char err[512] = "";
        const char *path = write_file("bad.conf", cases[i].text);
        assert_int_equal(sk_config_load(order_config_table, &cfg, path, &kafka, err, sizeof(err)), -1);
        if (!strstr(err, path) || !strstr(err, cases[i].want))
            fail_msg("case %zu: \"%s\"", i, err);
        sk_config_free(order_config_table, &cfg, kafka);
    }
    /* what the table cannot check, order_config_check does */
    order_config cfg = {0};
    sk_cfg_kv *kafka = NULL;
    char err[512] = "";
    const char *path = write_file("mode.conf", "ratelimit.mode = global\n");
    assert_int_equal(sk_config_load(order_config_table, &cfg, path, &kafka, err, sizeof(err)), 0);
    assert_int_equal(order_config_check(&cfg, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "ratelimit.mode"));
    sk_config_free(order_config_table, &cfg, kafka);

    const char *methods[][2] = {{"poll", "0"}, {"epoll", "0"}, {"select", "-1"}, {"kqueue", "-1"}};
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        char text[64];
        snprintf(text, sizeof(text), "http.event_method = %s\n", methods[i][0]);
        order_config c = {0};
        kafka = NULL;
        path = write_file("method.conf", text);
        assert_int_equal(sk_config_load(order_config_table, &c, path, &kafka, err, sizeof(err)), 0);
        int rc = order_config_check(&c, err, sizeof(err));
        if (rc != atoi(methods[i][1]))
            fail_msg("http.event_method %s: check gave %d (%s)", methods[i][0], rc, err);
        if (rc == 0)
            assert_string_equal(c.http_event_method, methods[i][0]);
        else
            assert_non_null(strstr(err, "http.event_method"));
        sk_config_free(order_config_table, &c, kafka);
    }

    /* redis.wait_replicas: its timeout below redis.timeout_ms, and never on a cluster. */
    const char *waits[][2] = {
        {"redis.wait_replicas = 1\nredis.url = redis-sentinel://h:1/m\n", "0"},
        {"redis.wait_replicas = 1\nredis.wait_timeout_ms = 1000\n", "redis.wait_timeout_ms"},
        {"redis.wait_replicas = 1\nredis.url = redis-cluster://h:1,h:2\n", "redis-cluster"},
        {"redis.wait_replicas = 0\nredis.url = redis-cluster://h:1,h:2\n", "0"},
    };
    for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
        order_config c = {0};
        kafka = NULL;
        path = write_file("wait.conf", waits[i][0]);
        assert_int_equal(sk_config_load(order_config_table, &c, path, &kafka, err, sizeof(err)), 0);
        int rc = order_config_check(&c, err, sizeof(err));
        if (strcmp(waits[i][1], "0") == 0 ? rc != 0 : (rc != -1 || !strstr(err, waits[i][1])))
            fail_msg("wait case %zu: check gave %d (%s)", i, rc, err);
        sk_config_free(order_config_table, &c, kafka);
    }
}

/* Runs the binary; returns its exit status and its stdout+stderr in out. */
static int run(const char *args, char *out, size_t outsz)
{
    const char *bin = getenv("SECKILL_BIN_DIR");
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s/seckill-order %s 2>&1", bin ? bin : "./bin", args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, outsz - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_binary_command_line(void **state)
{
    clear_env();
    static char out[65536];
    assert_int_equal(run("--version", out, sizeof(out)), 0);
    assert_non_null(strstr(out, "seckill-order " SECKILL_VERSION));
    assert_int_equal(run("--help", out, sizeof(out)), 0);
    for (const sk_cfg_entry *e = order_config_table; e->key; e++)
        if (!strstr(out, e->key))
            fail_msg("--help does not list %s", e->key);
    assert_non_null(strstr(out, "SECKILL_JWT_SECRET"));
    assert_int_equal(run("--help-markdown", out, sizeof(out)), 0);
    assert_non_null(strstr(out, "| `redis.url` | `SECKILL_REDIS_URL` |"));
    char args[512];
    const char *path = write_file("bin.conf", "# ok\nhttp.port = 1\nhttp.port = x\n");
    snprintf(args, sizeof(args), "--config %s", path);
    assert_int_equal(run(args, out, sizeof(out)), 2);
    char want[300];
    snprintf(want, sizeof(want), "%s:3:", path);
    assert_non_null(strstr(out, want));
    assert_int_equal(run("--config /nonexistent/x.conf", out, sizeof(out)), 2);
    assert_int_equal(run("--bogus", out, sizeof(out)), 2);
    assert_int_equal(run("extra-arg", out, sizeof(out)), 2);
    /* no secret: refuses to start */
    path = write_file("nosecret.conf", "http.port = 1\n");
    snprintf(args, sizeof(args), "--config %s", path);
    assert_int_equal(run(args, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "jwt.secret"));
    /* a secret under 32 bytes (HS256, RFC 7518 3.2): refused, for the server and `token` */
    path = write_file("shortsecret.conf", "http.port = 1\njwt.secret = 0123456789abcdef0123456789abcde\n");
    snprintf(args, sizeof(args), "--config %s", path);
    assert_int_equal(run(args, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "jwt.secret: 31 bytes"));
    snprintf(args, sizeof(args), "--config %s token --sub 5", path);
    assert_int_equal(run(args, out, sizeof(out)), 2);
    /* an http.bind that is no address: exit 2 before any connection (no Redis attempt) */
    const char *binds[] = {"nope", "127.0.0.1:80", "", "256.0.0.1", "localhost"};
    for (size_t i = 0; i < sizeof(binds) / sizeof(binds[0]); i++) {
        char text[256];
        snprintf(text, sizeof(text),
                 "http.port = 1\njwt.secret = 0123456789abcdef0123456789abcdef\n"
                 "redis.url = redis://127.0.0.1:1\nhttp.bind = %s\n", binds[i]);
        path = write_file("bind.conf", text);
        snprintf(args, sizeof(args), "--config %s", path);
        if (run(args, out, sizeof(out)) != 2 || !strstr(out, "http.bind") || strstr(out, "redis"))
            fail_msg("http.bind \"%s\": %s", binds[i], out);
    }
}

static int setup(void **state)
{
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_file_env),
        cmocka_unit_test(test_errors_name_file_and_line),
        cmocka_unit_test(test_binary_command_line),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
