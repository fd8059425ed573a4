/* sb_hist: a log-linear latency histogram (HDR-histogram idea, fixed precision).
 *
 * Values are microseconds. Below 16 each value has its own bucket; above, every power
 * of two is split into 16 equal buckets, so a reported percentile is within 1/16
 * (6.25%) of the true value, whatever the range. Recording is one clz and one add: cheap
 * enough for every response of the load generator. Not thread-safe: one per thread,
 * merged at the end. */
#ifndef SB_HIST_H
#define SB_HIST_H

#include "sk_prom.h"

#include <stdint.h>
#include <stdio.h>

#define SB_HIST_SUB 16
#define SB_HIST_MAX_POW 40 /* values are clamped to 2^40 us (12 days) */
#define SB_HIST_BUCKETS (SB_HIST_SUB + (SB_HIST_MAX_POW - 4) * SB_HIST_SUB)

typedef struct sb_hist {
    uint64_t count;
    uint64_t max; /* exact */
    uint64_t sum;
    uint32_t b[SB_HIST_BUCKETS];
} sb_hist;

/** @brief Zeroes h (a zeroed sb_hist is an empty histogram too). */
void sb_hist_reset(sb_hist *h);

/** @brief Records one value (microseconds). */
void sb_hist_record(sb_hist *h, uint64_t us);

/** @brief Adds every count of src into dst. */
void sb_hist_merge(sb_hist *dst, const sb_hist *src);

/** @brief The value at quantile q (0 < q <= 1): the upper edge of the bucket holding the
 *  ceil(q * count)-th smallest value, capped by the exact max. 0 when empty. */
uint64_t sb_hist_quantile(const sb_hist *h, double q);

/** @brief Writes h as the samples of a Prometheus histogram `name` in seconds (no head),
 *  through the services' writer (common/sk_prom.h): a cumulative `_bucket` line at the
 *  upper edge of each non-empty bucket, `+Inf`, `_sum` and `_count`. */
void sb_hist_write_prom(FILE *f, const char *name, const sk_prom_label *labels, int nlabels,
                        const sb_hist *h);

/* Bucket mapping, exposed for tests. */
int sb_hist_bucket(uint64_t us);
uint64_t sb_hist_bucket_upper(int bucket);

#endif
