/* test_redis_sentinel: redis-sentinel:// URLs (common/sk_redis_sentinel.c) through
 * rcluster's blocking and async contexts, on a throwaway set from deploy/sentinel.sh
 * (1 master, 2 replicas, 3 sentinels, down-after-milliseconds 1000): the master found
 * and checked, refusals with a clear error, and a blocking and an async context that
 * follow a failover (SENTINEL FAILOVER: the sentinels reconfigure the old master with
 * CLIENT KILL TYPE normal, so both see a lost connection and ask the sentinels again;
 * the -READONLY path, for a client that reaches a demoted master anyway, is
 * sk_redis_reply_is_readonly's, unit-tested in test_sk_config.c). Issue 33. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "idgen.h"
#include "rcluster.h"
#include "rlock.h"

static char g_dir[256], g_url[256], g_src[512];
static int g_base;
static const struct timeval TV = {1, 0};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms) { usleep((useconds_t)ms * 1000); }

/* One line of a shell command's output into out (trailing newline cut). */
static int sh_line(const char *cmd, char *out, size_t outsz)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    out[0] = '\0';
    if (!fgets(out, (int)outsz, p))
        out[0] = '\0';
    out[strcspn(out, "\n")] = '\0';
    return pclose(p) == 0 ? 0 : -1;
}

/* A direct command to one port (no sentinel), its reply or NULL. */
static redisReply *direct(int port, const char *fmt, const char *arg)
{
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, TV);
    if (!c || c->err) {
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, TV);
    redisReply *r = arg ? redisCommand(c, fmt, arg) : redisCommand(c, fmt);
    redisFree(c);
    return r;
}

static int master_port(void)
{
    redisReply *r = direct(g_base + 3, "SENTINEL get-master-addr-by-name seckill", NULL);
    int p = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? atoi(r->element[1]->str) : -1;
    freeReplyObject(r);
    return p;
}

static int is_replica(int port)
{
    redisReply *r = direct(port, "ROLE", NULL);
    int yes = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
              strcmp(r->element[0]->str, "slave") == 0;
    freeReplyObject(r);
    return yes;
}

/* SENTINEL FAILOVER, then waits (30 s) until the old master is a replica of the new one.
 * @returns the new master's port. */
static int failover(void)
{
    int old = master_port();
    assert_true(old > 0);
    redisReply *r = direct(g_base + 3, "SENTINEL FAILOVER seckill", NULL);
    assert_non_null(r);
    assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    int64_t end = now_ms() + 30000;
    while (now_ms() < end && (master_port() == old || !is_replica(old)))
        sleep_ms(100);
    assert_int_not_equal(master_port(), old);
    assert_true(is_replica(old));
    return master_port();
}

static int set_up(void **state)
{
    (void)state;
    const char *src = getenv("SECKILL_SOURCE_DIR");
    snprintf(g_src, sizeof(g_src), "%s", src ? src : ".");
    if (system("command -v redis-sentinel >/dev/null") != 0) {
        fprintf(stderr, "redis-sentinel is not installed: skipped\n");
        exit(77);
    }
    char cmd[2048], line[64];
    snprintf(cmd, sizeof(cmd), "bash -c '. \"%s/deploy/lib.sh\"; sk_free_ports 6'", g_src);
    if (sh_line(cmd, line, sizeof(line)) != 0 || (g_base = atoi(line)) <= 0)
        return -1;
    snprintf(g_dir, sizeof(g_dir), "/tmp/seckill-sentinel-test.%d", (int)getpid());
    snprintf(cmd, sizeof(cmd), "SENTINEL_DOWN_AFTER_MS=1000 \"%s/deploy/sentinel.sh\" up %s %d",
             g_src, g_dir, g_base);
    return sh_line(cmd, g_url, sizeof(g_url));
}

