/* consumer_replay: `seckill-consumer replay` (see consumer_replay.h for the design). */
#include "consumer_replay.h"

#include "sk_id.h"
#include "sk_kafka_conf.h"
#include "sk_log.h"
#include "sk_order_msg.h"

#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPLAY_META_MS 10000 /* metadata and watermark queries */
#define REPLAY_ERROR_MAX 64  /* an error header's length we keep */

/* What becomes of one letter. */
typedef enum {
    REPLAY_SEND = 0,
    REPLAY_NOT_ASKED,  /* outside the filter */
    REPLAY_TRUNCATED,  /* a truncated copy: its bytes are gone */
    REPLAY_BAD_MAC,    /* never replayed: re-signing would launder a forged order */
} replay_pick;

static const char *const pick_name[] = {"send", "not_asked", "truncated", "bad_mac"};

void consumer_replay_usage(FILE *out)
{
    fprintf(out,
            "usage: seckill-consumer [--config FILE] replay (--event ID | --error NAME | --all)\n"
            "                        [--event ID --error NAME] [--dry-run] [--wait-ms N]\n"
            "Sends the chosen dead letters (dlq.topic) back to the orders topic unchanged, on\n"
            "the partition they came from; --dry-run lists them and sends nothing. Letters\n"
            "dead-lettered for a bad MAC and truncated copies are never sent.\n");
}

int consumer_replay_parse(int argc, char **argv, consumer_replay_opts *o, char *err, size_t errsz)
{
    *o = (consumer_replay_opts){.wait_ms = 30000};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--event") == 0 && v) {
            if (sk_id_parse_str(v, 1, INT64_MAX, &o->event_id) != 0) {
                snprintf(err, errsz, "--event: \"%s\" is not an event id", v);
                return 2;
            }
            i++;
        } else if (strcmp(a, "--error") == 0 && v) {
            if (!*v || strlen(v) > REPLAY_ERROR_MAX) {
                snprintf(err, errsz, "--error: a name like unknown_event");
                return 2;
            }
            o->error = v;
            i++;
        } else if (strcmp(a, "--wait-ms") == 0 && v) {
            char *end;
            o->wait_ms = strtoll(v, &end, 10);
            if (*end || end == v || o->wait_ms < 100 || o->wait_ms > 3600000) {
                snprintf(err, errsz, "--wait-ms: 100 to 3600000");
                return 2;
            }
            i++;
        } else if (strcmp(a, "--all") == 0) {
            o->all = 1;
        } else if (strcmp(a, "--dry-run") == 0) {
            o->dry_run = 1;
        } else {
            snprintf(err, errsz, "replay: unexpected argument \"%s\"", a);
            return 2;
        }
    }
    if (o->all == (o->event_id || o->error)) {
        snprintf(err, errsz, "replay: say which letters: --event ID and/or --error NAME, or --all");
        return 2;
    }
    return 0;
}

/* The letter's header `name` as a string into buf ("" when absent). */
static const char *header_of(rd_kafka_message_t *m, const char *name, char *buf, size_t sz)
{
    rd_kafka_headers_t *h = NULL;
    const void *val;
    size_t len;
    buf[0] = '\0';
    if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR &&
        rd_kafka_header_get_last(h, name, &val, &len) == RD_KAFKA_RESP_ERR_NO_ERROR && val) {
        size_t n = len < sz - 1 ? len : sz - 1;
        memcpy(buf, val, n);
        buf[n] = '\0';
    }
    return buf;
}

/* Decides one letter: the filter first (a letter not asked for is not reported as
 * skipped), then what can never be sent. */
static replay_pick replay_decide(const consumer_replay_opts *o, const char *error, int truncated,
                                 int decoded, const sk_order_msg *msg)
{
    if (o->error && strcmp(error, o->error) != 0)
        return REPLAY_NOT_ASKED;
    if (o->event_id && (!decoded || msg->event_id != o->event_id))
        return REPLAY_NOT_ASKED;
    if (truncated)
        return REPLAY_TRUNCATED;
    if (strcmp(error, "bad_mac") == 0)
        return REPLAY_BAD_MAC;
    return REPLAY_SEND;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Delivery reports: failures counted in the opaque. */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    if (m->err) {
        (*(int *)opaque)++;
        sk_log(SK_LOG_ERROR, "replay_delivery_failed", "err=%s", rd_kafka_err2name(m->err));
    }
}

/* The partition count of `topic`, or -1 (logged). */
static int partitions_of(rd_kafka_t *rk, const char *topic)
{
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    int n = -1;
    rd_kafka_resp_err_t err = t ? rd_kafka_metadata(rk, 0, t, &md, REPLAY_META_MS)
                                : RD_KAFKA_RESP_ERR__INVALID_ARG;
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1 && !md->topics[0].err)
        n = md->topics[0].partition_cnt;
    else
        sk_log(SK_LOG_ERROR, "replay_metadata_failed", "topic=%s err=%s", topic,
               rd_kafka_err2name(err ? err : md->topics[0].err));
    if (md)
        rd_kafka_metadata_destroy(md);
    if (t)
        rd_kafka_topic_destroy(t);
    return n;
}

