/* Integration: worker mode (seckill::idgen_worker) on the shared Redis, each test with a
 * prefix of its own.
 * - 8 workers, a thread each: 8 distinct worker ids, every ID unique, its worker field the
 *   worker's.
 * - Leases lost and retaken: 8 workers issuing; the locks of 4 deleted under them; 4 new
 *   workers start and take those ids; the 4 that lost theirs stop (IDGEN_ERR_LEASE), take
 *   other ids in the background and resume. Every ID of the 12 unique.
 * - The clock stepped back (injected clock): within the bound the latest second goes on,
 *   past it IDGEN_ERR_CLOCK until it catches up; a second used up waits for the clock, at
 *   most the bound. Stamps never go back. Free releases: the id is free again. */
#include "test_idgen_util.h"

#include "idgen_worker.h"

#define IDS_CAP 300000

typedef struct wthread {
    pthread_t th;
    idgen_worker_t *w;
    uint64_t *ids;
    _Atomic size_t n;
    _Atomic uint64_t lease_errs, other_errs;
    _Atomic int stop;
    int64_t last_sec; /* this thread's stamps never go back */
    _Atomic int backwards;
} wthread;

static void *wthread_main(void *arg)
{
    wthread *t = arg;
    while (!atomic_load(&t->stop) && atomic_load(&t->n) < IDS_CAP) {
        uint64_t id;
        int rc = idgen_worker_next(t->w, &id);
        if (rc == IDGEN_OK) {
            if ((int64_t)(id >> 32) < t->last_sec)
                atomic_store(&t->backwards, 1);
            t->last_sec = (int64_t)(id >> 32);
            t->ids[atomic_load(&t->n)] = id;
            if (atomic_fetch_add(&t->n, 1) % 100 == 99)
                sk_test_pause_ms(1);
            continue;
        }
        atomic_fetch_add(rc == IDGEN_ERR_LEASE ? &t->lease_errs : &t->other_errs, 1);
        sk_test_pause_ms(5);
    }
    return NULL;
}

static void wthread_start(wthread *t, idgen_worker_t *w)
{
    memset(t, 0, sizeof(*t));
    t->w = w;
    t->ids = malloc(IDS_CAP * sizeof(uint64_t));
    assert_non_null(t->ids);
    assert_int_equal(pthread_create(&t->th, NULL, wthread_main, t), 0);
}

static void wthread_stop(wthread *t)
{
    atomic_store(&t->stop, 1);
    pthread_join(t->th, NULL);
}

static idgen_worker_t *worker_new(const char *prefix, const idgen_worker_opts *o)
{
    char err[256];
    idgen_worker_t *w = idgen_worker_new(tu_shared_url(), prefix, o, err, sizeof(err));
    if (!w)
        fail_msg("%s", err);
    return w;
}

/* Every ID of the threads, checked unique. */
static void check_unique(wthread *t, int nt)
{
    size_t total = 0;
    for (int i = 0; i < nt; i++)
        total += atomic_load(&t[i].n);
    uint64_t *all = malloc(total * sizeof(*all));
    assert_non_null(all);
    size_t k = 0;
    for (int i = 0; i < nt; i++) {
        memcpy(all + k, t[i].ids, atomic_load(&t[i].n) * sizeof(uint64_t));
        k += atomic_load(&t[i].n);
        assert_false(atomic_load(&t[i].backwards));
    }
    print_message("%zu IDs from %d threads\n", total, nt);
    assert_int_equal(tu_count_dups(all, total), 0);
    free(all);
}

