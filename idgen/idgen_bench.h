/* idgen_bench: `idgen bench`, libidgen's two modes against two local baselines that need
 * no Redis (Snowflake: 41-bit ms, 10-bit worker, 12-bit sequence; UUIDv7), with the
 * same harness: T threads, a warm-up, S timed seconds, every 128th call timed (every
 * call for incr mode, whose calls are round trips) for the p99. Part of the CLI only. */
#ifndef IDGEN_BENCH_H
#define IDGEN_BENCH_H

#include <stdio.h>

#define IDGEN_BENCH_MAX_THREADS 64

typedef struct idgen_bench_args {
    const char *redis_url;
    const char *prefix;
    double seconds;
    int threads[16]; /* thread counts to run each mode with */
    int nthreads;
    int json;
    int timeout_ms;
    const char *modes; /* comma-separated subset of incr,segment,snowflake,uuidv7 */
} idgen_bench_args;

/** @brief Runs the benchmark and prints the table (or the JSON object) on out, errors on
 *  err. @returns the process exit status: 0, 1 when Redis fails. */
int idgen_bench_run(const idgen_bench_args *a, FILE *out, FILE *err);

#endif
