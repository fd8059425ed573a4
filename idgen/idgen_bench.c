/* idgen_bench: the `idgen bench` harness and its local baselines; see idgen_bench.h.
 *
 * The baselines are written to be fast, not straw men: the Snowflake generator is
 * lock-free (one CAS on a packed ms << 12 | seq word) and stops at 4096 IDs per ms as
 * the layout demands; UUIDv7 uses a per-thread xoshiro256** and no lock at all. */
#include "idgen_bench.h"

#include "idgen.h"
#include "idgen_worker.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define SAMPLE_EVERY 128

static int64_t now_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- Snowflake: 41-bit ms since 2024-01-01, 10-bit worker, 12-bit sequence ---- */

#define SF_EPOCH_MS 1704067200000LL
static _Atomic uint64_t sf_state; /* ms << 12 | seq of the last ID */
static const uint64_t sf_worker = 1;

static uint64_t snowflake_next(void)
{
    for (;;) {
        uint64_t ms = (uint64_t)(now_ns(CLOCK_REALTIME) / 1000000 - SF_EPOCH_MS);
        uint64_t old = atomic_load_explicit(&sf_state, memory_order_relaxed);
        uint64_t last_ms = old >> 12, next;
        if (ms > last_ms)
            next = ms << 12;
        else if ((old & 0xfff) == 0xfff)
            continue; /* 4096 IDs this ms: wait for the next ms, as Snowflake must */
        else
            next = old + 1; /* same ms, or a clock that stepped back: keep last_ms */
        if (atomic_compare_exchange_weak_explicit(&sf_state, &old, next, memory_order_relaxed,
                                                  memory_order_relaxed))
            return (next >> 12) << 22 | sf_worker << 12 | (next & 0xfff);
    }
}

/* ---- UUIDv7 (RFC 9562): 48-bit ms, version, 12 + 62 random bits ---- */

