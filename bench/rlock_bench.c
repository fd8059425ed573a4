/* rlock_bench: uncontended lock+unlock pairs per second of one librlock lock kind, one
 * thread, one connection (the same concurrency as `redis-benchmark -c 1`). Also prints
 * bench-lock.sh runs the very same scripts (lua/rlock_*.lua) through redis-benchmark's
 * EVALSHA beside it.
 *
 *   rlock_bench --url redis://127.0.0.1:6379 --kind simple|reentrant [--n 20000]
 * Output: one line `kind=simple pairs=20000 seconds=0.81 pairs_per_s=24691`. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rlock.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    const char *url = getenv("SECKILL_REDIS_URL");
    const char *kind = "simple";
    long n = 20000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--url") == 0 && i + 1 < argc)
            url = argv[++i];
        else if (strcmp(argv[i], "--kind") == 0 && i + 1 < argc)
            kind = argv[++i];
        else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc)
            n = strtol(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: %s --url URL --kind simple|reentrant [--n N]\n", argv[0]);
            return 2;
        }
    }
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
