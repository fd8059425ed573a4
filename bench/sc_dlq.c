/* sc_dlq: dead-letter scan of seckill-check. See sc_dlq.h. */
#include "sc_dlq.h"

#include <librdkafka/rdkafka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sc_dlq_match.h"
#include "sk_kafka_conf.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sc_dlq_count(const sk_cfg_kv *kafka, const char *topic, const char *event_id, int timeout_ms,
                 long long *count, char *err, size_t errsz)
{
    char kerr[512], group[64];
    int64_t deadline = now_ms() + timeout_ms;
    *count = 0;
    /* A group id of its own only because the consumer API wants one: assign() never
     * joins the group and nothing is committed. */
    snprintf(group, sizeof(group), "seckill-check-%ld-%ld", (long)getpid(), (long)time(NULL));
    const char *const forced[] = {"group.id", group, "enable.auto.commit", "false",
                                  "enable.partition.eof", "true", NULL};
    rd_kafka_conf_t *conf = sk_kafka_conf_new(SK_KAFKA_CONSUMER, NULL, kafka, forced, err, errsz);
    if (!conf)
        return -1;
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, kerr, sizeof(kerr));
    if (!rk) {
        snprintf(err, errsz, "kafka: %s", kerr);
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    /* conf now belongs to rk */
    int rc = -1;
    rd_kafka_topic_partition_list_t *assign = NULL;
    int64_t *high = NULL;
    int *done = NULL;
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        snprintf(err, errsz, "kafka metadata: %s", rd_kafka_err2str(e));
        goto out;
    }
    if (md->topic_cnt != 1 || md->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
        md->topics[0].partition_cnt == 0) {
        rc = 0; /* no such topic: no dead letters */
        goto out;
    }
    if (md->topics[0].err) {
        snprintf(err, errsz, "kafka metadata %s: %s", topic, rd_kafka_err2str(md->topics[0].err));
        goto out;
    }
    int np = md->topics[0].partition_cnt;
    assign = rd_kafka_topic_partition_list_new(np);
    high = calloc((size_t)np, sizeof(*high));
    done = calloc((size_t)np, sizeof(*done));
    if (!high || !done) {
        snprintf(err, errsz, "out of memory");
        goto out;
    }
    int pending = 0;
    for (int i = 0; i < np; i++) {
        int32_t p = md->topics[0].partitions[i].id;
        int64_t lo, hi;
        int left = (int)(deadline - now_ms());
        e = rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi, left > 0 ? left : 1);
        if (e) {
            snprintf(err, errsz, "kafka watermarks %s[%d]: %s", topic, p, rd_kafka_err2str(e));
            goto out;
        }
        if (p >= 0 && p < np)
            high[p] = hi;
        if (hi > lo) {
            rd_kafka_topic_partition_list_add(assign, topic, p)->offset = lo;
            pending++;
        } else if (p >= 0 && p < np) {
            done[p] = 1;
        }
    }
    if (pending == 0) {
        rc = 0;
        goto out;
    }
    e = rd_kafka_assign(rk, assign);
    if (e) {
        snprintf(err, errsz, "kafka assign: %s", rd_kafka_err2str(e));
        goto out;
    }
    while (pending > 0) {
        int left = (int)(deadline - now_ms());
        if (left <= 0) {
            snprintf(err, errsz, "kafka: %s not read to its end within %d ms", topic, timeout_ms);
            goto out;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, left < 200 ? left : 200);
        if (!m)
            continue;
        int p = m->partition;
        if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            snprintf(err, errsz, "kafka consume %s: %s", topic, rd_kafka_message_errstr(m));
            rd_kafka_message_destroy(m);
            goto out;
        }
        if (!m->err && sc_dlq_matches(m->key, m->key_len, m->payload, m->len, event_id))
            (*count)++;
        if (p >= 0 && p < np && !done[p] &&
            (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF || m->offset >= high[p] - 1)) {
            done[p] = 1;
            pending--;
        }
        rd_kafka_message_destroy(m);
    }
    rc = 0;
out:
    if (md)
        rd_kafka_metadata_destroy(md);
    if (rkt)
        rd_kafka_topic_destroy(rkt);
    if (assign)
        rd_kafka_topic_partition_list_destroy(assign);
    free(high);
    free(done);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return rc;
}