static int tear_down(void **state)
{
    (void)state;
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "\"%s/deploy/sentinel.sh\" down %s; rm -rf %s", g_src, g_dir, g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The master found and used; a name the sentinels do not know, and no sentinel at all,
 * refused with what went wrong; a dead sentinel first in the list is skipped. */
static void test_connect_and_refusals(void **state)
{
    (void)state;
    char err[256] = "", url[512];
    rcl_ctx *c = rcl_connect(g_url, TV, err, sizeof(err));
    if (!c)
        fail_msg("rcl_connect %s: %s", g_url, err);
    const char *set[3] = {"SET", "sentinel:k", "v1"};
    redisReply *r = rcl_command_argv(c, 3, set, NULL);
    assert_non_null(r);
    assert_string_equal(r->str, "OK");
    freeReplyObject(r);
    char want[64];
    snprintf(want, sizeof(want), "127.0.0.1:%d", master_port());
    assert_string_equal(rcl_master_addr(c, 0), want);
    rcl_free(c);
    r = direct(master_port(), "GET %s", "sentinel:k");
    assert_string_equal(r->str, "v1");
    freeReplyObject(r);

    snprintf(url, sizeof(url), "redis-sentinel://127.0.0.1:%d/nosuchmaster", g_base + 3);
    assert_null(rcl_connect(url, TV, err, sizeof(err)));
    assert_non_null(strstr(err, "no master named nosuchmaster"));
    assert_null(rcl_connect("redis-sentinel://127.0.0.1:1/seckill", TV, err, sizeof(err)));
    assert_non_null(strstr(err, "sentinel 127.0.0.1:1"));
    snprintf(url, sizeof(url), "redis-sentinel://127.0.0.1:1,127.0.0.1:%d/seckill", g_base + 4);
    c = rcl_connect(url, TV, err, sizeof(err));
    if (!c)
        fail_msg("a dead first sentinel was not skipped: %s", err);
    rcl_free(c);
}

typedef struct async_state {
    int sent, acked, errors; /* SET sentinel:as <n>: the last n answered OK */
} async_state;

static void on_set(rcl_async *ac, redisReply *reply, void *priv)
{
    (void)ac;
    async_state *s = ((void **)priv)[0];
    int n = (int)(intptr_t)((void **)priv)[1];
    free(priv);
    if (reply && reply->type == REDIS_REPLY_STATUS && n > s->acked)
        s->acked = n;
    else if (!reply || reply->type == REDIS_REPLY_ERROR)
        s->errors++;
}

/* Runs the loop for ms, sending one SET every 50 ms when ready. */
static void async_run(struct event_base *base, rcl_async *ac, async_state *s, int ms)
{
    int64_t end = now_ms() + ms;
    while (now_ms() < end) {
        if (rcl_async_ready(ac)) {
            char v[16];
            void **priv = malloc(2 * sizeof(void *));
            priv[0] = s;
            priv[1] = (void *)(intptr_t)++s->sent;
            snprintf(v, sizeof(v), "%d", s->sent);
            const char *argv[3] = {"SET", "sentinel:as", v};
            if (rcl_async_command_argv(ac, on_set, priv, 3, argv, NULL) != 0) {
                free(priv);
                s->sent--;
            }
        }
        struct timeval tv = {0, 50000};
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
    }
}

/* libidgen and librlock take the URL as they take a plain one (both connect through
 * rcluster's pass-through contexts, hence through common/sk_redis_sentinel.c). */
static void test_idgen_and_rlock(void **state)
{
    (void)state;
    char err[256] = "";
    idgen_t *g = idgen_new(g_url, "sentinel", NULL, err, sizeof(err));
    if (!g)
        fail_msg("idgen_new: %s", err);
    uint64_t a = 0, b = 0;
    assert_int_equal(idgen_next(g, &a), IDGEN_OK);
    assert_int_equal(idgen_next(g, &b), IDGEN_OK);
    assert_true(b > a);
    idgen_free(g);
    rlock_client_t *c = rlock_client_new(g_url, NULL, err, sizeof(err));
    if (!c)
        fail_msg("rlock_client_new: %s", err);
    rlock_t *l = rlock_new(c, "sentinel:lock", RLOCK_SIMPLE);
    assert_non_null(l);
    uint64_t fence = 0;
    assert_int_equal(rlock_lock(l, 5000, &fence), 0);
    redisReply *r = direct(master_port(), "EXISTS %s", "rlock:{sentinel:lock}");
    assert_non_null(r);
    assert_int_equal(r->integer, 1); /* held on the master */
    freeReplyObject(r);
    assert_int_equal(rlock_unlock(l), 0);
    rlock_free(l);
    rlock_client_free(c);
}

/* Both kinds of context follow one failover (one, to keep the test short: each takes
 * seconds). The blocking one, opened before, loses its connection to the demoted master
 * and re-runs its write on the new one: the caller sees OK, the new master holds it. The
 * async one's writes acknowledged after the failover land on the new master
 * (+switch-master or the lost connection, then the sentinels again). */
static void test_contexts_follow_failover(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    char err[256] = "";
    rcl_ctx *c = rcl_connect(g_url, TV, err, sizeof(err));
    assert_non_null(c);
    const char *set1[3] = {"SET", "sentinel:ro", "before"};
    redisReply *r = rcl_command_argv(c, 3, set1, NULL);
    assert_non_null(r);
    freeReplyObject(r);
    rcl_async *ac = rcl_async_connect(g_url, base, TV, err, sizeof(err));
    assert_non_null(ac);
    async_state s = {0};
    async_run(base, ac, &s, 500);
    assert_true(s.acked > 0);
    int now = failover();

    const char *set2[3] = {"SET", "sentinel:ro", "after"};
    r = rcl_command_argv(c, 3, set2, NULL);
    if (!r || r->type == REDIS_REPLY_ERROR)
        fail_msg("blocking SET after the failover: %s", r ? r->str : rcl_errstr(c));
    freeReplyObject(r);
    r = direct(now, "GET %s", "sentinel:ro");
    assert_non_null(r);
    assert_string_equal(r->str, "after");
    freeReplyObject(r);
    rcl_free(c);

    int at_failover = s.sent;
    int64_t end = now_ms() + 15000;
    while (now_ms() < end && s.acked <= at_failover + 5)
        async_run(base, ac, &s, 200);
    if (s.acked <= at_failover + 5)
        fail_msg("no write acknowledged after the failover (sent %d, acked %d, errors %d: %s)",
                 s.sent, s.acked, s.errors, rcl_async_errstr(ac));
    async_run(base, ac, &s, 200);
    r = direct(now, "GET %s", "sentinel:as");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    /* the new master holds at least the last write acknowledged */
    if (atoi(r->str) < s.acked)
        fail_msg("the new master holds %s, %d was acknowledged", r->str, s.acked);
    freeReplyObject(r);
    rcl_async_free(ac);
    event_base_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connect_and_refusals),
        cmocka_unit_test(test_idgen_and_rlock),
        cmocka_unit_test(test_contexts_follow_failover),
    };
    return cmocka_run_group_tests(tests, set_up, tear_down);
}
