/* consumer_metrics: the counters of seckill-consumer and their Prometheus text form.
 *
 * Threads: the consumer loop updates, the HTTP thread renders. Counters and histogram
 * buckets are C11 atomics (relaxed: each value is exact, a scrape is not a snapshot
 * across values); the per-partition lag table has a mutex. */
#ifndef CONSUMER_METRICS_H
#define CONSUMER_METRICS_H

#include "consumer_msg.h"
#include "sk_prom.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define CONSUMER_METRICS_MAX_PARTITIONS 256

/* A histogram with its bounds (set by consumer_metrics_init). */
typedef struct consumer_hist {
    const sk_prom_bounds *bounds;
    sk_prom_hist h;
} consumer_hist;

typedef struct consumer_metrics {
    atomic_uint_fast64_t consumed;   /* messages taken from Kafka */
    atomic_uint_fast64_t created;    /* orders stored as 'created' */
    atomic_uint_fast64_t rejected;   /* orders stored as 'rejected' (database stock exhausted) */
    atomic_uint_fast64_t duplicates; /* valid messages that changed nothing */
    atomic_uint_fast64_t dead_lettered[CONSUMER_MSG__COUNT]; /* by error code */
    atomic_uint_fast64_t batches;        /* committed batches */
    atomic_uint_fast64_t batch_failures; /* failed attempts (each is retried) */
    atomic_uint_fast64_t abandoned;      /* batches dropped on revoke (replayed by the new owner) */
    atomic_uint_fast64_t dlq_truncated;  /* dead letters sent as a truncated copy */
    atomic_uint_fast64_t dlq_dropped;    /* dead letters no copy of which the DLQ took */
    atomic_int writers_retrying;         /* writers retrying a failed batch (partitions paused) */
    atomic_int_fast64_t retrying_ms;     /* how long the longest of them has been at it */
    atomic_uint_fast64_t oidx_failures;  /* batches whose outcomes did not reach the order index */
    atomic_int db_up;                    /* 1 after a success, 0 after a failure */
    atomic_int paused;                   /* 1 while consumption is paused (database down) */
    /* The order-events publisher (consumer_events.h, issue 36). */
    atomic_uint_fast64_t events_published;  /* transitions Kafka acknowledged */
    atomic_uint_fast64_t events_bad;        /* payload lines that were not a transition */
    atomic_int events_streaming;            /* 1 while this process reads the slot */
    atomic_int_fast64_t events_slot_lag;    /* WAL bytes the slot keeps past its confirmed point; -1 unknown */
    consumer_hist batch_size;
    consumer_hist tx_seconds;
    pthread_mutex_t lag_mu;
    int nlag;
    struct {
        int32_t partition;
        int64_t lag; /* high watermark - consumed position; -1 unknown */
    } lag[CONSUMER_METRICS_MAX_PARTITIONS];
} consumer_metrics;

/** @brief Initialises *m (all zero, histogram bounds set). */
void consumer_metrics_init(consumer_metrics *m);
void consumer_metrics_destroy(consumer_metrics *m);

/** @brief Records one observation. */
void consumer_hist_observe(consumer_hist *h, double v);

/** @brief Replaces the lag table (n entries, truncated to the maximum). */
void consumer_metrics_set_lag(consumer_metrics *m, const int32_t *partitions, const int64_t *lags,
                              int n);

/** @brief Renders Prometheus text. @returns a malloc'd NUL-terminated string (caller
 *  frees) and its length in *len, or NULL on OOM. */
char *consumer_metrics_render(consumer_metrics *m, size_t *len);

#endif
