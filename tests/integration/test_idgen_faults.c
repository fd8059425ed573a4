/* Integration: Redis failures while IDs are being generated, on throwaway servers.
 * - Redis stopped mid-run: calls fail with IDGEN_ERR_REDIS, each within timeout_ms (no
 *   made-up ID), and generation resumes by itself after a restart; 0 duplicates.
 * - Redis killed (SIGKILL) and restarted from its AOF (appendfsync always) mid-run:
 *   0 duplicates, no reset (the AOF kept every increment).
 * - The day's counter deleted mid-run: the reset is detected and reported, and no number
 *   is reused by that generator; 0 duplicates.
 * - WAIT for a replica after each lease (opts.wait_replicas): refused without one,
 *   accepted with one, refused again when it goes away.
 * Each case runs an incr-mode and a segment-mode generator, two threads each. */
#include "test_idgen_util.h"

#include "idgen_core.h"
#include "sk_test_redis.h"

#define THREADS 2
#define TIMEOUT_MS 500

/* The server of the running test, stopped by the teardown even when a check fails
 * half-way (cmocka jumps out of the test). */
static sk_test_redis *current_server;

static int teardown(void **state)
{
    (void)state;
    sk_test_redis_free(current_server);
    current_server = NULL;
    return 0;
}

typedef struct run {
    sk_test_redis *r;
    idgen_t *g[2]; /* [0] incr, [1] segment */
    tu_gen_thread t[2][THREADS];
} run;

static void run_start(run *x, const char *const *redis_args)
{
    char err[256];
    x->r = sk_test_redis_start(redis_args, err, sizeof(err));
    if (!x->r)
        fail_msg("%s", err);
    current_server = x->r;
    for (int m = 0; m < 2; m++) {
        idgen_opts o;
        idgen_opts_init(&o);
        o.mode = m ? IDGEN_MODE_SEGMENT : IDGEN_MODE_INCR;
        o.timeout_ms = TIMEOUT_MS;
        o.segment_min = 50;
        o.segment_max = 2000;
        x->g[m] = idgen_new(sk_test_redis_url(x->r), m ? "seg" : "incr", &o, err, sizeof(err));
        if (!x->g[m])
            fail_msg("%s", err);
        for (int i = 0; i < THREADS; i++)
            tu_gen_start(&x->t[m][i], x->g[m], 2000000);
    }
}

static size_t collected(run *x, int m)
{
    size_t n = 0;
    for (int i = 0; i < THREADS; i++)
        n += atomic_load(&x->t[m][i].n);
    return n;
}

static uint64_t errors(run *x, int m)
{
    uint64_t n = 0;
    for (int i = 0; i < THREADS; i++)
        n += atomic_load(&x->t[m][i].errors);
    return n;
}

/* Waits until both generators have handed out `more` IDs past `base`. */
typedef struct progress {
    run *x;
    size_t base[2], more;
} progress;

static int progressed(void *arg)
{
    progress *p = arg;
    return collected(p->x, 0) >= p->base[0] + p->more && collected(p->x, 1) >= p->base[1] + p->more;
}

static void wait_progress(run *x, size_t more, const char *what)
{
    progress p = {x, {collected(x, 0), collected(x, 1)}, more};
    if (!tu_wait_for(progressed, &p, 30000))
        fail_msg("no progress %s: incr %zu ids %llu errors (%s), segment %zu ids %llu errors (%s)",
                 what, collected(x, 0), (unsigned long long)errors(x, 0), x->t[0][0].last_err,
                 collected(x, 1), (unsigned long long)errors(x, 1), x->t[1][0].last_err);
}

typedef struct err_wait {
    run *x;
    uint64_t base[2];
} err_wait;

static int both_failing(void *arg)
{
    err_wait *e = arg;
    return errors(e->x, 0) > e->base[0] && errors(e->x, 1) > e->base[1];
}

/* Stops the threads; checks 0 duplicates per generator (each has its own prefix, so
 * its own counter: uniqueness holds within a prefix). @returns resets reported. */
