/* consumer_loop: the Kafka side of seckill-consumer and the batch life cycle.
 *
 * The caller's thread runs Kafka: rd_kafka_consumer_poll (which also runs the
 * rebalance callback), batch building, dead letters and offset commits. PostgreSQL
 * transactions run on `writers` threads, one connection each; partition p always goes
 * to writer p % writers, so one partition's batches stay in order. A batch ends by
 * count (batch.max) or age (batch.ms) and then:
 *   1. PostgreSQL transaction (consumer_db_write); on failure: pause the assigned
 *      partitions, retry the same batch with capped exponential backoff while still
 *      polling (so the group membership survives), resume after the first success;
 *   2. dead letters (poison and unknown-event messages) produced and flushed;
 *   3. offsets (highest offset + 1 per partition) committed.
 * So an offset is committed only once its message is durable in PostgreSQL or in the
 * DLQ; a crash anywhere replays at most the uncommitted batches, which the idempotent
 * write absorbs. On revoke the in-flight batch is written (one attempt) or abandoned:
 * the new owner replays it from the committed offsets. */
#ifndef CONSUMER_LOOP_H
#define CONSUMER_LOOP_H

#include "consumer_metrics.h"

#include <sk_config.h>
#include <signal.h>

typedef struct consumer_cfg {
    char *pg; /* libpq conninfo (may hold a password: never logged) */
    char *group_id;
    char *topic;
    char *dlq_topic;
    long long batch_max;
    long long batch_ms;
    long long retry_min_ms;
    long long retry_max_ms;
    long long shutdown_ms;
    long long writers; /* writer threads (PostgreSQL connections), partition p -> p % writers */
    long long http_port;
    char *http_bind;                 /* numeric IPv4 address of /healthz and /metrics */
    char *metrics_token;             /* "" : /metrics by metrics_open's rule */
    long long metrics_open;          /* 1: /metrics open to all; 0: this host's peers only */
    long long http_max_header_bytes; /* request line + headers past this: refused, closed */
    long long http_timeout_s;        /* a connection silent this long is closed */
    long long http_read_timeout_ms;  /* a request not whole this long after its first byte */
    long long max_connections;       /* on the HTTP port at once (sk_http) */
    char *redis_url;       /* "" : outcomes are not recorded in the order index (consumer_oidx.h) */
    long long index_ttl_s; /* the order index's expiry, as seckill-order's order.index_ttl_s */
    long long expiry_interval_ms; /* between expiry rounds (consumer_expiry.h); 0: off */
    long long expiry_batch;       /* orders per expiry statement and per release sweep */
    char *events_topic;           /* seckill.order-events (consumer_events.h); "" : off */
    char *events_slot;            /* the logical replication slot; "": seckill_events_<db> */
    long long events_interval_ms; /* between attempts to stream the slot */
    long long events_lag_alarm_bytes; /* the slot's kept WAL past this: logged */
    int migrate;
    char *log_level;
    char *msg_keys; /* order.msg_keys (secret): "signing[,previous]"; "" : not verified */
} consumer_cfg;

typedef struct consumer_loop consumer_loop;

/** @brief Creates the consumer (subscribed to cfg->topic) and the DLQ producer.
 *  `cfg`, `kafka` and `m` are borrowed and must outlive the loop.
 *  @returns the loop, or NULL with errstr set. */
consumer_loop *consumer_loop_new(const consumer_cfg *cfg, const sk_cfg_kv *kafka,
                                 consumer_metrics *m, char *errstr, size_t errstr_size);

/** @brief Runs until *stop becomes non-zero (a signal handler sets it), then finishes
 *  the batch (within cfg->shutdown_ms), commits, and leaves the group.
 *  @returns 0 on a clean stop, -1 on a fatal Kafka error. */
int consumer_loop_run(consumer_loop *l, volatile sig_atomic_t *stop);

/** @brief Destroys the Kafka handles and frees. NULL is fine. */
void consumer_loop_free(consumer_loop *l);

#endif