static void test_eight_workers(void **state)
{
    (void)state;
    if (!tu_shared_url())
        skip();
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "itest%dw8", (int)getpid());
    idgen_worker_t *w[8];
    wthread t[8];
    for (int i = 0; i < 8; i++) {
        w[i] = worker_new(prefix, NULL);
        for (int j = 0; j < i; j++)
            assert_int_not_equal(idgen_worker_id(w[i]), idgen_worker_id(w[j]));
    }
    for (int i = 0; i < 8; i++)
        wthread_start(&t[i], w[i]);
    sk_test_pause_ms(1500);
    for (int i = 0; i < 8; i++)
        wthread_stop(&t[i]);
    for (int i = 0; i < 8; i++) {
        assert_true(atomic_load(&t[i].n) > 1000);
        assert_int_equal(atomic_load(&t[i].lease_errs) + atomic_load(&t[i].other_errs), 0);
        for (size_t k = 0; k < atomic_load(&t[i].n); k++) {
            int wid;
            assert_int_equal(idgen_worker_decode(t[i].ids[k], NULL, &wid, NULL), IDGEN_OK);
            assert_int_equal(wid, idgen_worker_id(w[i]));
        }
    }
    check_unique(t, 8);
    /* free releases the id: a new worker takes the lowest again. */
    int first = idgen_worker_id(w[0]);
    for (int i = 0; i < 8; i++) {
        free(t[i].ids);
        idgen_worker_free(w[i]);
    }
    idgen_worker_t *again = worker_new(prefix, NULL);
    assert_int_equal(idgen_worker_id(again), first);
    idgen_worker_free(again);
}

static void test_leases_lost_and_retaken(void **state)
{
    (void)state;
    if (!tu_shared_url())
        skip();
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "itest%dwlost", (int)getpid());
    idgen_worker_opts o;
    idgen_worker_opts_init(&o);
    o.lease_timeout_ms = 900; /* the watchdog renews every 300 ms */
    o.reserve_ms = 1500;
    idgen_worker_t *w[12];
    wthread t[12];
    for (int i = 0; i < 8; i++) {
        w[i] = worker_new(prefix, &o);
        wthread_start(&t[i], w[i]);
    }
    sk_test_pause_ms(700);
    /* Take the leases of the first 4 away under them. */
    redisContext *c = tu_connect(tu_shared_url());
    assert_non_null(c);
    int lost_ids[4];
    for (int i = 0; i < 4; i++) {
        lost_ids[i] = idgen_worker_id(w[i]);
        redisReply *r = redisCommand(c, "DEL rlock:{idgen:%s:w%d}", prefix, lost_ids[i]);
        assert_non_null(r);
        assert_int_equal(r->integer, 1);
        freeReplyObject(r);
    }
    /* 4 new workers take the freed ids (the lowest free first). */
    for (int i = 8; i < 12; i++) {
        w[i] = worker_new(prefix, &o);
        wthread_start(&t[i], w[i]);
        int id = idgen_worker_id(w[i]);
        assert_true(id == lost_ids[0] || id == lost_ids[1] || id == lost_ids[2] ||
                    id == lost_ids[3]);
    }
    sk_test_pause_ms(3000);
    for (int i = 0; i < 12; i++)
        wthread_stop(&t[i]);
    for (int i = 0; i < 4; i++) {
        uint64_t taken, lost;
        idgen_worker_counts(w[i], &taken, &lost);
        print_message("worker %d: was %d, now %d, leases taken %llu lost %llu, lease errors "
                      "%llu\n", i, lost_ids[i], idgen_worker_id(w[i]), (unsigned long long)taken,
                      (unsigned long long)lost, (unsigned long long)atomic_load(&t[i].lease_errs));
        assert_true(lost >= 1);
        assert_true(taken >= 2);                       /* retaken */
        assert_true(idgen_worker_id(w[i]) >= 8);       /* another id: 0..3 are taken */
        assert_true(atomic_load(&t[i].lease_errs) > 0); /* it stopped in between */
    }
    for (int i = 0; i < 12; i++)
        assert_int_equal(atomic_load(&t[i].other_errs), 0);
    check_unique(t, 12);
    for (int i = 0; i < 12; i++) {
        free(t[i].ids);
        idgen_worker_free(w[i]);
    }
    redisFree(c);
}