static uint64_t run_finish(run *x, uint64_t *stats_resets)
{
    uint64_t resets = 0;
    size_t dups[2] = {0, 0};
    *stats_resets = 0;
    for (int m = 0; m < 2; m++) {
        size_t total = 0;
        for (int i = 0; i < THREADS; i++) {
            tu_gen_stop(&x->t[m][i]);
            total += x->t[m][i].n;
            resets += x->t[m][i].resets;
            if (x->t[m][i].other_errors)
                fail_msg("unexpected error: %s", x->t[m][i].last_err);
        }
        uint64_t *all = malloc((total ? total : 1) * sizeof(uint64_t));
        size_t k = 0;
        for (int i = 0; i < THREADS; i++) {
            memcpy(all + k, x->t[m][i].ids, x->t[m][i].n * sizeof(uint64_t));
            k += x->t[m][i].n;
            free(x->t[m][i].ids);
        }
        dups[m] = tu_count_dups(all, k);
        free(all);
        idgen_stats st;
        idgen_get_stats(x->g[m], &st);
        *stats_resets += st.resets;
        idgen_free(x->g[m]);
    }
    sk_test_redis_free(x->r);
    current_server = NULL;
    assert_int_equal(dups[0], 0);
    assert_int_equal(dups[1], 0);
    return resets;
}

static void test_redis_stopped(void **state)
{
    (void)state;
    run x;
    run_start(&x, (const char *const[]){"--appendfsync", "always", NULL});
    wait_progress(&x, 500, "before the stop");
    sk_test_redis_stop(x.r, SIGTERM);
    err_wait e = {&x, {errors(&x, 0), errors(&x, 1)}};
    assert_true(tu_wait_for(both_failing, &e, 10000));
    /* Every failing call came back within timeout_ms (slack for ASan on 2 busy cores). */
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < THREADS; i++)
            assert_true(atomic_load(&x.t[m][i].max_fail_ms) <= TIMEOUT_MS + 1000);
    char err[256];
    if (sk_test_redis_restart(x.r, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    wait_progress(&x, 500, "after the restart"); /* resumes by itself */
    uint64_t st_resets;
    assert_int_equal(run_finish(&x, &st_resets), 0);
    assert_int_equal(st_resets, 0); /* a clean stop lost nothing */
}

static void test_redis_killed_aof(void **state)
{
    (void)state;
    run x;
    run_start(&x, (const char *const[]){"--appendfsync", "always", NULL});
    wait_progress(&x, 500, "before the kill");
    sk_test_redis_stop(x.r, SIGKILL); /* a crash: only the AOF survives */
    char err[256];
    if (sk_test_redis_restart(x.r, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    wait_progress(&x, 500, "after the restart");
    uint64_t st_resets;
    assert_int_equal(run_finish(&x, &st_resets), 0);
    assert_int_equal(st_resets, 0); /* appendfsync always: no increment was lost */
}

static void test_counter_deleted(void **state)
{
    (void)state;
    run x;
    run_start(&x, NULL);
    wait_progress(&x, 3000, "before the delete");
    /* Remember the highest number each generator handed out so far. */
    uint32_t high[2] = {0, 0};
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < THREADS; i++) {
            size_t mark = atomic_load(&x.t[m][i].n);
            for (size_t j = 0; j < mark; j++)
                if ((uint32_t)x.t[m][i].ids[j] > high[m])
                    high[m] = (uint32_t)x.t[m][i].ids[j];
        }
    /* Redis "loses" both counters (as a restart without persistence would). */
    redisContext *c = tu_connect(sk_test_redis_url(x.r));
    assert_non_null(c);
    redisReply *r = redisCommand(c, "KEYS icr:*");
    assert_non_null(r);
    for (size_t i = 0; i < r->elements; i++) {
        redisReply *d = redisCommand(c, "DEL %s", r->element[i]->str);
        freeReplyObject(d);
    }
    freeReplyObject(r);
    redisFree(c);
    /* Both generators report it ... */
    int64_t deadline = sk_test_now_ms() + 30000;
    for (;;) {
        uint64_t r0 = 0, r1 = 0;
        for (int i = 0; i < THREADS; i++) {
            r0 += atomic_load(&x.t[0][i].resets);
            r1 += atomic_load(&x.t[1][i].resets);
        }
        if (r0 && r1)
            break;
        if (sk_test_now_ms() > deadline)
            fail_msg("reset not reported: incr %llu, segment %llu", (unsigned long long)r0,
                     (unsigned long long)r1);
        sk_test_pause_ms(2);
    }
    /* ... and nothing handed out after the report reuses a number. Each thread goes on
     * for 600 more IDs; from 100 past the report every number must be above what was
     * handed out before the delete. (The 100 leave room for numbers that are legitimately
     * older: up to 64 left in a thread's chunk, a reply that was in flight.) Only IDs of
     * the first day are compared: a run straddling midnight starts a new counter. */
    size_t at_report[2][THREADS];
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < THREADS; i++)
            at_report[m][i] = atomic_load(&x.t[m][i].n);
    deadline = sk_test_now_ms() + 30000;
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < THREADS; i++)
            while (atomic_load(&x.t[m][i].n) < at_report[m][i] + 600) {
                if (sk_test_now_ms() > deadline)
                    fail_msg("generator %d thread %d stalled after the reset: %s", m, i,
                             x.t[m][i].last_err);
                sk_test_pause_ms(2);
            }
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < THREADS; i++) {
            tu_gen_thread *t = &x.t[m][i];
            size_t n = atomic_load(&t->n);
            idgen_parts p0;
            idgen_decode(t->ids[0], &p0);
            for (size_t j = at_report[m][i] + 100; j < n; j++) {
                idgen_parts p;
                idgen_decode(t->ids[j], &p);
                if (p.unix_seconds / 86400 == p0.unix_seconds / 86400 && p.sequence <= high[m])
                    fail_msg("generator %d thread %d reissued %u (<= %u, handed out before "
                             "the delete)",
                             m, i, p.sequence, high[m]);
            }
        }
    uint64_t st_resets;
    assert_true(run_finish(&x, &st_resets) >= 2);
    assert_true(st_resets >= 2);
}

