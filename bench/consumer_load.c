/* consumer-load: produces N contract order messages to a Kafka topic as fast as the
 * broker takes them, for the seckill-consumer benchmark (bench/bench-consumer.sh).
 * Order i: order_id = order_base + i, event_id = event_base + i % events (also the
 * key), user_id = 1 + i, ts_ms = now. With --per-second R (default 50,000) the ids are
 * numbered as libidgen numbers them (the second in the high 32 bits, a sequence below,
 * idgen_core.h) at R orders per second of ids: order_base + (i / R << 32) + i % R. The
 * order index keeps one Redis hash per second of ids (order_msg.h), and 50,000 is about
 * one front's accept ceiling on this machine type (README), so each hash holds what a
 * second of a sale puts there; --per-second 0 numbers them densely, order_base + i (a
 * million orders in one second's hash, which no sale makes). With --copy-file it also
 * writes the same rows as PostgreSQL COPY text (order_id, event_id, user_id, status,
 * created_at, kafka_partition, kafka_offset), so a raw COPY of the very same rows can be
 * timed.
 * --batch B (default 100): at most B messages per partition in one produce request, so
 * the topic holds record batches of the size the fronts write. A front produces with
 * linger.ms 0 (order/order_kafka.c): a request leaves as soon as the previous one is
 * answered, carrying what arrived meanwhile, tens of orders at a sale's peak. Produced
 * as fast as this program can, librdkafka's own limits made 1 MB batches (about 6,600
 * orders of one partition), and a fetch hands a whole batch over: the consumer got runs
 * of thousands of one writer's orders, which no sale makes (before a writer could queue
 * several batches they left the other writer idle: writers busy 64% in a third of the
 * drains, docs/benchmarks.md round 14). */
#include "sk_order_msg.h"

#include <getopt.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;