/* The reader and the writer of one run, and its counts. */
typedef struct replay_run {
    const consumer_cfg *cfg;
    const consumer_replay_opts *o;
    FILE *out;
    rd_kafka_t *reader, *writer;
    int orders_parts;
    int64_t *end;      /* per DLQ partition: the offset to read up to (its end at the start) */
    int nparts, open;  /* partitions, those not read to their end yet */
    long sent, skipped, not_asked;
    int failed;        /* delivery failures */
} replay_run;

/* One letter: decided, listed, sent. @returns 0, or -1 (the produce failed). */
static int replay_one(replay_run *r, rd_kafka_message_t *m)
{
    char error[REPLAY_ERROR_MAX + 1], trunc[8], src[16];
    header_of(m, "error", error, sizeof(error));
    header_of(m, "truncated", trunc, sizeof(trunc));
    header_of(m, "source.partition", src, sizeof(src));
    sk_order_msg msg;
    int decoded = sk_order_msg_decode(m->payload, m->len, &msg) == SK_ORDER_MSG_OK;
    replay_pick pick = replay_decide(r->o, error, strcmp(trunc, "true") == 0, decoded, &msg);
    if (pick == REPLAY_NOT_ASKED) {
        r->not_asked++;
        return 0;
    }
    /* Back where it came from: the event's partition, as the front's partitioner chose. */
    char *end;
    long sp = strtol(src, &end, 10);
    int32_t part = *src && !*end && sp >= 0 && sp < r->orders_parts ? (int32_t)sp
                                                                     : RD_KAFKA_PARTITION_UA;
    const char *verb = pick != REPLAY_SEND ? "skip" : r->o->dry_run ? "would_send" : "send";
    fprintf(r->out, "%s dlq_partition=%" PRId32 " dlq_offset=%" PRId64 " error=%s", verb,
            m->partition, m->offset, error[0] ? error : "none");
    if (decoded)
        fprintf(r->out, " order_id=%" PRIu64 " event_id=%" PRIu64 " user_id=%" PRIu64,
                msg.order_id, msg.event_id, msg.user_id);
    if (pick != REPLAY_SEND) {
        fprintf(r->out, " reason=%s\n", pick_name[pick]);
        r->skipped++;
        return 0;
    }
    fprintf(r->out, " to=%s/%s\n", r->cfg->topic, part >= 0 ? src : "by_key");
    r->sent++;
    if (r->o->dry_run)
        return 0;
    char from[256];
    snprintf(from, sizeof(from), "%s/%" PRId32 "/%" PRId64, r->cfg->dlq_topic, m->partition,
             m->offset);
    rd_kafka_headers_t *h = rd_kafka_headers_new(1);
    rd_kafka_header_add(h, "replayed.from", -1, from, -1);
    rd_kafka_resp_err_t err;
    while ((err = rd_kafka_producev(r->writer, RD_KAFKA_V_TOPIC(r->cfg->topic),
                                    RD_KAFKA_V_PARTITION(part),
                                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                    RD_KAFKA_V_KEY(m->key, m->key_len),
                                    RD_KAFKA_V_VALUE(m->payload, m->len),
                                    RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END)) ==
           RD_KAFKA_RESP_ERR__QUEUE_FULL)
        rd_kafka_poll(r->writer, 100);
    if (err) {
        rd_kafka_headers_destroy(h); /* not taken on failure */
        sk_log(SK_LOG_ERROR, "replay_produce_failed", "err=%s", rd_kafka_err2name(err));
        return -1;
    }
    return 0;
}

/* Assigns every DLQ partition from its start, noting its end now. @returns 0 or -1. */
static int replay_assign(replay_run *r)
{
    int n = partitions_of(r->reader, r->cfg->dlq_topic);
    r->orders_parts = partitions_of(r->reader, r->cfg->topic);
    if (n < 0 || r->orders_parts < 0 || !(r->end = calloc((size_t)n + 1, sizeof(*r->end))))
        return -1;
    r->nparts = n;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n ? n : 1);
    for (int p = 0; p < n; p++) {
        int64_t lo, hi;
        rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
            r->reader, r->cfg->dlq_topic, p, &lo, &hi, REPLAY_META_MS);
        if (err) {
            sk_log(SK_LOG_ERROR, "replay_watermarks_failed", "partition=%d err=%s", p,
                   rd_kafka_err2name(err));
            rd_kafka_topic_partition_list_destroy(l);
            return -1;
        }
        r->end[p] = hi;
        if (hi > lo) {
            rd_kafka_topic_partition_list_add(l, r->cfg->dlq_topic, p)->offset = lo;
            r->open++;
        }
    }
    rd_kafka_resp_err_t err = r->open ? rd_kafka_assign(r->reader, l) : RD_KAFKA_RESP_ERR_NO_ERROR;
    rd_kafka_topic_partition_list_destroy(l);
    if (err)
        sk_log(SK_LOG_ERROR, "replay_assign_failed", "err=%s", rd_kafka_err2name(err));
    return err ? -1 : 0;
}

