/* sk_prom: the one Prometheus text writer (exposition format 0.0.4) and its histogram.
 *
 * Both services' /metrics pages are written through it: HELP/TYPE heads, samples with
 * escaped label values, and fixed-bound histograms (per-bucket atomic counts, a sum kept
 * in millionths of the unit so that it stays an integer atomic, cumulative _bucket lines,
 * _sum, _count). The load generator's quantile histogram (bench/sb_hist: log-linear
 * buckets for percentiles, per thread) keeps its own buckets and is written through the
 * same bucket and sum/count lines (seckill-bench's latency.prom).
 *
 * Threads: sk_prom_hist_observe* may run on any number of threads at once (relaxed
 * atomics: each number is exact, a scrape is not one snapshot across numbers); the
 * writers run on one thread per FILE. Nothing here allocates but sk_prom_text. */
#ifndef SK_PROM_H
#define SK_PROM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One label pair of a sample. The value is escaped on output (\\, \" and \n); the name
 * must be a valid label name (the writer does not check it). */
typedef struct sk_prom_label {
    const char *name;
    const char *value;
} sk_prom_label;

/* A text being written: open_memstream under the hood. */
typedef struct sk_prom_text {
    FILE *f;
    char *buf;
    size_t len;
} sk_prom_text;

/** @brief Opens t for writing (t->f). @returns 0, or -1 on OOM. */
int sk_prom_text_open(sk_prom_text *t);

/** @brief Closes t. @returns the NUL-terminated text (malloc'd, the caller frees) and its
 *  length in *len, or NULL on OOM (nothing to free then). */
char *sk_prom_text_close(sk_prom_text *t, size_t *len);

/** @brief Writes "# HELP name help" (help escaped: \\ and \n) and "# TYPE name type". */
void sk_prom_head(FILE *f, const char *name, const char *type, const char *help);

/** @brief Writes one sample `name{labels} v`; nlabels 0 (labels may be NULL): no braces. */
void sk_prom_sample_u64(FILE *f, const char *name, const sk_prom_label *labels, int nlabels,
                        uint64_t v);
void sk_prom_sample_i64(FILE *f, const char *name, const sk_prom_label *labels, int nlabels,
                        int64_t v);
/** @brief As above with a fixed-point value of `decimals` digits after the point. */
void sk_prom_sample_fixed(FILE *f, const char *name, const sk_prom_label *labels, int nlabels,
                          double v, int decimals);

/** @brief A head and one unlabelled sample: the common single-number metric. */
void sk_prom_counter(FILE *f, const char *name, const char *help, uint64_t v);
void sk_prom_gauge(FILE *f, const char *name, const char *help, int64_t v);
void sk_prom_gauge_fixed(FILE *f, const char *name, const char *help, double v, int decimals);

/* The most finite bounds a histogram may have (the +Inf bucket is one more). */
#define SK_PROM_HIST_MAX_BOUNDS 15

/* A histogram's finite upper bounds, ascending, in the metric's unit (seconds, messages).
 * Kept apart from the counts so that a zeroed sk_prom_hist is a valid empty histogram and
 * many histograms share one set of bounds. */
typedef struct sk_prom_bounds {
    const double *le;
    int n; /* <= SK_PROM_HIST_MAX_BOUNDS */
} sk_prom_bounds;

typedef struct sk_prom_hist {
    _Atomic uint64_t bucket[SK_PROM_HIST_MAX_BOUNDS + 1]; /* per bucket, not cumulative; last +Inf */
    _Atomic uint64_t sum_micro; /* sum of the observations * 1e6 (negatives count 0) */
} sk_prom_hist;

/** @brief The bucket of v: the first bound >= v, or b->n (+Inf). */
int sk_prom_bucket(const sk_prom_bounds *b, double v);

/** @brief Records one observation v (in the metric's unit). */
void sk_prom_hist_observe(sk_prom_hist *h, const sk_prom_bounds *b, double v);

/** @brief Records one observation given in millionths of the unit (microseconds for a
 *  histogram of seconds): the sum stays exact, no float round trip. */
void sk_prom_hist_observe_micro(sk_prom_hist *h, const sk_prom_bounds *b, int64_t micro);

/** @brief One cumulative bucket sample `name_bucket{labels,le="%g"} cum` (INFINITY: "+Inf"),
 *  and the `name_sum{labels}` (6 decimals) and `name_count{labels}` pair: the pieces of a
 *  histogram whose buckets are kept elsewhere (the load generator's, bench/sb_hist). */
void sk_prom_bucket_line(FILE *f, const char *name, const sk_prom_label *labels, int nlabels,
                         double le, uint64_t cum);
void sk_prom_hist_tail(FILE *f, const char *name, const sk_prom_label *labels, int nlabels,
                       double sum, uint64_t count);

/** @brief Writes h's samples (no head): `name_bucket{labels,le="%g"}` cumulative for each
 *  bound and +Inf, `name_sum{labels}` (6 decimals) and `name_count{labels}`, equal to the
 *  +Inf bucket of the same scrape. */
void sk_prom_hist_write(FILE *f, const char *name, const sk_prom_label *labels, int nlabels,
                        const sk_prom_hist *h, const sk_prom_bounds *b);

#endif
