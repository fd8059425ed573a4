/* Unit tests of sk_order_msg: the seckill.orders message's one encoder and decoder.
 * Round trips at the bounds and over a spread of values; every refusal with its code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "sk_order_msg.h"

static void round_trip(sk_order_msg m)
{
    char buf[SK_ORDER_MSG_MAX];
    size_t n = sk_order_msg_encode(&m, buf, sizeof(buf));
    assert_true(n > 0 && n == strlen(buf));
    sk_order_msg d;
    memset(&d, 0xa5, sizeof(d));
    assert_int_equal(sk_order_msg_decode(buf, n, &d), SK_ORDER_MSG_OK);
    assert_true(d.order_id == m.order_id && d.event_id == m.event_id && d.user_id == m.user_id &&
                d.ts_ms == m.ts_ms && d.quantity == (m.quantity ? m.quantity : 1));
    /* exact size wanted: one byte short of the NUL writes nothing that counts */
    assert_int_equal(sk_order_msg_encode(&m, buf, n), 0);
    assert_int_equal(sk_order_msg_encode(&m, buf, n + 1), n);
}

static void test_round_trip(void **state)
{
    (void)state;
    round_trip((sk_order_msg){1, 1, 1, 0, 0});
    round_trip((sk_order_msg){1, 1, 1, 0, 2});
    round_trip((sk_order_msg){(uint64_t)INT64_MAX, (uint64_t)INT64_MAX, (uint64_t)INT64_MAX,
                              SK_ORDER_MSG_MAX_TS_MS, SK_ORDER_MSG_MAX_QUANTITY});
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < 1000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift: a spread of digit counts */
        uint64_t id = (x >> (i % 63)) % (uint64_t)INT64_MAX + 1;
        round_trip((sk_order_msg){id, id / 3 + 1, (x % 1000) + 1,
                                  (int64_t)(x % (uint64_t)(SK_ORDER_MSG_MAX_TS_MS + 1)),
                                  (uint32_t)(x % SK_ORDER_MSG_MAX_QUANTITY) + 1});
    }
    char buf[SK_ORDER_MSG_MAX];
    sk_order_msg m = {12, 3, 4, 1795341600123LL, 1};
    sk_order_msg_encode(&m, buf, sizeof(buf));
    /* one unit: the bytes of before the quantity (issue 31), which old consumers read */
    assert_string_equal(buf, "{\"v\":1,\"order_id\":\"12\",\"event_id\":\"3\",\"user_id\":\"4\","
                             "\"ts_ms\":1795341600123}");
    m.quantity = 3;
    sk_order_msg_encode(&m, buf, sizeof(buf));
    assert_string_equal(buf, "{\"v\":1,\"order_id\":\"12\",\"event_id\":\"3\",\"user_id\":\"4\","
                             "\"ts_ms\":1795341600123,\"quantity\":3}");
    sk_order_msg d;
    const char *old = "{\"v\":1,\"order_id\":\"5\",\"event_id\":\"6\",\"user_id\":\"7\",\"ts_ms\":8}";
    assert_int_equal(sk_order_msg_decode(old, strlen(old), &d), SK_ORDER_MSG_OK);
    assert_int_equal(d.quantity, 1); /* a message of before: one unit */
}

static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *v;
        sk_order_msg_err want;
    } cases[] = {
        {"", SK_ORDER_MSG_EMPTY},
        {"{\"v\":1", SK_ORDER_MSG_NOT_JSON},
        {"{\"v\":1,\"v\":1}", SK_ORDER_MSG_NOT_JSON}, /* duplicate member */
        {"[1]", SK_ORDER_MSG_NOT_OBJECT},
        {"{\"v\":2,\"order_id\":\"1\",\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":1}", SK_ORDER_MSG_BAD_VERSION},
        {"{\"v\":1,\"order_id\":1,\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":1}", SK_ORDER_MSG_BAD_ORDER_ID},
        {"{\"v\":1,\"order_id\":\"01\",\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":1}", SK_ORDER_MSG_BAD_ORDER_ID},
        {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"0\",\"user_id\":\"1\",\"ts_ms\":1}", SK_ORDER_MSG_BAD_EVENT_ID},
        {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"1\",\"user_id\":\"9223372036854775808\",\"ts_ms\":1}",
         SK_ORDER_MSG_BAD_USER_ID},
        {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":-1}", SK_ORDER_MSG_BAD_TS},
        {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":253402300800000}",
         SK_ORDER_MSG_BAD_TS},
        {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"1\",\"user_id\":\"1\"}", SK_ORDER_MSG_BAD_TS},
        {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":1,\"quantity\":0}",
         SK_ORDER_MSG_BAD_QUANTITY},
        {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":1,\"quantity\":-2}",
         SK_ORDER_MSG_BAD_QUANTITY},
        {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":1,\"quantity\":\"2\"}",
         SK_ORDER_MSG_BAD_QUANTITY},
        {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":1,\"quantity\":1.5}",
         SK_ORDER_MSG_BAD_QUANTITY},
        {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":1,\"quantity\":101}",
         SK_ORDER_MSG_BAD_QUANTITY},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sk_order_msg d;
        assert_int_equal(sk_order_msg_decode(cases[i].v, strlen(cases[i].v), &d), cases[i].want);
    }
    sk_order_msg d;
    assert_int_equal(sk_order_msg_decode(NULL, 0, &d), SK_ORDER_MSG_EMPTY);
    char big[SK_ORDER_MSG_MAX_BYTES + 1];
    memset(big, ' ', sizeof(big));
    assert_int_equal(sk_order_msg_decode(big, sizeof(big), &d), SK_ORDER_MSG_TOO_LARGE);
    /* an extra member is tolerated within version 1 */
    const char *extra = "{\"v\":1,\"order_id\":\"5\",\"event_id\":\"6\",\"user_id\":\"7\",\"ts_ms\":8,\"x\":[]}";
    assert_int_equal(sk_order_msg_decode(extra, strlen(extra), &d), SK_ORDER_MSG_OK);
    assert_true(d.order_id == 5 && d.event_id == 6 && d.user_id == 7 && d.ts_ms == 8);
    assert_string_equal(sk_order_msg_strerror(SK_ORDER_MSG_BAD_TS), "bad_ts");
    assert_string_equal(sk_order_msg_strerror(SK_ORDER_MSG_BAD_QUANTITY), "bad_quantity");
    assert_string_equal(sk_order_msg_strerror(SK_ORDER_MSG__COUNT), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
