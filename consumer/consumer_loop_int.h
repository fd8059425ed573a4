/* consumer_loop_int.h: the insides of consumer_loop, shared by its files; not installed.
 *
 * consumer_loop is five files, each calling only those below it (no file calls back up):
 *
 *   consumer_loop.c    public API, the Kafka clients' set-up, the poll loop, shutdown
 *     consumer_group.c   the rebalance callback (assign, revoke)
 *       consumer_lane.c    writer threads ("lanes"), batch hand-off, failure policy
 *         consumer_dlq.c     dead letters of a finished batch
 *         consumer_offset.c  offset commits of a finished batch, lag
 *
 * Threads: the caller's thread (the "main" thread) runs everything here except
 * lane_thread in consumer_lane.c; librdkafka serves every callback below on the main
 * thread, inside its poll, flush and close calls. A lane's fields are the main thread's
 * but for those marked "under mu" (see struct lane).
 *
 * Ownership: consumer_loop owns its lanes (consumer_lane_init .. consumer_lane_destroy),
 * the two Kafka handles and the consumer queue; cfg and m are borrowed from the caller. */
#ifndef CONSUMER_LOOP_INT_H
#define CONSUMER_LOOP_INT_H

#include "consumer_batch.h"
#include "consumer_db.h"
#include "consumer_loop.h"
#include "consumer_oidx.h"

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#define MAX_LANES 16
/* Full batches a lane may hold for its writer besides the one being written and the one
 * filling (see struct lane). */
#define LANE_READY_MAX 3

typedef enum { LANE_IDLE, LANE_BUSY, LANE_DONE } lane_state;

typedef struct lane {
    int idx;
    struct consumer_loop *l;
    consumer_db *db;             /* used by the lane thread, or by main while IDLE */
    consumer_oidx *oidx;         /* with db; NULL when no redis.url is set */
    consumer_batch *filling;     /* main thread: messages arriving */
    int64_t filling_deadline_ms; /* when `filling` is old enough to write */
    /* Full batches waiting for the writer, oldest first (main thread). Intake goes on
     * into `filling` while the writer works through them: the consumer queue hands out
     * a partition's fetched messages in one run, a whole record batch at least, and with
     * one batch of room a long run of this lane's partitions held intake while the other
     * lane idled (writers busy 64% against 92%, docs/benchmarks.md round 14). */
    consumer_batch *ready[LANE_READY_MAX];
    int nready;
    consumer_batch *spare[LANE_READY_MAX + 1]; /* empty batches for `filling` */
    int nspare;
    consumer_batch *writing;     /* handed to the thread while BUSY; kept on failure */
    int deduped, db_done;        /* progress of `writing` (main thread) */
    int failing;                 /* `writing` failed: retry at next_retry_ms */
    int64_t next_retry_ms, backoff_ms;
    int64_t failing_since_ms; /* first failure of `writing`, while failing */
    int paused;
    /* Shared with the lane thread, under mu. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    lane_state state;
    int quit;
    int rc;
    consumer_db_result res;
    double secs;
    pthread_t thread;
    int started;
} lane;

struct consumer_loop {
    const consumer_cfg *cfg;
    consumer_metrics *m;
    rd_kafka_t *rk;  /* the group consumer */
    rd_kafka_t *dlq; /* the dead-letter producer */
    rd_kafka_queue_t *cq; /* the consumer queue: lanes wake the main thread through it */
    lane lanes[MAX_LANES];
    int nlanes;
    int dlq_failed; /* delivery reports with an error that may pass, since the last flush */
    size_t dlq_max_bytes; /* the DLQ producer's message.max.bytes */
    int fatal;
    sk_order_msg_keys *msg_keys; /* order.msg_keys; NULL: messages are not verified */
    /* Bumped by a lane thread each time it finishes a write (under done_mu, done_cv
     * broadcast): the main thread, holding intake, waits for any lane, not one. */
    pthread_mutex_t done_mu;
    pthread_cond_t done_cv;
    unsigned done_seq;
};

static inline int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the rebalance callback (consumer_group.c) ---- */

