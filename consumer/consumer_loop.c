/* consumer_loop: Kafka consumer group -> batches -> PostgreSQL -> DLQ -> commit.
 * See consumer_loop.h for the design and consumer_loop_int.h for how its files divide
 * the work. This file is the public API: it builds the Kafka clients and the lanes,
 * runs the poll loop (batch intake, backpressure, wake-ups) and shuts down.
 *
 * Threads: the caller's thread (the "main" thread) runs Kafka (poll, rebalance
 * callback, DLQ, commits) and builds batches; PostgreSQL writes run on the lanes'
 * threads (consumer_lane.c). */
#include "consumer_loop_int.h"
#include "sk_kafka_conf.h"

#include <sk_log.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- the Kafka clients (callbacks served from our thread, inside poll/flush calls) ---- */

static void on_kafka_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    consumer_loop *l = opaque;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char why[512];
        rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, why, sizeof(why));
        sk_log(SK_LOG_ERROR, "kafka_fatal", "client=%s err=%s reason=\"%s\"", rd_kafka_name(rk),
               rd_kafka_err2name(orig), why);
        l->fatal = 1;
        return;
    }
    /* Transport errors while a broker is away are routine: librdkafka reconnects. */
    sk_log(SK_LOG_WARN, "kafka_error", "client=%s err=%s reason=\"%s\"", rd_kafka_name(rk),
           rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
}

/* ---- setup ---- */

/* Our defaults, then the operator's kafka.* settings, then `forced` (the delivery
 * guarantee, which cannot be overridden): sk_kafka_conf.h, the rule every client shares
 * (an unknown kafka.* key is refused, naming it). */
static rd_kafka_conf_t *conf_build(consumer_loop *l, sk_kafka_role role, const sk_cfg_kv *kafka,
                                   const char *const *defaults, const char *const *forced,
                                   char *errstr, size_t errstr_size)
{
    rd_kafka_conf_t *conf = sk_kafka_conf_new(role, defaults, kafka, forced, errstr, errstr_size);
    if (!conf)
        return NULL;
    rd_kafka_conf_set_opaque(conf, l);
    rd_kafka_conf_set_error_cb(conf, on_kafka_error);
    return conf;
}

/* Sets up the writer lanes: their batches, PostgreSQL writer and order index.
 * @returns 0 or -1 (errstr set; consumer_loop_free cleans up). */
static int loop_lanes_init(consumer_loop *l, char *errstr, size_t errstr_size)
{
    for (int i = 0; i < l->nlanes; i++)
        if (consumer_lane_init(l, i, errstr, errstr_size) != 0)
            return -1;
    return 0;
}

/* Makes l->rk, the group consumer, and subscribes it to the orders topic.
 * @returns 0 or -1 (errstr set). */
static int loop_consumer_new(consumer_loop *l, const sk_cfg_kv *kafka, char *errstr,
                             size_t errstr_size)
{
    const consumer_cfg *cfg = l->cfg;
    /* max.partition.fetch.bytes 64 KB (librdkafka: 1 MB): the consumer queue hands out
     * a partition's fetched messages in one run, i.e. one writer's share at a time;
     * shorter runs kept both writers fed (drains +7 to +17%, docs/benchmarks.md). Since
     * a writer can queue a long run (LANE_READY_MAX), 1 MB measured better on Apache
     * Kafka and worse on the dev Kafka (round 14): 64 KB stays. */
    /* reconnect.backoff.max.ms 1 s (librdkafka: 10 s): after a link that reset every
     * connection for 5 s the backoff had grown so that the drain came back 9.6 s after
     * the link did (tests/fault/netfault.sh consumer-kafka reset). */
    const char *cons_defaults[] = {"client.id", "seckill-consumer",
                                   "auto.offset.reset", "earliest",
                                   "partition.assignment.strategy", "range,roundrobin",
                                   "max.partition.fetch.bytes", "65536",
                                   "reconnect.backoff.max.ms", "1000",
                                   NULL};
    const char *cons_forced[] = {"group.id", cfg->group_id,
                                 /* offsets are committed by us, after the DB commit */
                                 "enable.auto.commit", "false",
                                 "enable.auto.offset.store", "false",
                                 "enable.partition.eof", "false",
                                 NULL};
    rd_kafka_conf_t *conf = conf_build(l, SK_KAFKA_CONSUMER, kafka, cons_defaults, cons_forced,
                                      errstr, errstr_size);
    if (!conf)
        return -1;
    rd_kafka_conf_set_rebalance_cb(conf, consumer_group_on_rebalance);
    rd_kafka_conf_set_offset_commit_cb(conf, consumer_offset_on_commit);
    l->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, errstr_size);
    if (!l->rk) {
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    /* conf is owned by rk now */
    rd_kafka_poll_set_consumer(l->rk);
    return 0;
}

