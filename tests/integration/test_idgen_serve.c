/* Integration: `idgen serve`'s contract (docs/idgen-openapi.yaml) against the real
 * binary on the shared Redis, and on a Redis that is not there.
 * - Leaf's routes: one ID as text (segment and snowflake), a batch as {"ids":[...]}, all
 *   unique and stamped now; /healthz, /metrics (with the IDs counted).
 * - Refusals: no or a bad token 401, a bad tag 400, a bad batch size 400 (0, over
 *   batch_max, not a number, missing, given twice), an unknown tag 404, another path 404,
 *   POST 405. Redis down: 503 within the timeout, for both modes, never an ID.
 * - SIGTERM: exit 0, promptly, the worker id released. */
#include "test_idgen_util.h"

#include "idgen_worker.h"
#include "sk_id.h"
#include "sk_jwt.h"
#include "sk_test_redis.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#define SECRET "a-test-secret-of-at-least-32-bytes!!"

static char token[512];

typedef struct server {
    pid_t pid;
    int port;
    char log[256];
} server;

static void server_start(server *s, const char *redis_url, const char *tags, const char *timeout)
{
    s->port = sk_test_free_port();
    snprintf(s->log, sizeof(s->log), "/tmp/idgen-serve-%d-%d.log", (int)getpid(), s->port);
    char port[16], env_port[64], env_url[600], env_tags[300], env_to[64];
    snprintf(port, sizeof(port), "%d", s->port);
    snprintf(env_port, sizeof(env_port), "SECKILL_SERVE_PORT=%d", s->port);
    snprintf(env_url, sizeof(env_url), "SECKILL_REDIS_URL=%s", redis_url);
    snprintf(env_tags, sizeof(env_tags), "SECKILL_IDGEN_TAGS=%s", tags);
    snprintf(env_to, sizeof(env_to), "SECKILL_IDGEN_TIMEOUT_MS=%s", timeout);
    const char *env[] = {env_port, env_url, env_tags, env_to, "SECKILL_JWT_SECRET=" SECRET, NULL};
    const char *argv[] = {tu_cli_path(), "serve", NULL};
    sk_test_spawn_opts o = {.env = env, .clean_env = 1, .death_sig = SIGKILL,
                            .out_path = s->log, .err_path = s->log, .null_stdin = 1};
    s->pid = sk_test_spawn(argv, &o);
    assert_true(s->pid > 0);
    int64_t deadline = sk_test_now_ms() + 20000;
    while (!sk_test_log_has(s->log, "event=listening")) {
        if (sk_test_now_ms() > deadline)
            fail_msg("idgen serve did not listen within 20 s (log %s)", s->log);
        sk_test_pause_ms(20);
    }
}

/* One request on its own connection. @returns the status; the body into body. */
static int http_get(const server *s, const char *method, const char *path, const char *tok,
                    char *body, size_t bodysz)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char req[2048];
    int n = snprintf(req, sizeof(req),
                     "%s %s HTTP/1.1\r\nHost: x\r\n%s%s%sConnection: close\r\n\r\n", method, path,
                     tok ? "Authorization: Bearer " : "", tok ? tok : "", tok ? "\r\n" : "");
    assert_int_equal(send(fd, req, (size_t)n, 0), n);
    static char resp[1 << 20];
    size_t len = 0;
    ssize_t k;
    while ((k = recv(fd, resp + len, sizeof(resp) - 1 - len, 0)) > 0)
        len += (size_t)k;
    close(fd);
    resp[len] = 0;
    int status = 0;
    sscanf(resp, "HTTP/1.1 %d", &status);
    const char *b = strstr(resp, "\r\n\r\n");
    snprintf(body, bodysz, "%s", b ? b + 4 : "");
    return status;
}

static int stop(server *s)
{
    kill(s->pid, SIGTERM);
    int st = sk_test_proc_stop(s->pid, 0, 10000);
    unlink(s->log);
    return st;
}

static void check_id_now(uint64_t id)
{
    idgen_parts p;
    assert_int_equal(idgen_decode(id, &p), IDGEN_OK);
    int64_t now = (int64_t)time(NULL);
    assert_true(p.unix_seconds > now - 60 && p.unix_seconds <= now + 10);
}

