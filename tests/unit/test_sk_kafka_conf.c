/* Unit tests of sk_kafka_conf: the order defaults < kafka.* < forced, the one rule for
 * unknown keys and bad values (refused, naming the key), the consumer role leaving out
 * producer-only keys, and the log mapping. No broker: rd_kafka_conf_t only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "sk_kafka_conf.h"

static const char *get(rd_kafka_conf_t *conf, const char *key, char *buf, size_t bufsz)
{
    size_t n = bufsz;
    return rd_kafka_conf_get(conf, key, buf, &n) == RD_KAFKA_CONF_OK ? buf : "<unset>";
}

/* A two-entry kafka.* list, in the order the configuration wrote it. */
static sk_cfg_kv *props2(sk_cfg_kv kv[2], const char *k1, const char *v1, const char *k2,
                         const char *v2)
{
    kv[0] = (sk_cfg_kv){(char *)k1, (char *)v1, k2 ? &kv[1] : NULL};
    kv[1] = (sk_cfg_kv){(char *)k2, (char *)v2, NULL};
    return kv;
}

static void test_order_of_application(void **state)
{
    (void)state;
    char err[256], b[64];
    sk_cfg_kv kv[2];
    const char *const defaults[] = {"client.id", "ours", "linger.ms", "0", NULL};
    const char *const forced[] = {"enable.idempotence", "true", NULL};
    rd_kafka_conf_t *c = sk_kafka_conf_new(SK_KAFKA_PRODUCER, defaults,
                                           props2(kv, "linger.ms", "7", "enable.idempotence", "false"),
                                           forced, err, sizeof(err));
    assert_non_null(c);
    assert_string_equal(get(c, "client.id", b, sizeof(b)), "ours");     /* default kept */
    assert_string_equal(get(c, "linger.ms", b, sizeof(b)), "7");        /* kafka.* wins */
    assert_string_equal(get(c, "enable.idempotence", b, sizeof(b)), "true"); /* forced wins */
    rd_kafka_conf_destroy(c);
}

static void test_unknown_and_bad_refused(void **state)
{
    (void)state;
    char err[256];
    sk_cfg_kv kv[2];
    err[0] = 0;
    assert_null(sk_kafka_conf_new(SK_KAFKA_PRODUCER, NULL, props2(kv, "linger.ms", "1", "control", "9"),
                                  NULL, err, sizeof(err)));
    assert_string_equal(err, "kafka.control: unknown property");
    /* the consumer role refuses it too: one rule for every client */
    assert_null(sk_kafka_conf_new(SK_KAFKA_CONSUMER, NULL, props2(kv, "no.such.key", "1", NULL, NULL),
                                  NULL, err, sizeof(err)));
    assert_string_equal(err, "kafka.no.such.key: unknown property");
    assert_null(sk_kafka_conf_new(SK_KAFKA_PRODUCER, NULL, props2(kv, "linger.ms", "soon", NULL, NULL),
                                  NULL, err, sizeof(err)));
    assert_non_null(strstr(err, "kafka.linger.ms: "));
    /* our own defaults and forced settings follow the same rule */
    const char *const bad[] = {"acks", "sometimes", NULL};
    assert_null(sk_kafka_conf_new(SK_KAFKA_PRODUCER, bad, NULL, NULL, err, sizeof(err)));
    assert_non_null(strstr(err, "kafka.acks: "));
    assert_null(sk_kafka_conf_new(SK_KAFKA_PRODUCER, NULL, NULL, bad, err, sizeof(err)));
    assert_non_null(strstr(err, "kafka.acks: "));
}

static void test_consumer_leaves_out_producer_only(void **state)
{
    (void)state;
    char err[256], b[64], d[64];
    sk_cfg_kv kv[2];
    rd_kafka_conf_t *plain = rd_kafka_conf_new();
    const char *dflt = get(plain, "linger.ms", d, sizeof(d));
    rd_kafka_conf_t *c = sk_kafka_conf_new(SK_KAFKA_CONSUMER, NULL,
                                           props2(kv, "linger.ms", "77", "session.timeout.ms", "6001"),
                                           NULL, err, sizeof(err));
    assert_non_null(c);
    assert_string_equal(get(c, "linger.ms", b, sizeof(b)), dflt);
    assert_string_equal(get(c, "session.timeout.ms", b, sizeof(b)), "6001");
    rd_kafka_conf_destroy(c);
    c = sk_kafka_conf_new(SK_KAFKA_PRODUCER, NULL, kv, NULL, err, sizeof(err));
    assert_non_null(c);
    assert_string_equal(get(c, "linger.ms", b, sizeof(b)), "77");
    rd_kafka_conf_destroy(c);
    rd_kafka_conf_destroy(plain);
    assert_int_equal(sk_kafka_producer_only("acks"), 1);
    assert_int_equal(sk_kafka_producer_only("bootstrap.servers"), 0);
}

static void test_log(void **state)
{
    (void)state;
    assert_int_equal(sk_kafka_log_level(0), SK_LOG_ERROR);
    assert_int_equal(sk_kafka_log_level(3), SK_LOG_ERROR);
    assert_int_equal(sk_kafka_log_level(4), SK_LOG_WARN);
    assert_int_equal(sk_kafka_log_level(5), SK_LOG_INFO);
    assert_int_equal(sk_kafka_log_level(6), SK_LOG_INFO);
    assert_int_equal(sk_kafka_log_level(7), SK_LOG_DEBUG);
    char out[16];
    assert_int_equal(sk_kafka_log_text("a\"b\\c\nd\re", out, sizeof(out)), 9);
    assert_string_equal(out, "a'b'c'd'e");
    assert_int_equal(sk_kafka_log_text("0123456789abcdefXYZ", out, sizeof(out)), 15);
    assert_string_equal(out, "0123456789abcde");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_of_application),
        cmocka_unit_test(test_unknown_and_bad_refused),
        cmocka_unit_test(test_consumer_leaves_out_producer_only),
        cmocka_unit_test(test_log),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