/* Makes l->dlq, the dead-letter producer, and learns its message size bound.
 * @returns 0 or -1 (errstr set). */
static int loop_dlq_new(consumer_loop *l, const sk_cfg_kv *kafka, char *errstr,
                        size_t errstr_size)
{
    const char *dlq_defaults[] = {"client.id", "seckill-consumer-dlq", "linger.ms", "5", NULL};
    const char *dlq_forced[] = {"enable.idempotence", "true", "acks", "all", NULL};
    /* The operator's kafka.* apply to both clients; consumer-only properties only earn
     * a warning from the producer, so they are passed on (sk_kafka_conf.h leaves out only
     * producer-only ones, from the consumer). */
    rd_kafka_conf_t *conf = conf_build(l, SK_KAFKA_PRODUCER, kafka, dlq_defaults, dlq_forced,
                                       errstr, errstr_size);
    if (!conf)
        return -1;
    char maxb[32];
    size_t maxb_len = sizeof(maxb);
    l->dlq_max_bytes =
        rd_kafka_conf_get(conf, "message.max.bytes", maxb, &maxb_len) == RD_KAFKA_CONF_OK
            ? (size_t)strtoull(maxb, NULL, 10)
            : 1000000;
    rd_kafka_conf_set_dr_msg_cb(conf, consumer_dlq_on_delivery);
    l->dlq = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, errstr_size);
    if (!l->dlq) {
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    return 0;
}

/* Subscribes to the orders topic and starts the writer threads.
 * @returns 0 or -1 (errstr set). */
