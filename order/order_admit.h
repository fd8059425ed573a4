/* order_admit: admission control on the latency the front observes (issue 19 section 3).
 *
 * Every answer of the gate (reserve.lua) is recorded with its latency in a sliding
 * window (10 slots of window/10 each, a log-scale histogram per slot). When the window
 * holds at least `min_samples` answers and their p99 passes `p99_bound_us`, new orders
 * are shed (503 with Retry-After, answered at once) instead of queueing behind a slow
 * Redis until the in-flight bounds are hit. Recovery needs nothing: shed orders add no
 * samples, so the slow ones age out of the window and orders are admitted again (a
 * still-slow Redis trips it again with the next answers).
 *
 * The decision is re-evaluated at most once per slot (window/10) by whichever thread
 * checks first; between evaluations a check is one relaxed atomic load, so the hot
 * path pays nothing measurable. Thread-safe: recording and evaluating take one mutex
 * (evaluation only tries it). The latency buckets' bounds are pure and unit-tested. */
#ifndef ORDER_ADMIT_H
#define ORDER_ADMIT_H

#include <stdint.h>

typedef struct order_admit order_admit;

/** @brief Sheds when the p99 of the last `window_ms` of gate answers is over
 *  `p99_bound_us` (0: never sheds, records nothing) with at least `min_samples` answers.
 *  @returns the object (order_admit_free) or NULL on OOM or window_ms < 10. */
order_admit *order_admit_new(int64_t p99_bound_us, int64_t window_ms, int64_t min_samples);

/** @brief NULL is fine. */
void order_admit_free(order_admit *a);

/** @brief Records one gate answer that took `latency_us`, at monotonic now_us. */
void order_admit_record(order_admit *a, int64_t now_us, int64_t latency_us);

/** @brief @returns 1: admit the order, 0: shed it (then *retry_after_s is set: the
 *  window's length in seconds, rounded up). The p99 is known to a factor of 2 (its
 *  histogram bucket): it sheds when the bucket's lower bound is at or past the bound. */
int order_admit_check(order_admit *a, int64_t now_us, long long *retry_after_s);

/** @brief The window's p99 at now_us in microseconds (the upper bound of its histogram
 *  bucket), and its sample count in *n; 0 when empty. For tests and /metrics. */
int64_t order_admit_p99(order_admit *a, int64_t now_us, int64_t *n);

/** @brief The histogram bucket of a latency: bucket i holds latencies up to
 *  order_admit_bucket_bound(i) = 100 us << i; the last one holds everything above. */
int order_admit_bucket(int64_t latency_us);
int64_t order_admit_bucket_bound(int i);
#define ORDER_ADMIT_BUCKETS 20

#endif
