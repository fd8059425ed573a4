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
    round_trip((sk_order_msg){.order_id = 1, .event_id = 1, .user_id = 1, .ts_ms = 0});
    round_trip((sk_order_msg){.order_id = 1, .event_id = 1, .user_id = 1, .ts_ms = 0, .quantity = 2});
    round_trip((sk_order_msg){.order_id = (uint64_t)INT64_MAX, .event_id = (uint64_t)INT64_MAX,
                              .user_id = (uint64_t)INT64_MAX, .ts_ms = SK_ORDER_MSG_MAX_TS_MS,
                              .quantity = SK_ORDER_MSG_MAX_QUANTITY});
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < 1000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift: a spread of digit counts */
        uint64_t id = (x >> (i % 63)) % (uint64_t)INT64_MAX + 1;
        round_trip((sk_order_msg){
            .order_id = id, .event_id = id / 3 + 1, .user_id = (x % 1000) + 1,
            .ts_ms = (int64_t)(x % (uint64_t)(SK_ORDER_MSG_MAX_TS_MS + 1)),
            .quantity = (uint32_t)(x % SK_ORDER_MSG_MAX_QUANTITY) + 1});
    }
    char buf[SK_ORDER_MSG_MAX];
    sk_order_msg m = {.order_id = 12, .event_id = 3, .user_id = 4, .ts_ms = 1795341600123LL,
                      .quantity = 1};
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

/* The MAC (issue 33): a known vector (Python's hmac over the canonical string), the
 * member on the wire, a rotation's two keys, and every way a message fails it. */