static _Atomic int64_t fake_ms;
static int64_t fake_clock(void *arg)
{
    (void)arg;
    return atomic_load(&fake_ms);
}

static void test_clock_step_back(void **state)
{
    (void)state;
    if (!tu_shared_url())
        skip();
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "itest%dwclock", (int)getpid());
    int64_t t0 = ((int64_t)time(NULL) + 5) * 1000; /* a whole second, ahead of the real clock */
    atomic_store(&fake_ms, t0 + 200);
    idgen_worker_opts o;
    idgen_worker_opts_init(&o);
    o.clock_ms = fake_clock;
    o.clock_back_max_ms = 1000;
    o.reserve_ms = 60000; /* the keeper's turns do not matter here */
    idgen_worker_t *w = worker_new(prefix, &o);
    enum { N = 1000 };
    uint64_t *ids = malloc((3 * N + 1) * sizeof(*ids));
    assert_non_null(ids);
    size_t n = 0;
    for (int i = 0; i < N; i++)
        assert_int_equal(idgen_worker_next(w, &ids[n++]), IDGEN_OK);
    /* 700 ms back, across the second's start: within the bound, the latest second goes on. */
    atomic_store(&fake_ms, t0 - 500);
    for (int i = 0; i < N; i++) {
        assert_int_equal(idgen_worker_next(w, &ids[n]), IDGEN_OK);
        assert_int_equal((int64_t)(ids[n] >> 32), t0 / 1000 - 1704067200LL); /* not t0 - 1 s */
        n++;
    }
    /* 3 s back: refused, not reissued. */
    atomic_store(&fake_ms, t0 - 3000);
    uint64_t id;
    assert_int_equal(idgen_worker_next(w, &id), IDGEN_ERR_CLOCK);
    assert_non_null(strstr(idgen_worker_errstr(w), "behind"));
    /* Caught up: on again. */
    atomic_store(&fake_ms, t0 + 1100);
    for (int i = 0; i < N; i++)
        assert_int_equal(idgen_worker_next(w, &ids[n++]), IDGEN_OK);
    assert_int_equal(tu_count_dups(ids, n), 0);
    free(ids);

    /* A second used up while the clock stands still: the call waits for the clock at most
     * the bound, then refuses. */
    idgen_worker_free(w);
    o.clock_back_max_ms = 100;
    atomic_store(&fake_ms, t0 + 5000);
    w = worker_new(prefix, &o);
    atomic_store(&fake_ms, t0 + 6000); /* past the last holder's (our own) last second */
    uint64_t *sec = malloc(((size_t)1 << IDGEN_WSEQ_BITS) * sizeof(*sec));
    assert_non_null(sec);
    assert_int_equal(idgen_worker_next_batch(w, sec, (size_t)1 << IDGEN_WSEQ_BITS), IDGEN_OK);
    int64_t a = sk_test_now_ms();
    assert_int_equal(idgen_worker_next(w, &id), IDGEN_ERR_CLOCK);
    int64_t took = sk_test_now_ms() - a;
    assert_true(took >= 90 && took < 2000);
    atomic_store(&fake_ms, t0 + 7000);
    assert_int_equal(idgen_worker_next(w, &id), IDGEN_OK);
    assert_true((int64_t)(id >> 32) == (t0 + 7000) / 1000 - 1704067200LL);
    free(sec);
    idgen_worker_free(w);

    assert_string_not_equal(idgen_strerror(IDGEN_ERR_LEASE), "unknown error");
    assert_string_not_equal(idgen_strerror(IDGEN_ERR_FLOOR), "unknown error");
    assert_true(idgen_err_retriable(IDGEN_ERR_LEASE) && idgen_err_retriable(IDGEN_ERR_FLOOR));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eight_workers),
        cmocka_unit_test(test_leases_lost_and_retaken),
        cmocka_unit_test(test_clock_step_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
