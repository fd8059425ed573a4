/* consumer_metrics: see consumer_metrics.h. */
#include "consumer_metrics.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double batch_bounds[CONSUMER_HIST_BUCKETS] = {
    1, 10, 50, 100, 250, 500, 1000, 2000, 5000, 10000, 50000, 1e300};
static const double tx_bounds[CONSUMER_HIST_BUCKETS] = {
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 5, 1e300};

void consumer_metrics_init(consumer_metrics *m)
{
    memset(m, 0, sizeof(*m));
    m->batch_size.bounds = batch_bounds;
    m->tx_seconds.bounds = tx_bounds;
    pthread_mutex_init(&m->lag_mu, NULL);
}

void consumer_metrics_destroy(consumer_metrics *m)
{
    pthread_mutex_destroy(&m->lag_mu);
}

void consumer_hist_observe(consumer_hist *h, double v)
{
    for (int i = 0; i < CONSUMER_HIST_BUCKETS; i++) {
        if (v <= h->bounds[i]) {
            atomic_fetch_add_explicit(&h->buckets[i], 1, memory_order_relaxed);
            break;
        }
    }
    atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_micro, (uint_fast64_t)(v * 1e6), memory_order_relaxed);
}

void consumer_metrics_set_lag(consumer_metrics *m, const int32_t *partitions, const int64_t *lags,
                              int n)
{
    if (n > CONSUMER_METRICS_MAX_PARTITIONS)
        n = CONSUMER_METRICS_MAX_PARTITIONS;
    pthread_mutex_lock(&m->lag_mu);
    for (int i = 0; i < n; i++) {
        m->lag[i].partition = partitions[i];
        m->lag[i].lag = lags[i];
    }
    m->nlag = n;
    pthread_mutex_unlock(&m->lag_mu);
}

#define LOAD(x) ((unsigned long long)atomic_load_explicit(&(x), memory_order_relaxed))

static void counter(FILE *f, const char *name, const char *help, unsigned long long v)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name, v);
}

static void hist(FILE *f, const char *name, const char *help, consumer_hist *h)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    unsigned long long cum = 0;
    for (int i = 0; i < CONSUMER_HIST_BUCKETS; i++) {
        cum += LOAD(h->buckets[i]);
        if (i == CONSUMER_HIST_BUCKETS - 1)
            fprintf(f, "%s_bucket{le=\"+Inf\"} %llu\n", name, cum);
        else
            fprintf(f, "%s_bucket{le=\"%g\"} %llu\n", name, h->bounds[i], cum);
    }
    fprintf(f, "%s_sum %.6f\n%s_count %llu\n", name, (double)LOAD(h->sum_micro) / 1e6, name,
            LOAD(h->count));
}

char *consumer_metrics_render(consumer_metrics *m, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return NULL;
    counter(f, "seckill_consumer_messages_consumed_total", "Messages taken from Kafka.",
            LOAD(m->consumed));
    counter(f, "seckill_consumer_orders_created_total", "Orders stored with status created.",
            LOAD(m->created));
    counter(f, "seckill_consumer_orders_rejected_total",
            "Orders stored with status rejected: the database had no stock left (inconsistency).",
            LOAD(m->rejected));
    counter(f, "seckill_consumer_duplicates_total",
            "Valid messages that changed nothing (replays, second order of a user).",
            LOAD(m->duplicates));
    fprintf(f, "# HELP seckill_consumer_dead_letters_total Poison messages sent to the DLQ.\n"
               "# TYPE seckill_consumer_dead_letters_total counter\n");
    for (int i = 1; i < CONSUMER_MSG__COUNT; i++)
        fprintf(f, "seckill_consumer_dead_letters_total{error=\"%s\"} %llu\n",
                consumer_msg_strerror((consumer_msg_err)i), LOAD(m->dead_lettered[i]));
    counter(f, "seckill_consumer_batches_total", "Batches committed.", LOAD(m->batches));
    counter(f, "seckill_consumer_batch_failures_total", "Failed batch attempts (retried).",
            LOAD(m->batch_failures));
    counter(f, "seckill_consumer_batches_abandoned_total",
            "Batches dropped on partition revoke (the new owner replays them).",
            LOAD(m->abandoned));
    counter(f, "seckill_consumer_dead_letters_truncated_total",
            "Dead letters sent as a truncated copy (the original did not fit the DLQ).",
            LOAD(m->dlq_truncated));
    counter(f, "seckill_consumer_dead_letters_dropped_total",
            "Poison messages the DLQ refused for good even truncated (skipped, logged).",
            LOAD(m->dlq_dropped));
    fprintf(f, "# HELP seckill_consumer_writers_retrying Writers retrying a failed batch "
               "(their partitions are paused).\n"
               "# TYPE seckill_consumer_writers_retrying gauge\nseckill_consumer_writers_retrying %d\n",
            atomic_load(&m->writers_retrying));
    fprintf(f, "# HELP seckill_consumer_retrying_seconds How long the longest-retrying writer has "
               "been stuck on one batch (0: none).\n"
               "# TYPE seckill_consumer_retrying_seconds gauge\nseckill_consumer_retrying_seconds %.3f\n",
            (double)atomic_load(&m->retrying_ms) / 1e3);
    counter(f, "seckill_consumer_order_index_failures_total",
            "Batches whose outcomes could not be written into the order index (Redis).",
            LOAD(m->oidx_failures));
    fprintf(f, "# HELP seckill_consumer_db_up 1 if the last database attempt succeeded.\n"
               "# TYPE seckill_consumer_db_up gauge\nseckill_consumer_db_up %d\n",
            atomic_load(&m->db_up));
    fprintf(f, "# HELP seckill_consumer_paused 1 while consumption is paused.\n"
               "# TYPE seckill_consumer_paused gauge\nseckill_consumer_paused %d\n",
            atomic_load(&m->paused));
    hist(f, "seckill_consumer_batch_size", "Messages per batch.", &m->batch_size);
    hist(f, "seckill_consumer_transaction_seconds", "PostgreSQL transaction time per batch.",
         &m->tx_seconds);
    fprintf(f, "# HELP seckill_consumer_lag Messages not yet committed behind the high watermark, per partition.\n"
               "# TYPE seckill_consumer_lag gauge\n");
    pthread_mutex_lock(&m->lag_mu);
    for (int i = 0; i < m->nlag; i++)
        if (m->lag[i].lag >= 0)
            fprintf(f, "seckill_consumer_lag{partition=\"%" PRId32 "\"} %" PRId64 "\n",
                    m->lag[i].partition, m->lag[i].lag);
    pthread_mutex_unlock(&m->lag_mu);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}