static void test_mac(void **state)
{
    (void)state;
    char err[128], buf[SK_ORDER_MSG_MAX_SIGNED], canon[SK_ORDER_MSG_MAX];
    sk_order_msg_keys *k = sk_order_msg_keys_new("k-0123456789abcdef", err, sizeof(err));
    assert_non_null(k);
    assert_int_equal(sk_order_msg_keys_count(k), 1);
    sk_order_msg m = {.order_id = 12, .event_id = 3, .user_id = 4, .ts_ms = 1795341600123LL};
    assert_true(sk_order_msg_canonical(&m, canon, sizeof(canon)) > 0);
    assert_string_equal(canon, "seckill.orders/1|12|3|4|1795341600123|1");
    assert_int_equal(sk_order_msg_verify(k, &m), SK_ORDER_MSG_BAD_MAC); /* unsigned */
    assert_int_equal(sk_order_msg_sign(k, &m), 0);
    /* python3: hmac.new(key, canon, sha256).hexdigest()[:32] */
    assert_string_equal(m.mac, "2ae96c237ccf2440f1ff3b1296df2019");
    size_t n = sk_order_msg_encode(&m, buf, sizeof(buf));
    assert_string_equal(buf, "{\"v\":1,\"order_id\":\"12\",\"event_id\":\"3\",\"user_id\":\"4\","
                             "\"ts_ms\":1795341600123,\"mac\":\"2ae96c237ccf2440f1ff3b1296df2019\"}");
    sk_order_msg d;
    assert_int_equal(sk_order_msg_decode(buf, n, &d), SK_ORDER_MSG_OK);
    assert_int_equal(sk_order_msg_verify(k, &d), SK_ORDER_MSG_OK);
    /* the longest signed message fits SK_ORDER_MSG_MAX_SIGNED */
    sk_order_msg big = {.order_id = (uint64_t)INT64_MAX, .event_id = (uint64_t)INT64_MAX,
                        .user_id = (uint64_t)INT64_MAX, .ts_ms = INT64_MIN,
                        .quantity = SK_ORDER_MSG_MAX_QUANTITY};
    assert_int_equal(sk_order_msg_sign(k, &big), 0);
    assert_true(sk_order_msg_encode(&big, buf, sizeof(buf)) > 0);
    /* any field changed: refused */
    sk_order_msg x = d;
    x.user_id++;
    assert_int_equal(sk_order_msg_verify(k, &x), SK_ORDER_MSG_BAD_MAC);
    x = d;
    x.ts_ms--;
    assert_int_equal(sk_order_msg_verify(k, &x), SK_ORDER_MSG_BAD_MAC);
    x = d;
    x.quantity = 2; /* the units are covered too */
    assert_int_equal(sk_order_msg_verify(k, &x), SK_ORDER_MSG_BAD_MAC);
    x = d;
    x.mac[31] = x.mac[31] == '0' ? '1' : '0';
    assert_int_equal(sk_order_msg_verify(k, &x), SK_ORDER_MSG_BAD_MAC);
    x = d;
    x.mac[0] = 'B'; /* uppercase is not ours */
    assert_int_equal(sk_order_msg_verify(k, &x), SK_ORDER_MSG_BAD_MAC);
    /* a rotation: new,old verifies both; new alone refuses old's; old,new signs as old */
    sk_order_msg_keys *rot = sk_order_msg_keys_new("n-0123456789abcdef,k-0123456789abcdef", err,
                                                   sizeof(err));
    sk_order_msg_keys *fresh = sk_order_msg_keys_new("n-0123456789abcdef", err, sizeof(err));
    assert_non_null(rot);
    assert_non_null(fresh);
    assert_int_equal(sk_order_msg_keys_count(rot), 2);
    assert_int_equal(sk_order_msg_verify(rot, &d), SK_ORDER_MSG_OK);
    assert_int_equal(sk_order_msg_verify(fresh, &d), SK_ORDER_MSG_BAD_MAC);
    sk_order_msg y = {.order_id = 12, .event_id = 3, .user_id = 4, .ts_ms = 1795341600123LL};
    assert_int_equal(sk_order_msg_sign(rot, &y), 0);
    assert_string_not_equal(y.mac, d.mac);
    assert_int_equal(sk_order_msg_verify(fresh, &y), SK_ORDER_MSG_OK);
    assert_int_equal(sk_order_msg_verify(k, &y), SK_ORDER_MSG_BAD_MAC);
    sk_order_msg_keys_free(rot);
    sk_order_msg_keys_free(fresh);
    sk_order_msg_keys_free(k);
    sk_order_msg_keys_free(NULL);
    /* bad key specs, and the error never quotes a key */
    const char *bad[] = {"", "short", "k-0123456789abcdef,", "a-0123456789abcdef,b-0123456789abcdef,c-0123456789abcdef"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = 0;
        assert_null(sk_order_msg_keys_new(bad[i], err, sizeof(err)));
        assert_true(err[0] != 0);
        assert_null(strstr(err, "0123456789"));
    }
    /* a malformed "mac" member is refused by the decoder itself */
    const char *mals[] = {
        "{\"v\":1,\"order_id\":\"1\",\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":1,\"mac\":1}",
        "{\"v\":1,\"order_id\":\"1\",\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":1,\"mac\":\"ab\"}",
        "{\"v\":1,\"order_id\":\"1\",\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":1,"
        "\"mac\":\"B6c667894d3368264618ff55e760865b\"}",
    };
    for (size_t i = 0; i < sizeof(mals) / sizeof(mals[0]); i++)
        assert_int_equal(sk_order_msg_decode(mals[i], strlen(mals[i]), &d), SK_ORDER_MSG_BAD_MAC);
    assert_string_equal(sk_order_msg_strerror(SK_ORDER_MSG_BAD_MAC), "bad_mac");
}

/* Both decoders give the same answer: the code, and on success every field. */
static void same_answer(const char *v, size_t n)
{
    sk_order_msg a, b;
    memset(&a, 0x5a, sizeof(a));
    memset(&b, 0xa5, sizeof(b));
    sk_order_msg_err ea = sk_order_msg_decode(v, n, &a), eb = sk_order_msg_decode_json(v, n, &b);
    if (ea != eb)
        fail_msg("%.*s: decode %s, jansson %s", (int)n, v, sk_order_msg_strerror(ea),
                 sk_order_msg_strerror(eb));
    if (ea == SK_ORDER_MSG_OK &&
        !(a.order_id == b.order_id && a.event_id == b.event_id && a.user_id == b.user_id &&
          a.ts_ms == b.ts_ms && a.quantity == b.quantity && strcmp(a.mac, b.mac) == 0))
        fail_msg("%.*s: the two decoders read different fields", (int)n, v);
}