static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    if (m->err)
        failures++;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    const char *brokers = getenv("SECKILL_KAFKA_BROKERS"), *topic = "seckill.orders";
    const char *copy_file = NULL;
    long long count = 1000000, events = 12, event_base = 7000000000LL, order_base = 7000000000000LL;
    long long per_second = 50000, batch = 100;
    static const struct option opts[] = {
        {"brokers", required_argument, 0, 'b'}, {"topic", required_argument, 0, 't'},
        {"count", required_argument, 0, 'n'},   {"events", required_argument, 0, 'e'},
        {"event-base", required_argument, 0, 'E'}, {"order-base", required_argument, 0, 'O'},
        {"copy-file", required_argument, 0, 'c'}, {"per-second", required_argument, 0, 'r'},
        {"batch", required_argument, 0, 'B'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "b:t:n:e:E:O:c:r:B:h", opts, NULL)) != -1) {
        switch (o) {
        case 'b': brokers = optarg; break;
        case 't': topic = optarg; break;
        case 'n': count = atoll(optarg); break;
        case 'e': events = atoll(optarg); break;
        case 'E': event_base = atoll(optarg); break;
        case 'O': order_base = atoll(optarg); break;
        case 'c': copy_file = optarg; break;
        case 'r': per_second = atoll(optarg); break;
        case 'B': batch = atoll(optarg); break;
        default:
            fprintf(o == 'h' ? stdout : stderr,
                    "usage: consumer-load [--brokers B] [--topic T] [--count N] [--events E]\n"
                    "                     [--event-base ID] [--order-base ID] [--copy-file F]\n"
                    "                     [--per-second R] [--batch B]\n");
            return o == 'h' ? 0 : 2;
        }
    }
    if (!brokers || count <= 0 || events <= 0 || per_second < 0 || per_second > 0x7fffffffLL ||
        batch < 1 || batch > 1000000) {
        fprintf(stderr, "consumer-load: --brokers (or SECKILL_KAFKA_BROKERS), --count > 0, --events > 0,"
                        " 0 <= --per-second < 2^31, 1 <= --batch <= 1000000\n");
        return 2;
    }
    /* the sequence must stay below the second: order_base's low 32 bits plus R */
    if (per_second > 0 && (order_base & 0xffffffffLL) + per_second > 0xffffffffLL) {
        fprintf(stderr, "consumer-load: --order-base's low 32 bits + --per-second pass 2^32\n");
        return 2;
    }
    char err[512], batch_s[24];
    snprintf(batch_s, sizeof(batch_s), "%lld", batch);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *kv[] = {"bootstrap.servers", brokers, "linger.ms", "5", "enable.idempotence", "true",
                        "queue.buffering.max.messages", "1000000", "batch.num.messages", batch_s,
                        "compression.type", "none", NULL};
    for (int i = 0; kv[i]; i += 2)
        if (rd_kafka_conf_set(conf, kv[i], kv[i + 1], err, sizeof(err)) != RD_KAFKA_CONF_OK) {
            fprintf(stderr, "consumer-load: %s\n", err);
            return 1;
        }
    rd_kafka_conf_set_dr_msg_cb(conf, on_dr);
    rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    if (!p) {
        fprintf(stderr, "consumer-load: %s\n", err);
        return 1;
    }
    /* Signed as the fronts sign (issue 33): a consumer with order.msg_keys dead-letters
     * an unsigned message, so the load carries the stack's key when it has one. */
    sk_order_msg_keys *keys = NULL;
    const char *keyspec = getenv("SECKILL_ORDER_MSG_KEYS");
    if (keyspec && *keyspec && !(keys = sk_order_msg_keys_new(keyspec, err, sizeof(err)))) {
        fprintf(stderr, "consumer-load: SECKILL_ORDER_MSG_KEYS: %s\n", err);
        return 2;
    }
    FILE *cf = copy_file ? fopen(copy_file, "w") : NULL;
    if (copy_file && !cf) {
        perror(copy_file);
        return 1;
    }
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    long long ts_ms = (long long)wall.tv_sec * 1000 + wall.tv_nsec / 1000000;
    /* created_at as the consumer writes it: the order's ts_ms as a UTC timestamp. */
    char created[64];
    time_t secs0 = (time_t)(ts_ms / 1000);
    struct tm tm;
    gmtime_r(&secs0, &tm);
    snprintf(created, sizeof(created), "%04d-%02d-%02d %02d:%02d:%02d.%03lld+00", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts_ms % 1000);
    double t0 = now_s();
    for (long long i = 0; i < count; i++) {
        char val[SK_ORDER_MSG_MAX], key[24];
        long long ev = event_base + i % events;
        /* unsigned: the shift of a large count must wrap, not be undefined */
        uint64_t oid = per_second ? (uint64_t)order_base + ((uint64_t)(i / per_second) << 32) +
                                        (uint64_t)(i % per_second)
                                  : (uint64_t)(order_base + i);
        int kn = snprintf(key, sizeof(key), "%lld", ev);
        sk_order_msg m = {.order_id = oid, .event_id = (uint64_t)ev,
                          .user_id = (uint64_t)(1 + i), .ts_ms = ts_ms, .quantity = 1};
        if (keys && sk_order_msg_sign(keys, &m) != 0) {
            fprintf(stderr, "consumer-load: signing failed\n");
            return 1;
        }
        size_t vn = sk_order_msg_encode(&m, val, sizeof(val)); /* the front's encoder */
        for (;;) {
            rd_kafka_resp_err_t e = rd_kafka_producev(
                p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                RD_KAFKA_V_KEY(key, (size_t)kn), RD_KAFKA_V_VALUE(val, (size_t)vn), RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                rd_kafka_poll(p, 10);
                continue;
            }
            if (e) {
                fprintf(stderr, "consumer-load: produce: %s\n", rd_kafka_err2str(e));
                return 1;
            }
            break;
        }
        if (cf)
            fprintf(cf, "%" PRIu64 "\t%lld\t%lld\tcreated\t%s\t\\N\t\\N\n", oid, ev, 1 + i, created);
        rd_kafka_poll(p, 0);
    }
    rd_kafka_resp_err_t e = rd_kafka_flush(p, 120000);
    double secs = now_s() - t0;
    rd_kafka_destroy(p);
    sk_order_msg_keys_free(keys);
    if (cf && fclose(cf) != 0) {
        perror(copy_file);
        return 1;
    }
    if (e || failures) {
        fprintf(stderr, "consumer-load: flush %s, %d delivery failures\n", rd_kafka_err2str(e), failures);
        return 1;
    }
    printf("produced %lld orders in %.2f s (%.0f/s)\n", count, secs, (double)count / secs);
    return 0;
}
