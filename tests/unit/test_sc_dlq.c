/* Integration test of sc_dlq, seckill-check's dead-letter scan, against librdkafka's
 * mock cluster in this process (loopback sockets, no broker to start): dead letters of
 * several events over several partitions, keyed or not, must be counted per event; an
 * empty topic and a missing topic count 0; an unreachable cluster is an error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "sc_dlq.h"

typedef struct fixture {
    rd_kafka_t *mock_rk; /* owns the mock cluster */
    rd_kafka_mock_cluster_t *mc;
    char bootstrap[256];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "0", err, sizeof(err));
    f->mock_rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    assert_non_null(f->mock_rk);
    f->mc = rd_kafka_mock_cluster_new(f->mock_rk, 1);
    assert_non_null(f->mc);
    snprintf(f->bootstrap, sizeof(f->bootstrap), "%s", rd_kafka_mock_cluster_bootstraps(f->mc));
    assert_int_equal(rd_kafka_mock_topic_create(f->mc, "dlq.test", 3, 1), 0);
    assert_int_equal(rd_kafka_mock_topic_create(f->mc, "dlq.empty", 2, 1), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    rd_kafka_mock_cluster_destroy(f->mc);
    rd_kafka_destroy(f->mock_rk);
    free(f);
    return 0;
}

/* Produces one message (key may be NULL) to a given partition and waits for its ack. */
static void produce(const fixture *f, const char *topic, int32_t partition, const char *key,
                    const char *value)
{
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    assert_int_equal(rd_kafka_conf_set(conf, "bootstrap.servers", f->bootstrap, err, sizeof(err)), RD_KAFKA_CONF_OK);
    rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    assert_non_null(p);
    assert_int_equal(rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
                                       RD_KAFKA_V_KEY(key, key ? strlen(key) : 0),
                                       RD_KAFKA_V_VALUE((void *)value, strlen(value)),
                                       RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(rd_kafka_flush(p, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_destroy(p);
}

static sk_cfg_kv *brokers(const char *bootstrap)
{
    sk_cfg_kv *kv = calloc(1, sizeof(*kv));
    kv->key = strdup("bootstrap.servers");
    kv->value = strdup(bootstrap);
    return kv;
}

static void free_kv(sk_cfg_kv *kv)
{
    free(kv->key);
    free(kv->value);
    free(kv);
}

static void test_counts_per_event(void **state)
{
    fixture *f = *state;
    /* event 42: keyed on partition 0, unkeyed (body only) on 1, numeric body on 2;
     * event 420 and 7 must not be counted for 42. */
    produce(f, "dlq.test", 0, "42", "{\"v\":1,\"order_id\":\"1\",\"event_id\":\"42\",\"user_id\":\"5\",\"ts_ms\":1}");
    produce(f, "dlq.test", 1, NULL, "{\"event_id\":\"42\",\"garbage\":");
    produce(f, "dlq.test", 2, "x", "{\"event_id\": 42}");
    produce(f, "dlq.test", 0, "420", "{\"event_id\":\"420\"}");
    produce(f, "dlq.test", 1, "7", "not json at all");
    produce(f, "dlq.test", 2, NULL, "{\"event_id\":\"4200\"}");
    sk_cfg_kv *kv = brokers(f->bootstrap);
    char err[512] = "";
    long long n = -1;
    assert_int_equal(sc_dlq_count(kv, "dlq.test", "42", 15000, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 3);
    assert_int_equal(sc_dlq_count(kv, "dlq.test", "420", 15000, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 1);
    assert_int_equal(sc_dlq_count(kv, "dlq.test", "9", 15000, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 0);
    /* an empty topic and a topic that does not exist: nothing waits */
    assert_int_equal(sc_dlq_count(kv, "dlq.empty", "42", 15000, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 0);
    assert_int_equal(sc_dlq_count(kv, "dlq.missing", "42", 15000, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 0);
    free_kv(kv);
}

static void test_bad_settings_and_no_cluster(void **state)
{
    char err[512] = "";
    long long n;
    sk_cfg_kv *kv = brokers("127.0.0.1:1"); /* nothing listens on port 1 */
    assert_int_equal(sc_dlq_count(kv, "dlq.test", "42", 1500, &n, err, sizeof(err)), -1);
    assert_true(err[0] != '\0');
    free(kv->key);
    kv->key = strdup("no.such.property");
    err[0] = '\0';
    assert_int_equal(sc_dlq_count(kv, "dlq.test", "42", 1500, &n, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "no.such.property"));
    free_kv(kv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_per_event),
        cmocka_unit_test(test_bad_settings_and_no_cluster),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