/* Reads every assigned partition up to its end, replaying as it goes. @returns 0 or -1. */
static int replay_read(replay_run *r, int64_t deadline)
{
    while (r->open > 0) {
        if (now_ms() > deadline) {
            sk_log(SK_LOG_ERROR, "replay_timeout", "partitions_unread=%d", r->open);
            return -1;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(r->reader, 200);
        if (!m)
            continue;
        if (m->err) { /* transient (a broker away): librdkafka goes on fetching */
            sk_log(SK_LOG_WARN, "replay_read_error", "err=%s", rd_kafka_err2name(m->err));
            rd_kafka_message_destroy(m);
            continue;
        }
        int rc = 0;
        if (m->partition >= 0 && m->partition < r->nparts && m->offset < r->end[m->partition]) {
            rc = replay_one(r, m);
            if (m->offset + 1 >= r->end[m->partition])
                r->open--;
        }
        rd_kafka_message_destroy(m);
        if (rc != 0)
            return -1;
    }
    return 0;
}

int consumer_replay_run(const consumer_cfg *cfg, const sk_cfg_kv *kafka,
                        const consumer_replay_opts *o, FILE *out)
{
    char err[512];
    replay_run r = {.cfg = cfg, .o = o, .out = out};
    int64_t deadline = now_ms() + o->wait_ms;
    /* A reader of its own: assigned, never committing, so the consumers' group and its
     * offsets are untouched. */
    const char *rdef[] = {"client.id", "seckill-consumer-replay", NULL};
    const char *rforced[] = {"group.id", "seckill-consumer-replay", "enable.auto.commit", "false",
                             "enable.auto.offset.store", "false", "enable.partition.eof", "false",
                             NULL};
    const char *wdef[] = {"client.id", "seckill-consumer-replay", "linger.ms", "5", NULL};
    const char *wforced[] = {"enable.idempotence", "true", "acks", "all", NULL};
    int rc = 1;
    rd_kafka_conf_t *rc_conf = sk_kafka_conf_new(SK_KAFKA_CONSUMER, rdef, kafka, rforced, err, sizeof(err));
    if (!rc_conf || !(r.reader = rd_kafka_new(RD_KAFKA_CONSUMER, rc_conf, err, sizeof(err)))) {
        if (rc_conf)
            rd_kafka_conf_destroy(rc_conf);
        sk_log(SK_LOG_ERROR, "replay_failed", "err=\"%s\"", err);
        goto out;
    }
    if (!o->dry_run) {
        rd_kafka_conf_t *wc = sk_kafka_conf_new(SK_KAFKA_PRODUCER, wdef, kafka, wforced, err, sizeof(err));
        if (wc) {
            rd_kafka_conf_set_opaque(wc, &r.failed);
            rd_kafka_conf_set_dr_msg_cb(wc, on_delivery);
        }
        if (!wc || !(r.writer = rd_kafka_new(RD_KAFKA_PRODUCER, wc, err, sizeof(err)))) {
            if (wc)
                rd_kafka_conf_destroy(wc);
            sk_log(SK_LOG_ERROR, "replay_failed", "err=\"%s\"", err);
            goto out;
        }
    }
    if (replay_assign(&r) != 0 || replay_read(&r, deadline) != 0)
        goto out;
    if (r.writer) {
        int64_t left = deadline - now_ms();
        rd_kafka_flush(r.writer, (int)(left > 1000 ? left : 1000));
        if (rd_kafka_outq_len(r.writer) > 0 || r.failed) {
            sk_log(SK_LOG_ERROR, "replay_failed", "undelivered=%d failed=%d",
                   rd_kafka_outq_len(r.writer), r.failed);
            goto out;
        }
    }
    rc = 0;
out:
    fprintf(out, "replay: %ld %s, %ld skipped, %ld not asked for%s\n", r.sent,
            o->dry_run ? "would be sent" : "sent", r.skipped, r.not_asked,
            rc ? " (failed: see the log)" : "");
    if (r.reader) {
        rd_kafka_consumer_close(r.reader);
        rd_kafka_destroy(r.reader);
    }
    if (r.writer)
        rd_kafka_destroy(r.writer);
    free(r.end);
    return rc;
}
