/* order_idem (issue 31): the Idempotency-Key's check, the request fingerprint, and the
 * stored values with the verdict on a second request. */
#include "order_idem.h"
#include "order_route.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_key_check(void **state)
{
    (void)state;
    char msg[96], k[300];
    assert_int_equal(order_idem_key_check("a", 1, msg, sizeof(msg)), 0);
    assert_int_equal(order_idem_key_check("8e03978e-40d5-43e8-bc93-6894a57f9324", 36, msg,
                                          sizeof(msg)), 0);
    assert_int_equal(order_idem_key_check("with space ~!", 13, msg, sizeof(msg)), 0);
    /* empty, over 255, a control character, DEL, a byte over 0x7e: refused, named */
    assert_int_equal(order_idem_key_check("", 0, msg, sizeof(msg)), -1);
    assert_non_null(strstr(msg, "Idempotency-Key"));
    memset(k, 'x', sizeof(k));
    assert_int_equal(order_idem_key_check(k, ORDER_IDEM_KEY_MAX, msg, sizeof(msg)), 0);
    assert_int_equal(order_idem_key_check(k, ORDER_IDEM_KEY_MAX + 1, msg, sizeof(msg)), -1);
    assert_non_null(strstr(msg, "Idempotency-Key"));
    assert_int_equal(order_idem_key_check("a\tb", 3, msg, sizeof(msg)), -1);
    assert_int_equal(order_idem_key_check("a\x7f", 2, msg, sizeof(msg)), -1);
    assert_int_equal(order_idem_key_check("caf\xc3\xa9", 5, msg, sizeof(msg)), -1);
    assert_non_null(strstr(msg, "Idempotency-Key"));
}

static void test_fingerprint(void **state)
{
    (void)state;
    uint64_t a = order_idem_fingerprint(ORDER_ROUTE_ORDER_CREATE, 7, "{}", 2);
    assert_int_equal(a, order_idem_fingerprint(ORDER_ROUTE_ORDER_CREATE, 7, "{}", 2));
    /* another event, another route, another body: another request */
    assert_int_not_equal(a, order_idem_fingerprint(ORDER_ROUTE_ORDER_CREATE, 8, "{}", 2));
    assert_int_not_equal(a, order_idem_fingerprint(ORDER_ROUTE_ORDER_PAY, 7, "{}", 2));
    assert_int_not_equal(a, order_idem_fingerprint(ORDER_ROUTE_ORDER_CREATE, 7, "", 0));
    /* the path id and the body do not run into each other */
    assert_int_not_equal(order_idem_fingerprint(ORDER_ROUTE_ORDER_CREATE, 71, "", 0),
                         order_idem_fingerprint(ORDER_ROUTE_ORDER_CREATE, 7, "1", 1));
    char rk[ORDER_IDEM_RKEY_MAX];
    size_t n = order_idem_redis_key(42, "abc", 3, rk, sizeof(rk));
    assert_string_equal(rk, "seckill:idem:{u42}:abc");
    assert_int_equal(n, strlen(rk));
    char k[ORDER_IDEM_KEY_MAX];
    memset(k, 'z', sizeof(k));
    n = order_idem_redis_key(UINT64_MAX, k, sizeof(k), rk, sizeof(rk));
    assert_int_equal(n, strlen("seckill:idem:{u18446744073709551615}:") + ORDER_IDEM_KEY_MAX);
}

static void test_values(void **state)
{
    (void)state;
    uint64_t fp = order_idem_fingerprint(ORDER_ROUTE_ORDER_CREATE, 7, "{}", 2);
    char claim[24];
    size_t cl = order_idem_encode_claim(fp, claim, sizeof(claim));
    int st = 0;
    const char *body = NULL;
    size_t blen = 0;
    assert_int_equal(order_idem_decide(claim, cl, fp, &st, &body, &blen), ORDER_IDEM_IN_PROGRESS);
    assert_int_equal(order_idem_decide(claim, cl, fp + 1, &st, &body, &blen), ORDER_IDEM_MISMATCH);

    const char *b = "{\"order_id\":\"1\",\"status\":\"queued\"}";
    size_t vlen;
    char *v = order_idem_encode_answer(fp, 202, b, strlen(b), &vlen);
    assert_non_null(v);
    assert_int_equal(order_idem_decide(v, vlen, fp, &st, &body, &blen), ORDER_IDEM_REPLAY);
    assert_int_equal(st, 202);
    assert_int_equal(blen, strlen(b));
    assert_memory_equal(body, b, blen);
    assert_int_equal(order_idem_decide(v, vlen, fp ^ 1, &st, &body, &blen), ORDER_IDEM_MISMATCH);
    free(v);
    v = order_idem_encode_answer(fp, 409, "", 0, &vlen); /* an empty body replays too */
    assert_int_equal(order_idem_decide(v, vlen, fp, &st, &body, &blen), ORDER_IDEM_REPLAY);
    assert_int_equal(st, 409);
    assert_int_equal(blen, 0);
    free(v);
    /* not ours: refused, never replayed */
    assert_int_equal(order_idem_decide("", 0, fp, &st, &body, &blen), ORDER_IDEM_CORRUPT);
    assert_int_equal(order_idem_decide("x 0123456789abcdef", 18, fp, &st, &body, &blen),
                     ORDER_IDEM_CORRUPT);
    char bad[64];
    memcpy(bad, claim, cl);
    memcpy(bad + cl, " 2x2 {}", 7);
    bad[0] = 'd';
    assert_int_equal(order_idem_decide(bad, cl + 7, fp, &st, &body, &blen), ORDER_IDEM_CORRUPT);

    assert_true(order_idem_keeps(202));
    assert_true(order_idem_keeps(409));
    assert_true(order_idem_keeps(400));
    assert_false(order_idem_keeps(429));
    assert_false(order_idem_keeps(503));
    assert_false(order_idem_keeps(500));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_check),
        cmocka_unit_test(test_fingerprint),
        cmocka_unit_test(test_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
