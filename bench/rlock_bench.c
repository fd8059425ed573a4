/* rlock_bench: lock+unlock pairs per second of librlock, for bench/bench-lock.sh.
 *
 *   rlock_bench --url redis://127.0.0.1:6379 --kind simple|reentrant [--n 20000]
 * one thread, one connection (the concurrency of `redis-benchmark -c 1`, which
 * bench-lock.sh runs on the very same scripts beside it). Output: one line
 * `kind=simple pairs=20000 seconds=0.81 pairs_per_s=24691`.
 *
 *   rlock_bench --urls U[,U...] --mode uncontended|contended --conc N --secs S [--kind K]
 * the side-by-side run beside Redisson's and redsync's drivers (bench/lock-redisson,
 * bench/lock-redsync): N threads sharing one client (as the others share theirs, and as
 * librlock asks: one client per process), on names of their own (uncontended) or
 * one name (contended: hand-off from a holder's unlock call to the next grant); more
 * than one URL: Redlock over them. Output, as theirs:
 * `pairs=P secs=S pairs_per_s=X cpu_s=C p50_us=A p99_us=B`. */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "rlock.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

#define MAX_URLS 8
#define MAX_SAMPLES 1000000

static struct side {
    const char *urls[MAX_URLS];
    size_t nurls;
    int contended;
    rlock_kind_t kind;
    double stop;
    atomic_long pairs;
    _Atomic double last_unlock;
    pthread_mutex_t mu;
    long *samples; /* hand-off, µs */
    long nsamples;
    int failed;
    rlock_client_t *client; /* shared by the threads (one URL) */
} side = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void handoff_note(void)
{
    double lu = atomic_load(&side.last_unlock), now = now_s();
    if (lu > 0) {
        pthread_mutex_lock(&side.mu);
        if (side.nsamples < MAX_SAMPLES)
            side.samples[side.nsamples++] = (long)((now - lu) * 1e6);
        pthread_mutex_unlock(&side.mu);
    }
}

