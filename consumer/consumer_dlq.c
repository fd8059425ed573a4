/* consumer_dlq: the dead letters of a batch whose database step is done. Every poison
 * message (malformed, or for an unknown event) goes to dlq.topic with headers naming its
 * error and source position, before the batch's offsets are committed; so an offset is
 * committed only once its message is in PostgreSQL or in the DLQ. Main thread only: the
 * delivery reports are served inside rd_kafka_flush and rd_kafka_poll of l->dlq. */
#include "consumer_loop_int.h"

#include <inttypes.h>
#include <sk_log.h>
#include <stdio.h>

/* Dead letters must never stop a partition. A copy that cannot fit (the producer's
 * message.max.bytes counts key, value and headers) is truncated to fit, and a copy
 * the DLQ refuses with an error that no retry can change (size, format) is sent
 * again as a short copy; if even that is refused, the message is given up (logged
 * with its position, counted: it is still in the source topic). Only errors that
 * may pass (broker away, timeouts) keep the batch, and thus the lane, retrying. */
#define DLQ_HEADROOM 4096    /* bytes kept under message.max.bytes for headers and framing */
#define DLQ_SHORT_VALUE 1024 /* value bytes of the short copy sent after a refusal */
#define DLQ_SHORT_KEY 256    /* key bytes of the short copy */

enum { DLQ_PENDING = 0, DLQ_ACKED = 1, DLQ_GIVEN_UP = 2 };

/* @returns 1 if a produce or delivery error will not change on retry. */
static int dlq_err_permanent(rd_kafka_resp_err_t err)
{
    switch (err) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
    case RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
        return 1;
    default:
        return 0;
    }
}

/* A message gives up on the DLQ: logged with its position so it can be found. */
static void dlq_give_up(consumer_loop *l, consumer_batch_msg *m, rd_kafka_resp_err_t err)
{
    m->dlq_state = DLQ_GIVEN_UP;
    atomic_fetch_add(&l->m->dlq_dropped, 1);
    sk_log(SK_LOG_ERROR, "dead_letter_dropped",
           "error=%s dlq_err=%s topic=%s partition=%" PRId32 " offset=%" PRId64 " size=%zu",
           consumer_msg_strerror(m->err), rd_kafka_err2name(err), l->cfg->topic, m->partition,
           m->offset, m->val_len);
}

/* Marks the batch message (msg_opaque) acknowledged, to be sent short, given up, or
 * counts a failure that may pass (the batch is retried). Served inside rd_kafka_flush. */
void consumer_dlq_on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
    consumer_loop *l = opaque;
    consumer_batch_msg *m = msg->_private;
    if (!msg->err) {
        if (m) {
            m->dlq_state = DLQ_ACKED;
            atomic_fetch_add(&l->m->dead_lettered[m->err], 1);
            if (m->dlq_small || msg->len < m->val_len)
                atomic_fetch_add(&l->m->dlq_truncated, 1);
            sk_log(SK_LOG_INFO, "dead_letter",
                   "error=%s partition=%" PRId32 " offset=%" PRId64 " size=%zu sent=%zu",
                   consumer_msg_strerror(m->err), m->partition, m->offset, m->val_len, msg->len);
        }
        return;
    }
    if (m && dlq_err_permanent(msg->err)) {
        if (!m->dlq_small) {
            m->dlq_small = 1;
            m->dlq_why = msg->err;
            sk_log(SK_LOG_WARN, "dlq_refused", "err=%s partition=%" PRId32 " offset=%" PRId64
                   " size=%zu next=short_copy", rd_kafka_err2name(msg->err), m->partition,
                   m->offset, m->val_len);
        } else {
            dlq_give_up(l, m, msg->err);
        }
        return;
    }
    l->dlq_failed++;
    sk_log(SK_LOG_WARN, "dlq_delivery_failed", "err=%s", rd_kafka_err2name(msg->err));
}

/* Produces one dead letter: as is if it fits, else truncated (headers say so).
 * @returns librdkafka's produce error (0: queued). */
