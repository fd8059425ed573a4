/* consumer_metrics: see consumer_metrics.h. */
#include "consumer_metrics.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Finite upper bounds; the +Inf bucket follows. */
static const double batch_le[] = {1, 10, 50, 100, 250, 500, 1000, 2000, 5000, 10000, 50000};
static const double tx_le[] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 5};
static const sk_prom_bounds batch_bounds = {batch_le, (int)(sizeof(batch_le) / sizeof(batch_le[0]))};
static const sk_prom_bounds tx_bounds = {tx_le, (int)(sizeof(tx_le) / sizeof(tx_le[0]))};

void consumer_metrics_init(consumer_metrics *m)
{
    memset(m, 0, sizeof(*m));
    m->batch_size.bounds = &batch_bounds;
    m->tx_seconds.bounds = &tx_bounds;
    atomic_store(&m->events_slot_lag, -1);
    pthread_mutex_init(&m->lag_mu, NULL);
}

void consumer_metrics_destroy(consumer_metrics *m)
{
    pthread_mutex_destroy(&m->lag_mu);
}

void consumer_hist_observe(consumer_hist *h, double v)
{
    sk_prom_hist_observe(&h->h, h->bounds, v);
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

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

static void hist(FILE *f, const char *name, const char *help, const consumer_hist *h)
{
    sk_prom_head(f, name, "histogram", help);
    sk_prom_hist_write(f, name, NULL, 0, &h->h, h->bounds);
}

static void render_counts(FILE *f, consumer_metrics *m)
{
    sk_prom_counter(f, "seckill_consumer_messages_consumed_total", "Messages taken from Kafka.",
                    LOAD(m->consumed));
    sk_prom_counter(f, "seckill_consumer_orders_created_total",
                    "Orders stored with status created.", LOAD(m->created));
    sk_prom_counter(f, "seckill_consumer_orders_rejected_total",
                    "Orders stored with status rejected: the database had no stock left "
                    "(inconsistency).",
                    LOAD(m->rejected));
    sk_prom_counter(f, "seckill_consumer_duplicates_total",
                    "Valid messages that changed nothing (replays, second order of a user).",
                    LOAD(m->duplicates));
    sk_prom_head(f, "seckill_consumer_dead_letters_total", "counter",
                 "Poison messages sent to the DLQ.");
    for (int i = 1; i < CONSUMER_MSG__COUNT; i++) {
        sk_prom_label l = {"error", consumer_msg_strerror((consumer_msg_err)i)};
        sk_prom_sample_u64(f, "seckill_consumer_dead_letters_total", &l, 1,
                           LOAD(m->dead_lettered[i]));
    }
    sk_prom_counter(f, "seckill_consumer_batches_total", "Batches committed.", LOAD(m->batches));
    sk_prom_counter(f, "seckill_consumer_batch_failures_total", "Failed batch attempts (retried).",
                    LOAD(m->batch_failures));
    sk_prom_counter(f, "seckill_consumer_batches_abandoned_total",
                    "Batches dropped on partition revoke (the new owner replays them).",
                    LOAD(m->abandoned));
    sk_prom_counter(f, "seckill_consumer_dead_letters_truncated_total",
                    "Dead letters sent as a truncated copy (the original did not fit the DLQ).",
                    LOAD(m->dlq_truncated));
    sk_prom_counter(f, "seckill_consumer_dead_letters_dropped_total",
                    "Poison messages the DLQ refused for good even truncated (skipped, logged).",
                    LOAD(m->dlq_dropped));
}

static void render_state(FILE *f, consumer_metrics *m)
{
    sk_prom_gauge(f, "seckill_consumer_writers_retrying",
                  "Writers retrying a failed batch (their partitions are paused).",
                  atomic_load(&m->writers_retrying));
    sk_prom_gauge_fixed(f, "seckill_consumer_retrying_seconds",
                        "How long the longest-retrying writer has been stuck on one batch (0: "
                        "none).",
                        (double)atomic_load(&m->retrying_ms) / 1e3, 3);
    sk_prom_counter(f, "seckill_consumer_order_index_failures_total",
                    "Batches whose outcomes could not be written into the order index (Redis).",
                    LOAD(m->oidx_failures));
    sk_prom_gauge(f, "seckill_consumer_db_up", "1 if the last database attempt succeeded.",
                  atomic_load(&m->db_up));
    sk_prom_gauge(f, "seckill_consumer_paused", "1 while consumption is paused.",
                  atomic_load(&m->paused));
    sk_prom_counter(f, "seckill_consumer_events_published_total",
                    "Order transitions Kafka acknowledged (seckill.order-events).",
                    LOAD(m->events_published));
    sk_prom_counter(f, "seckill_consumer_events_bad_total",
                    "Emitted payload lines that were not a transition (skipped).",
                    LOAD(m->events_bad));
    sk_prom_gauge(f, "seckill_consumer_events_streaming",
                  "1 while this process reads the order-events slot (one process does).",
                  atomic_load(&m->events_streaming));
    sk_prom_gauge(f, "seckill_consumer_events_slot_lag_bytes",
                  "WAL the order-events slot keeps past what Kafka acknowledged (-1: unknown).",
                  (int64_t)atomic_load(&m->events_slot_lag));
}

/* Only the partitions whose lag is known (-1: no watermark yet). */
static void render_lag(FILE *f, consumer_metrics *m)
{
    sk_prom_head(f, "seckill_consumer_lag", "gauge",
                 "Messages not yet committed behind the high watermark, per partition.");
    pthread_mutex_lock(&m->lag_mu);
    for (int i = 0; i < m->nlag; i++)
        if (m->lag[i].lag >= 0) {
            char part[16];
            snprintf(part, sizeof(part), "%" PRId32, m->lag[i].partition);
            sk_prom_label l = {"partition", part};
            sk_prom_sample_i64(f, "seckill_consumer_lag", &l, 1, m->lag[i].lag);
        }
    pthread_mutex_unlock(&m->lag_mu);
}

char *consumer_metrics_render(consumer_metrics *m, size_t *len)
{
    sk_prom_text t;
    if (sk_prom_text_open(&t) != 0)
        return NULL;
    render_counts(t.f, m);
    render_state(t.f, m);
    hist(t.f, "seckill_consumer_batch_size", "Messages per batch.", &m->batch_size);
    hist(t.f, "seckill_consumer_transaction_seconds", "PostgreSQL transaction time per batch.",
         &m->tx_seconds);
    render_lag(t.f, m);
    return sk_prom_text_close(&t, len);
}