static void *side_worker(void *arg)
{
    long i = (long)(intptr_t)arg;
    char name[96], err[256];
    if (side.contended)
        snprintf(name, sizeof(name), "bench-rlock-%ld", (long)getpid());
    else
        snprintf(name, sizeof(name), "bench-rlock-%ld-%ld", (long)getpid(), i);
    rlock_t *l = NULL;
    rlock_redlock_t *rl = NULL;
    snprintf(err, sizeof(err), "out of memory");
    if (side.nurls > 1)
        rl = rlock_redlock_new(side.urls, side.nurls, name, 200, err, sizeof(err));
    else
        l = rlock_new(side.client, name, side.kind);
    if (rl == NULL && l == NULL) {
        fprintf(stderr, "rlock_bench: %s\n", err);
        side.failed = 1;
        return NULL;
    }
    while (now_s() < side.stop) {
        int rv = rl ? rlock_redlock_lock(rl, 30000, -1, NULL) : rlock_lock(l, 30000, NULL);
        if (rv == 0 && side.contended) {
            handoff_note();
            atomic_store(&side.last_unlock, now_s());
        }
        if (rv == 0)
            rv = rl ? rlock_redlock_unlock(rl) : rlock_unlock(l);
        if (rv != 0) {
            fprintf(stderr, "rlock_bench: %s\n", rl ? rlock_redlock_errstr(rl) : rlock_errstr(l));
            side.failed = 1;
            break;
        }
        atomic_fetch_add(&side.pairs, 1);
    }
    rlock_free(l);
    rlock_redlock_free(rl);
    return NULL;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* The side-by-side run (see the top). @returns the exit status. */
static int side_run(char *urls, const char *mode, int conc, double secs, const char *kind)
{
    for (char *u = strtok(urls, ","); u && side.nurls < MAX_URLS; u = strtok(NULL, ","))
        side.urls[side.nurls++] = u;
    side.contended = strcmp(mode, "contended") == 0;
    side.kind = strcmp(kind, "simple") == 0 ? RLOCK_SIMPLE : RLOCK_REENTRANT;
    side.samples = calloc(MAX_SAMPLES, sizeof(long));
    pthread_t *th = calloc((size_t)conc, sizeof(*th));
    if (side.nurls == 0 || conc <= 0 || secs <= 0 || side.samples == NULL || th == NULL) {
        fprintf(stderr, "rlock_bench: need --urls, --conc > 0, --secs > 0\n");
        return 2;
    }
    char err[256];
    if (side.nurls == 1 && (side.client = rlock_client_new(side.urls[0], NULL, err, sizeof(err))) == NULL) {
        fprintf(stderr, "rlock_bench: %s\n", err);
        return 1;
    }
    double cpu0 = cpu_s(), t0 = now_s();
    side.stop = t0 + secs;
    for (long i = 0; i < conc; i++)
        pthread_create(&th[i], NULL, side_worker, (void *)(intptr_t)i);
    for (int i = 0; i < conc; i++)
        pthread_join(th[i], NULL);
    double dt = now_s() - t0, cpu = cpu_s() - cpu0;
    qsort(side.samples, (size_t)side.nsamples, sizeof(long), cmp_long);
    long p50 = side.nsamples ? side.samples[side.nsamples * 50 / 100] : 0;
    long p99 = side.nsamples ? side.samples[side.nsamples * 99 / 100] : 0;
    long pairs = atomic_load(&side.pairs);
    printf("pairs=%ld secs=%.3f pairs_per_s=%.0f cpu_s=%.3f p50_us=%ld p99_us=%ld\n", pairs, dt, pairs / dt, cpu,
           p50, p99);
    free(side.samples);
    free(th);
    rlock_client_free(side.client);
    return side.failed;
}

int main(int argc, char **argv)
{
    const char *url = getenv("SECKILL_REDIS_URL");
    char *urls = NULL;
    const char *mode = NULL;
    int conc = 1;
    double secs = 3;
    const char *kind = "simple";
    long n = 20000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--url") == 0 && i + 1 < argc)
            url = argv[++i];
        else if (strcmp(argv[i], "--kind") == 0 && i + 1 < argc)
            kind = argv[++i];
        else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc)
            n = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--urls") == 0 && i + 1 < argc)
            urls = argv[++i];
        else if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc)
            mode = argv[++i];
        else if (strcmp(argv[i], "--conc") == 0 && i + 1 < argc)
            conc = atoi(argv[++i]);
        else if (strcmp(argv[i], "--secs") == 0 && i + 1 < argc)
            secs = atof(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: %s --url URL --kind simple|reentrant [--n N]\n"
                    "       %s --urls U[,U...] --mode uncontended|contended --conc N --secs S [--kind K]\n",
                    argv[0], argv[0]);
            return 2;
        }
    }
    if (mode != NULL)
        return side_run(urls, mode, conc, secs, kind);
    if (url == NULL || n <= 0) {
        fprintf(stderr, "rlock_bench: need --url (or SECKILL_REDIS_URL) and --n > 0\n");
        return 2;
    }
    rlock_kind_t k = strcmp(kind, "reentrant") == 0 ? RLOCK_REENTRANT : RLOCK_SIMPLE;
    char err[256];
    rlock_client_t *c = rlock_client_new(url, NULL, err, sizeof(err));
    if (c == NULL) {
        fprintf(stderr, "rlock_bench: %s\n", err);
        return 1;
    }
    char name[96];
    snprintf(name, sizeof(name), "bench-%s-%ld", kind, (long)getpid());
    rlock_t *l = rlock_new(c, name, k);
    /* warm up: scripts loaded, connection hot */
    for (int i = 0; i < 200; i++)
        if (rlock_try_lock(l, 0, 30000, NULL) != 0 || rlock_unlock(l) != 0) {
            fprintf(stderr, "rlock_bench: %s\n", rlock_errstr(l));
            return 1;
        }
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        if (rlock_try_lock(l, 0, 30000, NULL) != 0 || rlock_unlock(l) != 0) {
            fprintf(stderr, "rlock_bench: %s\n", rlock_errstr(l));
            return 1;
        }
    }
    double dt = now_s() - t0;
    printf("kind=%s pairs=%ld seconds=%.3f pairs_per_s=%.0f\n", kind, n, dt, n / dt);
    rlock_force_unlock(l); /* nothing held; also drops nothing else */
    rlock_free(l);
    rlock_client_free(c);
    return 0;
}