/** @brief rd_kafka_conf_set_rebalance_cb's callback; opaque is the consumer_loop.
 *  @remark Main thread (inside rd_kafka_consumer_poll or rd_kafka_consumer_close). */
void consumer_group_on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                                 rd_kafka_topic_partition_list_t *parts, void *opaque);

/* ---- writer lanes (consumer_lane.c) ---- */

/** @brief Sets up lane idx of l: its batches, PostgreSQL writer and order index (no
 *  thread yet). @returns 0 or -1 (errstr set); what was made is freed by
 *  consumer_lane_destroy, which the caller calls on every lane either way. */
int consumer_lane_init(consumer_loop *l, int idx, char *errstr, size_t errstr_size);

/** @brief Starts the lane's writer thread. @returns 0, or -1 if it could not start. */
int consumer_lane_start(lane *ln);

/** @brief Tells a started lane thread to quit and joins it; no-op if never started. */
void consumer_lane_stop(lane *ln);

/** @brief Frees what consumer_lane_init made. Its thread must be stopped. */
void consumer_lane_destroy(lane *ln);

/** @brief The lane's state, read under its mutex. */
lane_state consumer_lane_get_state(lane *ln);

/** @brief How many writes the lanes have finished so far (l->done_seq). */
unsigned consumer_lane_done_seq(consumer_loop *l);

/** @brief Waits up to ms for some lane to finish a write after consumer_lane_done_seq
 *  answered seq (at once if one did already). */
void consumer_lane_wait_any(consumer_loop *l, unsigned seq, int ms);

/** @brief The main thread's turn on one lane: collect a result, start the next write. */
void consumer_lane_service(consumer_loop *l, lane *ln);

/** @brief Makes room in `filling` for one more message: a full `filling` joins the ready
 *  batches when they have room. @returns 1 when `filling` has room (or is empty), 0
 *  when the lane holds all it may (filling full and LANE_READY_MAX batches ready). */
int consumer_lane_room(consumer_loop *l, lane *ln);

/** @brief The number of batches the lane holds (writing, ready, filling) and each in
 *  order, oldest first, into held[LANE_READY_MAX + 2]. Inline: consumer_offset.c, below
 *  consumer_lane.c, reads them too. */
static inline int consumer_lane_held(lane *ln, consumer_batch **held)
{
    int n = 0;
    held[n++] = ln->writing;
    for (int i = 0; i < ln->nready; i++)
        held[n++] = ln->ready[i];
    held[n++] = ln->filling;
    return n;
}

/** @brief Writes everything the lane holds on the main thread, abandoning what cannot be
 *  written by deadline_ms (one attempt each if already past); `why` is logged. */
void consumer_lane_drain_sync(consumer_loop *l, lane *ln, int64_t deadline_ms, const char *why);

/** @brief Pauses (1) or resumes (0) the lane's assigned partitions; updates m->paused. */
void consumer_lane_set_paused(consumer_loop *l, lane *ln, int pause);

/* ---- dead letters (consumer_dlq.c) ---- */

/** @brief rd_kafka_conf_set_dr_msg_cb's callback of the DLQ producer; opaque is the
 *  consumer_loop, msg_opaque the consumer_batch_msg. @remark Main thread, inside
 *  rd_kafka_flush or rd_kafka_poll of l->dlq. */
void consumer_dlq_on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque);

/** @brief Produces every poison message of b not yet in the DLQ and waits for the
 *  reports. @returns 0 when each is acknowledged or given up, -1 to retry later. */
int consumer_dlq_send_batch(consumer_loop *l, consumer_batch *b);

/* ---- offsets (consumer_offset.c) ---- */

/** @brief rd_kafka_conf_set_offset_commit_cb's callback: logs a failed commit. */
void consumer_offset_on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                               rd_kafka_topic_partition_list_t *offsets, void *opaque);

/** @brief Commits "highest offset + 1" of each partition of b, synchronously if sync. */
void consumer_offset_commit(consumer_loop *l, consumer_batch *b, int sync);

/** @brief Publishes each assigned partition's lag and the writers retrying (metrics). */
void consumer_offset_lag_update(consumer_loop *l);

#endif
