/* Fencing tokens. 4 processes x 2,500 acquisitions of one lock: under the lock each
 * checks its token against the last one written and writes its own, so every token is
 * strictly greater than the one before it in grant order. Then Martin Kleppmann's case
 * against PostgreSQL: a holder pauses past its lease, another takes the lock with a newer
 * token and writes; the paused one's write carries the older token and is refused by a
 * conditional UPDATE (`... WHERE fence < $token`). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlock_test_util.h"
#include "sk_test_redis.h"

#define PROCS 4
#define ITERS 2500

struct run {
    const char *url;
    char name[128];
    char last_key[192];
};

static int child(int i, void *arg)
{
    struct run *run = arg;
    const char *url = run->url;
    redisContext *rc = rt_connect(url);
    rlock_client_t *c = rt_client(url, 0, 0, 0);
    rlock_t *l = rlock_new(c, run->name, RLOCK_SIMPLE);
    int bad = 0;
    for (int k = 0; k < ITERS && !bad; k++) {
        uint64_t fence = 0;
        if (rlock_lock(l, 10000, &fence) != 0) {
            bad = 2;
            break;
        }
        redisReply *r = redisCommand(rc, "GET %s", run->last_key);
        unsigned long long last = r && r->type == REDIS_REPLY_STRING ? strtoull(r->str, NULL, 10) : 0;
        if (r)
            freeReplyObject(r);
        if (fence <= last) {
            fprintf(stderr, "child %d: token %llu after %llu\n", i, (unsigned long long)fence, last);
            bad = 3;
        }
        r = redisCommand(rc, "SET %s %llu", run->last_key, (unsigned long long)fence);
        if (r)
            freeReplyObject(r);
        r = redisCommand(rc, "INCR %s:n", run->last_key);
        if (r)
            freeReplyObject(r);
        if (rlock_unlock(l) != 0)
            bad = 4;
    }
    rlock_free(l);
    rlock_client_free(c);
    redisFree(rc);
    return bad;
}

/* On a private server without AOF: 10,000 lock round trips would wait on the shared
 * server's fsync of every write. */
static void test_tokens_strictly_increase(void **state)
{
    (void)state;
    char err[256];
    const char *const noaof[] = {"--appendonly", "no", NULL};
    sk_test_redis *srv = sk_test_redis_start(noaof, err, sizeof(err));
    if (srv == NULL)
        fail_msg("sk_test_redis_start: %s", err);
    struct run run;
    run.url = sk_test_redis_url(srv);
    rt_name(run.name, sizeof(run.name), "fence");
    snprintf(run.last_key, sizeof(run.last_key), "rlock:{%s}:last", run.name);
    assert_int_equal(rt_fork_all(PROCS, child, &run), 0);
    redisContext *raw = rt_connect(run.url);
    /* every acquisition ran, and the last grant's token is the counter's value (tokens
     * are the larger of the last + 1 and the server's clock in µs: lua/rlock_fence.lua) */
    assert_int_equal(rt_int(raw, "GET %s:n", run.last_key), PROCS * ITERS);
    assert_true(rt_int(raw, "GET %s", run.last_key) > 0);
    assert_int_equal(rt_int(raw, "GET %s", run.last_key), rt_int(raw, "GET rlock:{%s}:fence", run.name));
    redisFree(raw);
    sk_test_redis_free(srv);
}

static PGresult *exec_ok(PGconn *db, const char *sql)
{
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQerrorMessage(db));
    return r;
}

/* The storage side of fencing: accept a write only with a token newer than the last
 * accepted one. @returns rows updated (1 accepted, 0 refused). */
static int fenced_write(PGconn *db, const char *resource, uint64_t fence, const char *value)
{
    char tok[24];
    snprintf(tok, sizeof(tok), "%llu", (unsigned long long)fence);
    const char *params[3] = {resource, /* $1 the guarded row */
                             tok,      /* $2 the writer's fencing token */
                             value};   /* $3 the new value */
    PGresult *r = PQexecParams(db,
                               "UPDATE rlock_fence_demo SET fence = $2::bigint, value = $3 "
                               "WHERE resource = $1 AND fence < $2::bigint",
                               3, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        fail_msg("fenced update: %s", PQerrorMessage(db));
    int n = atoi(PQcmdTuples(r));
    PQclear(r);
    return n;
}

static void test_postgres_refuses_stale_token(void **state)
{
    (void)state;
    const char *pg = getenv("SECKILL_PG");
    if (rt_redis_url() == NULL || pg == NULL || *pg == '\0')
        skip();
    PGconn *db = PQconnectdb(pg);
    if (PQstatus(db) != CONNECTION_OK)
        fail_msg("postgres: %s", PQerrorMessage(db));
    PQclear(exec_ok(db, "SET client_min_messages = warning"));
    PQclear(exec_ok(db, "CREATE TABLE IF NOT EXISTS rlock_fence_demo (resource text PRIMARY KEY, "
                        "fence bigint NOT NULL, value text)"));
    char name[128];
    rt_name(name, sizeof(name), "pgfence");
    const char *p1[1] = {name};
    PQclear(PQexecParams(db, "INSERT INTO rlock_fence_demo (resource, fence, value) VALUES ($1, 0, '')", 1,
                         NULL, p1, NULL, NULL, 0));

    rlock_client_t *c = rt_client(rt_redis_url(), 0, 0, 0);
    rlock_t *a = rlock_new(c, name, RLOCK_SIMPLE), *b = rlock_new(c, name, RLOCK_SIMPLE);
    uint64_t ta, tb;
    assert_int_equal(rlock_try_lock(a, 0, 300, &ta), 0);
    assert_int_equal(fenced_write(db, name, ta, "a1"), 1); /* a's first write goes in */
    /* a pauses (GC, swap, SIGSTOP...) past its 300 ms lease; b takes the lock */
    assert_int_equal(rlock_try_lock(b, 5000, 10000, &tb), 0);
    assert_true(tb > ta);
    assert_int_equal(fenced_write(db, name, tb, "b1"), 1);
    /* a wakes up, still believing it holds the lock, and writes: refused */
    assert_false(rlock_is_held(a)); /* (a careful holder would have checked) */
    assert_int_equal(fenced_write(db, name, ta, "a2"), 0);
    PGresult *r = PQexecParams(db, "SELECT fence, value FROM rlock_fence_demo WHERE resource = $1", 1, NULL, p1,
                               NULL, NULL, 0);
    assert_int_equal(PQntuples(r), 1);
    assert_int_equal(strtoull(PQgetvalue(r, 0, 0), NULL, 10), tb);
    assert_string_equal(PQgetvalue(r, 0, 1), "b1");
    PQclear(r);
    assert_int_equal(rlock_unlock(a), RLOCK_ERR_NOT_HELD);
    assert_int_equal(rlock_unlock(b), 0);

    PQclear(PQexecParams(db, "DELETE FROM rlock_fence_demo WHERE resource = $1", 1, NULL, p1, NULL, NULL, 0));
    PQfinish(db);
    redisContext *raw = rt_connect(rt_redis_url());
    rt_int(raw, "DEL rlock:{%s}:fence", name);
    redisFree(raw);
    rlock_free(a);
    rlock_free(b);
    rlock_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokens_strictly_increase),
        cmocka_unit_test(test_postgres_refuses_stale_token),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
