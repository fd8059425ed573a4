/* sb_stats: what seckill-bench records about every request, and the timeline it draws.
 *
 * One sb_stats per worker thread, written only by that thread, merged into one by the
 * main thread after the workers have stopped (so no locks on the hot path). Time is
 * cut into 100 ms buckets from the run's start; each bucket counts requests sent and
 * responses by class, with its own latency histogram for the percentile panel. The
 * PostgreSQL row counts are sampled by another thread (sb_pg) and joined in only when
 * the timeline is written. */
#ifndef SB_STATS_H
#define SB_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sb_hist.h"

#define SB_BUCKET_MS 100
#define SB_MAX_OUTCOMES 32
#define SB_CODE_LEN 32

/* status 0 is a request with no HTTP answer: the connection broke or the answer could
 * not be framed (code "io"). */
typedef struct sb_outcome {
    int status;
    char code[SB_CODE_LEN]; /* the "error" field of the body, "" for none */
    uint64_t n;
    /* Latency of this class alone (status 0: until the connection broke). The fault
     * tests need it: "the 503s came fast" is invisible in the all-answers histogram. */
    sb_hist lat;
} sb_outcome;

typedef struct sb_tl_bucket {
    uint32_t sent, ok202, r409, r429, r503, other;
    sb_hist *lat; /* owned; NULL until the first response lands in this bucket */
} sb_tl_bucket;

typedef struct sb_stats {
    sb_outcome outcomes[SB_MAX_OUTCOMES];
    int noutcomes;
    uint64_t outcome_overflow; /* responses of a class beyond SB_MAX_OUTCOMES */
    sb_hist lat;               /* every answered request */
    sb_tl_bucket *tl;          /* owned, ntl used */
    size_t ntl, captl;
    uint64_t *accepted; /* order ids of the 202s, owned */
    size_t naccepted, capaccepted;
    uint64_t sent, answered, bad_202; /* bad_202: a 202 without a decimal order_id */
    uint64_t last_answer_ms;          /* since start, of the latest answer */
    uint64_t last_202_ms;             /* since start, of the latest 202: the end of the sale */
    uint64_t polls, polls_ok;         /* GET /api/v1/orders/{id} after a 202 (sb_load polls), 200s */
    sb_hist poll_lat;                 /* their latency, apart from the orders' */
} sb_stats;

/* A PostgreSQL sample: rows in seckill_order for the event at t_ms since start. */
typedef struct sb_db_sample {
    uint64_t t_ms;
    int64_t rows;
} sb_db_sample;

void sb_stats_init(sb_stats *s);
/** @brief Frees what s owns (s itself is the caller's). */
void sb_stats_free(sb_stats *s);

/** @brief Counts a request sent at t_ms since start. @returns 0, -1 out of memory. */
int sb_stats_sent(sb_stats *s, uint64_t t_ms);

/** @brief Counts one answer at t_ms: status (0: none), code (may be NULL), latency.
 *  @returns 0, -1 out of memory. */
int sb_stats_answer(sb_stats *s, uint64_t t_ms, int status, const char *code, uint64_t lat_us);

/** @brief Keeps the order id of a 202. @returns 0, -1 out of memory. */
int sb_stats_accept(sb_stats *s, uint64_t order_id);

/** @brief Adds src into dst (src is left as it was). @returns 0, -1 out of memory. */
int sb_stats_merge(sb_stats *dst, const sb_stats *src);

/** @brief Sum of the outcomes with this status (any code). */
uint64_t sb_stats_count_status(const sb_stats *s, int status);

/** @brief Rows in PostgreSQL at time t_ms: the latest sample at or before it (-1: none yet). */
int64_t sb_db_rows_at(const sb_db_sample *v, size_t n, uint64_t t_ms);

/** @brief Highest value over the timeline of (field per bucket) * 1000 / SB_BUCKET_MS:
 *  which = 0 sent, 1 202, 2 409, 3 answered (all classes). */
double sb_stats_peak_rate(const sb_stats *s, int which);

/** @brief Highest rows/s between consecutive samples at least SB_BUCKET_MS apart. */
double sb_db_peak_rate(const sb_db_sample *v, size_t n);

/** @brief Writes timeline.csv: one row per bucket until the later of the last bucket and
 *  the last sample. Columns: t_s,sent,ok_202,r_409,r_429,r_503,other,db_rows,db_rows_per_s,
 *  p50_ms,p90_ms,p99_ms,p999_ms,max_ms (rates are per bucket, db_rows -1: not sampled).
 *  @returns 0, -1 on a write error. */
int sb_stats_write_timeline(FILE *f, const sb_stats *s, const sb_db_sample *v, size_t n);

#endif