static int loop_subscribe_start(consumer_loop *l, char *errstr, size_t errstr_size)
{
    const consumer_cfg *cfg = l->cfg;
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, cfg->topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t err = rd_kafka_subscribe(l->rk, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (err) {
        snprintf(errstr, errstr_size, "subscribe %s: %s", cfg->topic, rd_kafka_err2str(err));
        return -1;
    }
    l->cq = rd_kafka_queue_get_consumer(l->rk);
    for (int i = 0; i < l->nlanes; i++) {
        if (consumer_lane_start(&l->lanes[i]) != 0) {
            snprintf(errstr, errstr_size, "cannot start a writer thread");
            return -1;
        }
    }
    return 0;
}

consumer_loop *consumer_loop_new(const consumer_cfg *cfg, const sk_cfg_kv *kafka,
                                 consumer_metrics *m, char *errstr, size_t errstr_size)
{
    consumer_loop *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    l->cfg = cfg;
    l->m = m;
    pthread_mutex_init(&l->done_mu, NULL);
    pthread_cond_init(&l->done_cv, NULL);
    if (cfg->msg_keys && *cfg->msg_keys) {
        char why[128];
        if (!(l->msg_keys = sk_order_msg_keys_new(cfg->msg_keys, why, sizeof(why)))) {
            snprintf(errstr, errstr_size, "order.msg_keys: %s", why);
            free(l);
            return NULL;
        }
    } else {
        sk_log(SK_LOG_WARN, "msg_keys_unset",
               "msg=\"order.msg_keys is empty: order messages are not verified, anyone who "
               "can produce to the orders topic can create orders\"");
    }
    l->nlanes =
        (int)(cfg->writers < 1 ? 1 : cfg->writers > MAX_LANES ? MAX_LANES : cfg->writers);
    if (loop_lanes_init(l, errstr, errstr_size) != 0 ||
        loop_consumer_new(l, kafka, errstr, errstr_size) != 0 ||
        loop_dlq_new(l, kafka, errstr, errstr_size) != 0 ||
        loop_subscribe_start(l, errstr, errstr_size) != 0) {
        consumer_loop_free(l);
        return NULL;
    }
    return l;
}

/* Messages taken in one run between two looks at the lanes (consumer_loop_run). */
#define LOOP_RUN_MAX 64

/* When the main loop must look again at the latest: a retry or a batch.ms deadline
 * of some lane, and at most 100 ms from `now` (the stop flag is checked this often).
 * A deadline counts only for a lane that can take its batch now: a busy lane's thread
 * wakes the poll itself when its write is done (rd_kafka_queue_yield), and a failing
 * lane's batch waits for its retry. Waking for a deadline that cannot be acted on made
 * the loop spin on a zero poll timeout for the whole write (over 100,000 empty polls a
 * second, docs/benchmarks.md round 14), a core's time taken from the writers. */
static int64_t loop_next_wake(consumer_loop *l, int64_t now)
{
    int64_t wake = now + 100;
    for (int i = 0; i < l->nlanes; i++) {
        lane *ln = &l->lanes[i];
        if (consumer_lane_get_state(ln) == LANE_BUSY)
            continue;
        size_t writing = consumer_batch_count(ln->writing);
        if (ln->failing && writing > 0 && ln->next_retry_ms < wake)
            wake = ln->next_retry_ms;
        if (writing == 0 && consumer_batch_count(ln->filling) > 0 &&
            ln->filling_deadline_ms < wake)
            wake = ln->filling_deadline_ms;
    }
    return wake;
}

/* Backpressure: a writer still busy and its lane holding all it may (a full `filling`
 * and LANE_READY_MAX full batches behind the one being written) means the database is
 * the bottleneck: take nothing more in until a write is done (a write takes far less
 * than max.poll.interval.ms). A failing writer is not busy (its partitions are paused
 * instead), so polling goes on. The wait ends when any lane finishes, not only the full
 * one: a lane done meanwhile gets its next batch at once.
 * @returns 1 when intake was held (waited up to 100 ms), 0 when no lane is full. */
static int loop_hold_intake(consumer_loop *l, int64_t now)
{
    /* Read before the states below: a lane finishing after it bumps it, so the wait
     * cannot miss that finish. */
    unsigned seq = consumer_lane_done_seq(l);
    lane *full = NULL;
    for (int i = 0; i < l->nlanes && !full; i++)
        if (!consumer_lane_room(l, &l->lanes[i]) &&
            consumer_lane_get_state(&l->lanes[i]) == LANE_BUSY)
            full = &l->lanes[i];
    if (!full)
        return 0;
    /* Intake is stopped for every lane: the others get nothing more until the full one
     * is done, so an idle lane writes what it holds now rather than idling until its
     * batch.ms deadline (Kafka hands out partitions in long runs: one lane's partitions
     * at a time). */
    for (int i = 0; i < l->nlanes; i++) {
        lane *ln = &l->lanes[i];
        if (ln != full && consumer_batch_count(ln->filling) > 0) {
            ln->filling_deadline_ms = now;
            consumer_lane_service(l, ln);
        }
    }
    consumer_lane_wait_any(l, seq, 100);
    for (int i = 0; i < l->nlanes; i++)
        consumer_lane_service(l, &l->lanes[i]);
    return 1;
}

/* Adds a polled message to its partition's lane batch (and destroys it); errors of
 * the consumer are logged. Sets l->fatal when out of memory. */
static void loop_take(consumer_loop *l, rd_kafka_message_t *msg, int64_t now)
{
    if (msg->err) {
        if (msg->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            sk_log(SK_LOG_WARN, "consume_error", "err=%s msg=\"%s\"",
                   rd_kafka_err2name(msg->err), rd_kafka_message_errstr(msg));
    } else {
        lane *ln = &l->lanes[(msg->partition < 0 ? 0 : msg->partition) % l->nlanes];
        /* Held intake saw to it that a busy lane has room; one that cannot write (a
         * failing one: its partitions are paused) takes the message beyond batch.max. */
        consumer_lane_room(l, ln);
        if (consumer_batch_count(ln->filling) == 0)
            ln->filling_deadline_ms = now + l->cfg->batch_ms;
        if (consumer_batch_add(ln->filling, msg->partition, msg->offset, msg->key,
                               msg->key_len, msg->payload, msg->len) != 0) {
            sk_log(SK_LOG_ERROR, "out_of_memory", "where=batch_add");
            l->fatal = 1;
        } else {
            /* Only the gate's messages are orders (issue 33): a decoded one without
             * the keys' MAC is dead-lettered as bad_mac and changes nothing. */
            consumer_batch_msg *bm =
                consumer_batch_msg_at(ln->filling, consumer_batch_count(ln->filling) - 1);
            if (bm->err == CONSUMER_MSG_OK)
                bm->err = consumer_msg_verify(l->msg_keys, &bm->order);
        }
        atomic_fetch_add_explicit(&l->m->consumed, 1, memory_order_relaxed);
    }
    rd_kafka_message_destroy(msg);
}

int consumer_loop_run(consumer_loop *l, volatile sig_atomic_t *stop)
{
    int64_t next_lag = 0;
    sk_log(SK_LOG_INFO, "consuming",
           "topic=%s group=%s dlq=%s batch_max=%lld batch_ms=%lld writers=%d", l->cfg->topic,
           l->cfg->group_id, l->cfg->dlq_topic, l->cfg->batch_max, l->cfg->batch_ms, l->nlanes);
    while (!*stop && !l->fatal) {
        int64_t now = now_ms();
        int64_t wake = loop_next_wake(l, now);
        if (loop_hold_intake(l, now))
            continue;
        int timeout = wake > now ? (int)(wake - now) : 0;
        /* Lane threads wake this poll (rd_kafka_queue_yield) when a write finishes. */
        rd_kafka_message_t *msg = rd_kafka_consumer_poll(l->rk, timeout);
        /* What is already fetched is taken in a run of up to LOOP_RUN_MAX, until a lane
         * holds all it may, before the lanes are looked at again: looked at per message,
         * their mutexes and the clock reads were about 8% of the consumer's CPU (perf,
         * docs/benchmarks.md round 14). */
        for (int n = 1; msg && !l->fatal; n++) {
            lane *ln = &l->lanes[(msg->partition < 0 ? 0 : msg->partition) % l->nlanes];
            loop_take(l, msg, now);
            if (n == LOOP_RUN_MAX || !consumer_lane_room(l, ln))
                break;
            msg = rd_kafka_consumer_poll(l->rk, 0);
        }
        now = now_ms();
        for (int i = 0; i < l->nlanes; i++)
            consumer_lane_service(l, &l->lanes[i]);
        if (now >= next_lag) {
            consumer_offset_lag_update(l);
            rd_kafka_poll(l->dlq, 0);
            next_lag = now + 1000;
        }
    }

    /* Shutdown: finish every batch within shutdown_ms (retrying if the database is
     * away), then close, which leaves the group (we commit ourselves). */
    int64_t deadline = now_ms() + l->cfg->shutdown_ms;
    for (int i = 0; i < l->nlanes; i++)
        consumer_lane_drain_sync(l, &l->lanes[i], deadline, "shutdown");
    rd_kafka_resp_err_t err = rd_kafka_consumer_close(l->rk);
    if (err)
        sk_log(SK_LOG_WARN, "close_failed", "err=%s", rd_kafka_err2name(err));
    rd_kafka_flush(l->dlq, 5000);
    sk_log(SK_LOG_INFO, "stopped", "fatal=%d", l->fatal);
    return l->fatal ? -1 : 0;
}

void consumer_loop_free(consumer_loop *l)
{
    if (!l)
        return;
    for (int i = 0; i < l->nlanes; i++)
        consumer_lane_stop(&l->lanes[i]);
    if (l->cq)
        rd_kafka_queue_destroy(l->cq);
    if (l->rk)
        rd_kafka_destroy(l->rk);
    if (l->dlq)
        rd_kafka_destroy(l->dlq);
    /* After the Kafka handles: none of their callbacks may run on a freed lane. */
    for (int i = 0; i < l->nlanes; i++)
        consumer_lane_destroy(&l->lanes[i]);
    sk_order_msg_keys_free(l->msg_keys);
    pthread_mutex_destroy(&l->done_mu);
    pthread_cond_destroy(&l->done_cv);
    free(l);
}