static int replica_linked(void *arg)
{
    redisContext *c = tu_connect(sk_test_redis_url(arg));
    if (!c)
        return 0;
    redisReply *r = redisCommand(c, "INFO replication");
    int ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "connected_slaves:1") &&
             strstr(r->str, "state=online");
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return ok;
}

/* wait_ms: WAIT's own timeout. 50 ms where no replica exists (refused fast); 2 s where one
 * does, so that a loaded machine's slow acknowledgement is not taken for a missing one. */
static idgen_t *make_waiting(const char *url, idgen_mode mode, int wait_ms)
{
    idgen_opts o;
    idgen_opts_init(&o);
    o.mode = mode;
    o.timeout_ms = TIMEOUT_MS;
    o.wait_replicas = 1;
    o.wait_timeout_ms = wait_ms;
    o.segment_min = 50;
    char err[256];
    idgen_t *g = idgen_new(url, "wait", &o, err, sizeof(err));
    if (!g)
        fail_msg("%s", err);
    return g;
}

/* WAIT after each lease: without the replica's acknowledgement no number is handed out. */
static void test_wait_replicas(void **state)
{
    (void)state;
    char err[256];
    current_server = sk_test_redis_start(NULL, err, sizeof(err));
    if (!current_server)
        fail_msg("%s", err);
    const char *url = sk_test_redis_url(current_server);
    uint64_t id;
    /* No replica: every lease is refused, in both modes, within the timeout. */
    for (int m = 0; m < 2; m++) {
        idgen_t *g = make_waiting(url, m ? IDGEN_MODE_SEGMENT : IDGEN_MODE_INCR, 50);
        int64_t t0 = sk_test_now_ms();
        assert_int_equal(idgen_next(g, &id), IDGEN_ERR_REDIS);
        assert_true(sk_test_now_ms() - t0 <= TIMEOUT_MS + 1000);
        assert_non_null(strstr(idgen_errstr(g), "WAIT"));
        idgen_free(g);
    }
    /* A replica: leases go through. */
    char port[16];
    snprintf(port, sizeof(port), "%d", sk_test_redis_port(current_server));
    sk_test_redis *replica =
        sk_test_redis_start((const char *const[]){"--replicaof", "127.0.0.1", port, NULL}, err,
                            sizeof(err));
    if (!replica)
        fail_msg("%s", err);
    int linked = tu_wait_for(replica_linked, current_server, 20000);
    idgen_t *g[2] = {make_waiting(url, IDGEN_MODE_INCR, 2000),
                      make_waiting(url, IDGEN_MODE_SEGMENT, 2000)};
    int rc[2] = {IDGEN_OK, IDGEN_OK};
    for (int m = 0; m < 2 && linked; m++)
        for (int i = 0; i < 200 && rc[m] == IDGEN_OK; i++)
            rc[m] = idgen_next(g[m], &id);
    /* The replica goes away: refused again (the segment generator first serves what it
     * holds, all of it acknowledged). */
    sk_test_redis_free(replica);
    int rc_after = idgen_next(g[0], &id);
    idgen_free(g[0]);
    idgen_free(g[1]);
    assert_true(linked);
    assert_int_equal(rc[0], IDGEN_OK);
    assert_int_equal(rc[1], IDGEN_OK);
    assert_int_equal(rc_after, IDGEN_ERR_REDIS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_redis_stopped, teardown),
        cmocka_unit_test_teardown(test_redis_killed_aof, teardown),
        cmocka_unit_test_teardown(test_counter_deleted, teardown),
        cmocka_unit_test_teardown(test_wait_replicas, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