/* sk_order_msg_decode reads the encoder's exact layout by hand and gives anything else
 * to jansson: the two must agree on every value, the encoder's and every one-byte edit of
 * it (a byte replaced, dropped or added: whitespace, escapes, signs, leading zeros,
 * overflows, broken hex, members cut short or run on). */
static void test_fast_path_agrees(void **state)
{
    (void)state;
    const sk_order_msg ms[] = {
        {.order_id = 12, .event_id = 3, .user_id = 4, .ts_ms = 1795341600123LL},
        {.order_id = 1, .event_id = 1, .user_id = 1, .ts_ms = 0, .quantity = 2},
        {.order_id = (uint64_t)INT64_MAX, .event_id = (uint64_t)INT64_MAX,
         .user_id = (uint64_t)INT64_MAX, .ts_ms = SK_ORDER_MSG_MAX_TS_MS,
         .quantity = SK_ORDER_MSG_MAX_QUANTITY, .mac = "0123456789abcdef0123456789abcdef"},
        {.order_id = 987654321, .event_id = 10, .user_id = 99, .ts_ms = 10,
         .mac = "ffffffffffffffffffffffffffffffff"},
    };
    static const char edits[] = " 0159af\"\\,}{:-+.eExFu";
    for (size_t k = 0; k < sizeof(ms) / sizeof(ms[0]); k++) {
        char enc[SK_ORDER_MSG_MAX_SIGNED], v[SK_ORDER_MSG_MAX_SIGNED + 1];
        size_t n = sk_order_msg_encode(&ms[k], enc, sizeof(enc));
        assert_true(n > 0);
        same_answer(enc, n);
        for (size_t i = 0; i <= n; i++) {
            if (i < n) { /* dropped */
                memcpy(v, enc, i);
                memcpy(v + i, enc + i + 1, n - i - 1);
                same_answer(v, n - 1);
            }
            for (const char *e = edits; *e; e++) {
                if (i < n) { /* replaced */
                    memcpy(v, enc, n);
                    v[i] = *e;
                    same_answer(v, n);
                }
                memcpy(v, enc, i); /* added */
                v[i] = *e;
                memcpy(v + i + 1, enc + i, n - i);
                same_answer(v, n + 1);
            }
        }
    }
    /* just past each bound, in the encoder's layout */
    const char *past[] = {
        "{\"v\":1,\"order_id\":\"9223372036854775808\",\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":1}",
        "{\"v\":1,\"order_id\":\"1\",\"event_id\":\"0\",\"user_id\":\"1\",\"ts_ms\":1}",
        "{\"v\":1,\"order_id\":\"1\",\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":253402300800000}",
        "{\"v\":1,\"order_id\":\"1\",\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":1,\"quantity\":101}",
        "{\"v\":1,\"order_id\":\"1\",\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":1,\"quantity\":0}",
        "{\"v\":1,\"order_id\":\"1\",\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":1,\"quantity\":1}",
        "{\"v\":1,\"order_id\":\"1\",\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":1,\"mac\":\"0123\"}",
        "{\"v\":1,\"order_id\":\"1\",\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":1,\"extra\":1}",
        "{\"v\":1,\"order_id\":\"1\",\"event_id\":\"1\",\"user_id\":\"1\",\"ts_ms\":1} ",
    };
    for (size_t i = 0; i < sizeof(past) / sizeof(past[0]); i++)
        same_answer(past[i], strlen(past[i]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_mac),
        cmocka_unit_test(test_fast_path_agrees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