typedef struct {
    uint64_t s[4];
} xoshiro;

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static inline uint64_t xoshiro_next(xoshiro *x)
{
    uint64_t *s = x->s;
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

static inline void uuidv7_next(xoshiro *x, uint64_t *hi, uint64_t *lo)
{
    uint64_t ms = (uint64_t)(now_ns(CLOCK_REALTIME) / 1000000);
    uint64_t r = xoshiro_next(x);
    *hi = ms << 16 | 0x7000 | (r & 0xfff);
    *lo = (xoshiro_next(x) >> 2) | UINT64_C(0x8000000000000000);
}

/* ---- the harness ---- */

/* keyed: segment mode with the unguessable layout; worker: idgen_worker.h (the lease in
 * Redis, nothing on the hot path). */
enum { M_INCR, M_SEGMENT, M_SNOWFLAKE, M_UUIDV7, M_KEYED, M_WORKER, M_LAST = M_WORKER };
static const char *mode_names[] = {"incr", "segment", "snowflake", "uuidv7", "keyed", "worker"};

typedef struct worker {
    pthread_t th;
    int mode;
    idgen_t *g;
    idgen_worker_t *wk;
    pthread_barrier_t *start;
    _Atomic int *stop;
    int64_t warmup_ns;
    uint64_t ids, errors, sink;
    int first_err;
    char errmsg[256];
    int64_t *samples;
    size_t nsamples, cap;
    xoshiro rng;
} worker;

static inline int one(worker *w)
{
    uint64_t id, lo;
    switch (w->mode) {
    case M_SNOWFLAKE:
        w->sink ^= snowflake_next();
        return 0;
    case M_UUIDV7:
        uuidv7_next(&w->rng, &id, &lo);
        w->sink ^= id ^ lo;
        return 0;
    case M_WORKER: {
        int rc = idgen_worker_next(w->wk, &id);
        w->sink ^= id;
        return rc;
    }
    default: {
        int rc = idgen_next(w->g, &id);
        w->sink ^= id;
        return rc;
    }
    }
}

static void sample(worker *w, int64_t ns)
{
    if (w->nsamples == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 65536;
        int64_t *p = realloc(w->samples, cap * sizeof(*p));
        if (!p)
            return;
        w->samples = p;
        w->cap = cap;
    }
    w->samples[w->nsamples++] = ns;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    int every = w->mode == M_INCR ? 1 : SAMPLE_EVERY;
    /* Warm-up: fills the connection pool and grows the segment size, untimed. */
    int64_t until = now_ns(CLOCK_MONOTONIC) + w->warmup_ns;
    while (now_ns(CLOCK_MONOTONIC) < until)
        for (int i = 0; i < 64; i++)
            one(w);
    pthread_barrier_wait(w->start);
    uint64_t n = 0;
    /* Local modes check the stop flag every 256 calls; incr calls are round trips, so
     * every call (else a slow Redis would overrun the run by 256 round trips). */
    int burst = w->mode == M_INCR ? 1 : 256;
    while (!atomic_load_explicit(w->stop, memory_order_relaxed)) {
        for (int i = 0; i < burst; i++, n++) {
            int rc;
            if (n % (uint64_t)every == 0) {
                int64_t t0 = now_ns(CLOCK_MONOTONIC);
                rc = one(w);
                sample(w, now_ns(CLOCK_MONOTONIC) - t0);
            } else {
                rc = one(w);
            }
            if (rc) {
                if (!w->errors++) {
                    w->first_err = rc;
                    snprintf(w->errmsg, sizeof(w->errmsg), "%s",
                             w->wk ? idgen_worker_errstr(w->wk) : idgen_errstr(w->g));
                }
                if (w->mode == M_INCR)
                    break; /* incr failures are round trips: do not spin on them */
            }
        }
        if (w->errors > 1000)
            break;
    }
    w->ids = n - w->errors;
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

typedef struct result {
    int mode, threads;
    uint64_t ids, errors;
    double seconds, rate;
    int64_t p99;
} result;

#define BENCH_SECRET "idgen-bench-secret-not-a-real-one"

/* The generator of an incr, segment or keyed run (*out) or of a worker run (*wk); NULL
 * for the Redis-less modes. Probed with one ID so that a Redis that is down fails fast
 * and clearly. @returns 0, or the run's status (1 Redis, 2 bad arguments). */
static int bench_gen_new(const idgen_bench_args *a, int mode, idgen_t **out, idgen_worker_t **wk,
                         FILE *err)
{
    *out = NULL;
    *wk = NULL;
    if (mode == M_SNOWFLAKE || mode == M_UUIDV7)
        return 0;
    char prefix[160], e[256];
    snprintf(prefix, sizeof(prefix), "%s-%s", a->prefix, mode_names[mode]);
    uint64_t id;
    int rc;
    if (mode == M_WORKER) {
        idgen_worker_opts wo;
        idgen_worker_opts_init(&wo);
        wo.timeout_ms = a->timeout_ms;
        if (!(*wk = idgen_worker_new(a->redis_url, prefix, &wo, e, sizeof(e)))) {
            fprintf(err, "idgen bench: %s\n", e);
            return 1;
        }
        /* A worker id just handed back (the last repetition's) stamps only after its last
         * holder's reservation (up to reserve_ms ahead, + 1 s): wait that out, not fail. */
        struct timespec pause = {0, 20 * 1000 * 1000};
        for (int waited_ms = 0; (rc = idgen_worker_next(*wk, &id)) == IDGEN_ERR_LEASE &&
                                waited_ms < 2 * wo.reserve_ms + 2000;
             waited_ms += 20)
            nanosleep(&pause, NULL);
        if (rc) {
            fprintf(err, "idgen bench: %s: %s\n", idgen_strerror(rc), idgen_worker_errstr(*wk));
            idgen_worker_free(*wk);
            *wk = NULL;
            return 1;
        }
        return 0;
    }
    idgen_opts o;
    idgen_opts_init(&o);
    o.mode = mode == M_INCR ? IDGEN_MODE_INCR : IDGEN_MODE_SEGMENT;
    o.timeout_ms = a->timeout_ms;
    if (mode == M_KEYED) {
        o.secret = BENCH_SECRET;
        o.secret_len = strlen(BENCH_SECRET);
    }
    idgen_t *g = idgen_new(a->redis_url, prefix, &o, e, sizeof(e));
    if (!g) {
        fprintf(err, "idgen bench: %s\n", e);
        return 2;
    }
    rc = idgen_next(g, &id);
    if (rc) {
        fprintf(err, "idgen bench: %s: %s\n", idgen_strerror(rc), idgen_errstr(g));
        idgen_free(g);
        return 1;
    }
    *out = g;
    return 0;
}

/* Runs `threads` workers w[] of `mode` for a->seconds after a warm-up.
 * @returns the measured time in ns. */
static int64_t bench_threads_run(const idgen_bench_args *a, int mode, idgen_t *g,
                                 idgen_worker_t *wk, worker *w, int threads)
{
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    _Atomic int stop = 0;
    double warm = a->seconds / 10 < 0.2 ? 0.2 : a->seconds / 10;
    for (int i = 0; i < threads; i++) {
        w[i].mode = mode;
        w[i].g = g;
        w[i].wk = wk;
        w[i].start = &start;
        w[i].stop = &stop;
        w[i].warmup_ns = (int64_t)(warm * 1e9);
        if (getrandom(w[i].rng.s, sizeof(w[i].rng.s), 0) != (ssize_t)sizeof(w[i].rng.s))
            w[i].rng.s[0] = (uint64_t)now_ns(CLOCK_MONOTONIC) | 1;
        pthread_create(&w[i].th, NULL, worker_main, &w[i]);
    }
    pthread_barrier_wait(&start);
    int64_t t0 = now_ns(CLOCK_MONOTONIC);
    struct timespec ts = {(time_t)a->seconds, (long)((a->seconds - (time_t)a->seconds) * 1e9)};
    /* A benchmark's duration is the one place a sleep is the right tool. */
    while (nanosleep(&ts, &ts) != 0)
        ;
    atomic_store(&stop, 1);
    for (int i = 0; i < threads; i++)
        pthread_join(w[i].th, NULL);
    int64_t t1 = now_ns(CLOCK_MONOTONIC);
    pthread_barrier_destroy(&start);
    return t1 - t0;
}

/* Sums the workers' counts into res and takes the p99 of their latency samples. */
static void bench_results(const worker *w, int threads, result *res)
{
    size_t total = 0;
    for (int i = 0; i < threads; i++) {
        res->ids += w[i].ids;
        res->errors += w[i].errors;
        total += w[i].nsamples;
    }
    int64_t *all = malloc((total ? total : 1) * sizeof(*all));
    size_t k = 0;
    for (int i = 0; i < threads; i++) {
        if (all && w[i].nsamples)
            memcpy(all + k, w[i].samples, w[i].nsamples * sizeof(*all));
        k += w[i].nsamples;
    }
    if (all && total) {
        qsort(all, total, sizeof(*all), cmp_i64);
        res->p99 = all[(size_t)((double)(total - 1) * 0.99)];
    }
    res->rate = (double)res->ids / res->seconds;
    free(all);
}

static int run_one(const idgen_bench_args *a, int mode, int threads, result *res, FILE *err)
{
    idgen_t *g = NULL;
    idgen_worker_t *wk = NULL;
    int status = bench_gen_new(a, mode, &g, &wk, err);
    if (status != 0)
        return status;
    worker *w = calloc((size_t)threads, sizeof(*w));
    int64_t ns = bench_threads_run(a, mode, g, wk, w, threads);
    memset(res, 0, sizeof(*res));
    res->mode = mode;
    res->threads = threads;
    res->seconds = (double)ns / 1e9;
    bench_results(w, threads, res);
    for (int i = 0; i < threads; i++) {
        if (w[i].errors && !status) {
            fprintf(err, "idgen bench: %s: %llu errors, first: %s: %s\n", mode_names[mode],
                    (unsigned long long)res->errors, idgen_strerror(w[i].first_err), w[i].errmsg);
            status = w[i].first_err == IDGEN_ERR_REDIS || w[i].first_err == IDGEN_ERR_LEASE ? 1 : 3;
        }
        free(w[i].samples);
    }
    free(w);
    idgen_free(g);
    idgen_worker_free(wk);
    return status;
}

int idgen_bench_run(const idgen_bench_args *a, FILE *out, FILE *err)
{
    result res[64];
    int nres = 0, status = 0;
    for (int m = M_INCR; m <= M_LAST && !status; m++) {
        if (a->modes && !strstr(a->modes, mode_names[m]))
            continue;
        for (int t = 0; t < a->nthreads && !status && nres < 64; t++) {
            status = run_one(a, m, a->threads[t], &res[nres], err);
            if (!status || status == 3)
                nres++;
            if (status == 3)
                status = 0; /* a few errors (e.g. a reset) are reported, not fatal */
        }
    }
    if (a->json) {
        fprintf(out, "{\"results\":[");
        for (int i = 0; i < nres; i++)
            fprintf(out,
                    "%s{\"mode\":\"%s\",\"threads\":%d,\"ids\":%llu,\"seconds\":%.3f,"
                    "\"ids_per_sec\":%.0f,\"p99_ns\":%lld,\"errors\":%llu}",
                    i ? "," : "", mode_names[res[i].mode], res[i].threads,
                    (unsigned long long)res[i].ids, res[i].seconds, res[i].rate,
                    (long long)res[i].p99, (unsigned long long)res[i].errors);
        fprintf(out, "]}\n");
    } else {
        fprintf(out, "%-10s %7s %14s %8s %14s %10s %7s\n", "mode", "threads", "ids", "seconds",
                "ids/s", "p99 ns", "errors");
        for (int i = 0; i < nres; i++)
            fprintf(out, "%-10s %7d %14llu %8.3f %14.0f %10lld %7llu\n", mode_names[res[i].mode],
                    res[i].threads, (unsigned long long)res[i].ids, res[i].seconds, res[i].rate,
                    (long long)res[i].p99, (unsigned long long)res[i].errors);
    }
    fflush(out);
    return status;
}