static rd_kafka_resp_err_t dlq_produce_one(consumer_loop *l, consumer_batch *b,
                                           consumer_batch_msg *m)
{
    const void *key = consumer_batch_key(b, m);
    size_t klen = key ? m->key_len : 0, vlen = m->val_len;
    size_t room =
        l->dlq_max_bytes > DLQ_HEADROOM * 2 ? l->dlq_max_bytes - DLQ_HEADROOM : DLQ_HEADROOM;
    size_t kmax = m->dlq_small ? DLQ_SHORT_KEY : room / 2;
    size_t ksend = klen < kmax ? klen : kmax;
    size_t vmax = m->dlq_small ? DLQ_SHORT_VALUE : room - ksend;
    size_t vsend = vlen < vmax ? vlen : vmax;
    int truncated = ksend < klen || vsend < vlen;
    rd_kafka_headers_t *h = rd_kafka_headers_new(8);
    char part[16], off[24], size[24], ksize[24];
    snprintf(part, sizeof(part), "%" PRId32, m->partition);
    snprintf(off, sizeof(off), "%" PRId64, m->offset);
    rd_kafka_header_add(h, "error", -1, consumer_msg_strerror(m->err), -1);
    rd_kafka_header_add(h, "source.topic", -1, l->cfg->topic, -1);
    rd_kafka_header_add(h, "source.partition", -1, part, -1);
    rd_kafka_header_add(h, "source.offset", -1, off, -1);
    if (truncated) {
        /* Why it was cut: the DLQ's own refusal, or our producer's size limit. */
        rd_kafka_resp_err_t why =
            m->dlq_why ? (rd_kafka_resp_err_t)m->dlq_why : RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE;
        snprintf(size, sizeof(size), "%zu", vlen);
        snprintf(ksize, sizeof(ksize), "%zu", klen);
        rd_kafka_header_add(h, "truncated", -1, "true", -1);
        rd_kafka_header_add(h, "original.size", -1, size, -1);
        rd_kafka_header_add(h, "original.key.size", -1, ksize, -1);
        rd_kafka_header_add(h, "dlq.error", -1, rd_kafka_err2name(why), -1);
    }
    rd_kafka_resp_err_t err = rd_kafka_producev(
        l->dlq, RD_KAFKA_V_TOPIC(l->cfg->dlq_topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_KEY((void *)key, key ? ksend : 0),
        RD_KAFKA_V_VALUE((void *)consumer_batch_value(b, m), vsend), RD_KAFKA_V_HEADERS(h),
        RD_KAFKA_V_OPAQUE(m), RD_KAFKA_V_END);
    if (err)
        rd_kafka_headers_destroy(h); /* only freed by librdkafka on success */
    return err;
}

/* Produces every poison message of batch b not yet in the DLQ and waits for the
 * reports (delivery reports mark each message, see on_dlq_delivery). A refused copy
 * gets one more round as a short copy. @returns 0 when every poison message is
 * acknowledged or given up, -1 to retry later (an error that may pass). */
int consumer_dlq_send_batch(consumer_loop *l, consumer_batch *b)
{
    size_t n = consumer_batch_count(b);
    for (int round = 0; round < 3; round++) {
        size_t sent = 0;
        l->dlq_failed = 0;
        for (size_t i = 0; i < n && !l->dlq_failed; i++) {
            consumer_batch_msg *m = consumer_batch_msg_at(b, i);
            if (m->err == CONSUMER_MSG_OK || m->dlq_state != DLQ_PENDING)
                continue;
            rd_kafka_resp_err_t err = dlq_produce_one(l, b, m);
            if (err && dlq_err_permanent(err) && !m->dlq_small) {
                m->dlq_small = 1;
                m->dlq_why = err;
                err = dlq_produce_one(l, b, m);
            }
            if (err && dlq_err_permanent(err)) {
                dlq_give_up(l, m, err);
            } else if (err) {
                sk_log(SK_LOG_WARN, "dlq_produce_failed", "err=%s", rd_kafka_err2name(err));
                l->dlq_failed++;
            } else {
                sent++;
            }
        }
        if (sent == 0 && l->dlq_failed == 0)
            return 0;
        rd_kafka_resp_err_t err = rd_kafka_flush(l->dlq, 10000);
        if (err || l->dlq_failed) {
            sk_log(SK_LOG_WARN, "dlq_failed", "sent=%zu failed=%d flush=%s", sent, l->dlq_failed,
                   rd_kafka_err2name(err));
            if (err) {
                /* Nothing may stay in flight: its report points into this batch, which
                 * a revoke or shutdown may clear before the retry. */
                rd_kafka_purge(l->dlq, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
                rd_kafka_flush(l->dlq, 1000);
            }
            return -1;
        }
        /* Whatever the DLQ refused for good is PENDING again with dlq_small set. */
    }
    return 0;
}