static void test_contract(void **state)
{
    (void)state;
    if (!tu_shared_url())
        skip();
    char tag[64], tags[160], path[256];
    snprintf(tag, sizeof(tag), "it%dserve", (int)getpid());
    snprintf(tags, sizeof(tags), "%s,%s-b", tag, tag);
    assert_true(sk_jwt_mint((const unsigned char *)SECRET, strlen(SECRET), 7, 0,
                            (int64_t)time(NULL) + 600, token, sizeof(token)) > 0);
    server s;
    server_start(&s, tu_shared_url(), tags, "1000");
    static char body[1 << 20];

    assert_int_equal(http_get(&s, "GET", "/healthz", NULL, body, sizeof(body)), 200);
    /* One ID, as text. */
    snprintf(path, sizeof(path), "/api/segment/get/%s", tag);
    assert_int_equal(http_get(&s, "GET", path, token, body, sizeof(body)), 200);
    uint64_t seg1;
    assert_int_equal(sk_id_parse_str(body, 0, INT64_MAX, &seg1), 0);
    check_id_now(seg1);
    snprintf(path, sizeof(path), "/api/snowflake/get/%s", tag);
    assert_int_equal(http_get(&s, "GET", path, token, body, sizeof(body)), 200);
    uint64_t snow;
    assert_int_equal(sk_id_parse_str(body, 0, INT64_MAX, &snow), 0);
    check_id_now(snow);
    int worker;
    assert_int_equal(idgen_worker_decode(snow, NULL, &worker, NULL), IDGEN_OK);
    /* A batch: {"ids":["..",..]}, all unique. */
    for (int mode = 0; mode < 2; mode++) {
        snprintf(path, sizeof(path), "/api/%s/batch/%s?count=1000",
                 mode ? "snowflake" : "segment", tag);
        assert_int_equal(http_get(&s, "GET", path, token, body, sizeof(body)), 200);
        assert_true(strncmp(body, "{\"ids\":[\"", 9) == 0);
        uint64_t ids[1001];
        size_t n = 0;
        for (char *p = body + 8; *p == '"' && n < 1001;) {
            char *end;
            ids[n++] = strtoull(p + 1, &end, 10);
            assert_true(*end == '"');
            p = end + 1;
            if (*p == ',')
                p++;
        }
        assert_int_equal(n, 1000);
        for (size_t i = 0; i < n; i++)
            check_id_now(ids[i]);
        ids[n++] = mode ? snow : seg1;
        assert_int_equal(tu_count_dups(ids, n), 0);
    }

    /* Refusals. */
    struct {
        const char *method, *before, *after; /* the path: before, the tag, after */
        int with_token, status;
        const char *error;
    } bad[] = {
        {"GET", "/api/segment/get/", "", 0, 401, "unauthorized"},
        {"GET", "/api/segment/get/bad$tag", "", 1, 400, "bad_request"},
        {"GET", "/api/segment/get/", "/x", 1, 400, "bad_request"},
        {"GET", "/api/segment/batch/", "?count=0", 1, 400, "bad_request"},
        {"GET", "/api/segment/batch/", "?count=1001", 1, 400, "bad_request"},
        {"GET", "/api/snowflake/batch/", "?count=abc", 1, 400, "bad_request"},
        {"GET", "/api/segment/batch/", "", 1, 400, "bad_request"},
        {"GET", "/api/segment/batch/", "?count=5&count=6", 1, 400, "bad_request"},
        {"GET", "/api/segment/get/", "nope", 1, 404, "unknown_tag"},
        {"GET", "/api/snowflake/get/", "nope", 1, 404, "unknown_tag"},
        {"GET", "/api/other/", "", 1, 404, "not_found"},
        {"POST", "/api/segment/get/", "", 1, 405, "method_not_allowed"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(path, sizeof(path), "%s%s%s", bad[i].before, tag, bad[i].after);
        int st = http_get(&s, bad[i].method, path, bad[i].with_token ? token : NULL, body,
                          sizeof(body));
        char want[64];
        snprintf(want, sizeof(want), "\"error\":\"%s\"", bad[i].error);
        if (st != bad[i].status || !strstr(body, want))
            fail_msg("%s %s: %d %s, want %d %s", bad[i].method, path, st, body, bad[i].status,
                     want);
    }
    /* A bad token. */
    snprintf(path, sizeof(path), "/api/segment/get/%s", tag);
    assert_int_equal(http_get(&s, "GET", path, "x.y.z", body, sizeof(body)), 401);

    assert_int_equal(http_get(&s, "GET", "/metrics", NULL, body, sizeof(body)), 200);
    char want[200];
    snprintf(want, sizeof(want), "idgen_serve_ids_total{tag=\"%s\",mode=\"segment\"} 1001", tag);
    assert_non_null(strstr(body, want));
    assert_non_null(strstr(body, "idgen_serve_replies_total{code=\"401\"} 2"));

    /* SIGTERM: a clean exit, the worker id released (the lowest is free again). */
    int64_t t0 = sk_test_now_ms();
    assert_int_equal(stop(&s), 0);
    assert_true(sk_test_now_ms() - t0 < 5000);
    char err[256];
    idgen_worker_t *w = idgen_worker_new(tu_shared_url(), tag, NULL, err, sizeof(err));
    assert_non_null(w);
    assert_int_equal(idgen_worker_id(w), worker);
    idgen_worker_free(w);
    tu_cleanup(tu_shared_url(), tag);
}

static void test_redis_down(void **state)
{
    (void)state;
    char url[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", sk_test_free_port());
    server s;
    server_start(&s, url, "down", "300");
    static char body[4096];
    const char *paths[] = {"/api/segment/get/down", "/api/snowflake/get/down",
                           "/api/segment/batch/down?count=10"};
    for (size_t i = 0; i < 3; i++) {
        int64_t t0 = sk_test_now_ms();
        int st = http_get(&s, "GET", paths[i], token, body, sizeof(body));
        int64_t took = sk_test_now_ms() - t0;
        if (st != 503 || !strstr(body, "\"error\":\"unavailable\""))
            fail_msg("%s with Redis down: %d %s", paths[i], st, body);
        assert_true(took < 3000); /* the timeout (300 ms), plus a connect, not a hang */
    }
    assert_int_equal(stop(&s), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contract),
        cmocka_unit_test(test_redis_down),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
