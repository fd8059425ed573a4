/* Unit tests of order_reply (error and success bodies), order_msg (the Kafka message and
 * the Redis key names) and order_metrics (Prometheus text). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "order_iwrite.h"
#include "order_metrics.h"
#include "order_msg.h"
#include "order_reply.h"

/* Every error body parses as JSON with exactly "error" and "message" (and "order_id"). */
static void test_error_bodies(void **state)
{
    static const struct {
        order_err e;
        int status;
        const char *code;
    } want[] = {
        {ORDER_ERR_BAD_REQUEST, 400, "bad_request"},   {ORDER_ERR_UNAUTHORIZED, 401, "unauthorized"},
        {ORDER_ERR_FORBIDDEN, 403, "forbidden"},       {ORDER_ERR_NOT_FOUND, 404, "not_found"},
        {ORDER_ERR_METHOD, 405, "method_not_allowed"}, {ORDER_ERR_TOO_LARGE, 413, "payload_too_large"},
        {ORDER_ERR_SOLD_OUT, 409, "sold_out"},         {ORDER_ERR_DUPLICATE, 409, "duplicate"},
        {ORDER_ERR_NOT_STARTED, 403, "not_started"},   {ORDER_ERR_ENDED, 403, "ended"},
        {ORDER_ERR_RATE_LIMITED, 429, "rate_limited"}, {ORDER_ERR_UNAVAILABLE, 503, "unavailable"},
        {ORDER_ERR_INTERNAL, 500, "internal"},
        {ORDER_ERR_CLOSED, 409, "closed"},
        {ORDER_ERR_ALREADY_PAID, 409, "already_paid"},
        {ORDER_ERR_NOT_READY, 409, "not_ready"},
        {ORDER_ERR_PAUSED, 503, "paused"},
        {ORDER_ERR_IN_PROGRESS, 409, "in_progress"},
        {ORDER_ERR_KEY_REUSED, 422, "key_reused"},
        {ORDER_ERR_CONFLICT, 409, "conflict"},
        {ORDER_ERR_LIMIT_REACHED, 409, "limit_reached"},
    };
    assert_int_equal(sizeof(want) / sizeof(want[0]), ORDER_ERR_COUNT);
    for (size_t i = 0; i < ORDER_ERR_COUNT; i++) {
        char body[640];
        size_t n = order_reply_error(body, sizeof(body), want[i].e, NULL, 0);
        assert_int_equal(n, strlen(body));
        assert_int_equal(order_err_status(want[i].e), want[i].status);
        json_error_t jerr;
        json_t *o = json_loads(body, 0, &jerr);
        assert_non_null(o);
        assert_string_equal(json_string_value(json_object_get(o, "error")), want[i].code);
        assert_true(json_string_length(json_object_get(o, "message")) > 0);
        assert_int_equal(json_object_size(o), 2);
        json_decref(o);
    }
    /* A message with quotes, backslashes and control characters stays valid JSON. */
    char body[640];
    order_reply_error(body, sizeof(body), ORDER_ERR_BAD_REQUEST, "a \"b\" \\ c\n\x01", 123);
    json_error_t jerr;
    json_t *o = json_loads(body, 0, &jerr);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "message")), "a \"b\" \\ c\n\x01");
    assert_string_equal(json_string_value(json_object_get(o, "order_id")), "123");
    json_decref(o);
}

static void test_reserve_codes(void **state)
{
    assert_int_equal(order_err_from_reserve(0), -1);
    assert_int_equal(order_err_from_reserve(1), ORDER_ERR_SOLD_OUT);
    assert_int_equal(order_err_from_reserve(2), ORDER_ERR_DUPLICATE);
    assert_int_equal(order_err_from_reserve(3), ORDER_ERR_NOT_STARTED);
    assert_int_equal(order_err_from_reserve(4), ORDER_ERR_ENDED);
    assert_int_equal(order_err_from_reserve(5), ORDER_ERR_NOT_FOUND);
    assert_int_equal(order_err_from_reserve(6), ORDER_ERR_INTERNAL);
    assert_int_equal(order_err_from_reserve(-1), ORDER_ERR_INTERNAL);
}

static void test_success_bodies(void **state)
{
    char b[256];
    order_reply_order_queued(b, sizeof(b), 9223372036854775807ULL);
    assert_string_equal(b, "{\"order_id\":\"9223372036854775807\",\"status\":\"queued\"}");
    order_reply_order(b, sizeof(b), 1, 2, 3, "created");
    assert_string_equal(b, "{\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"status\":\"created\"}");
    order_reply_event_created(b, sizeof(b), 77);
    assert_string_equal(b, "{\"event_id\":\"77\"}");
    /* the duplicate naming the order held (issue 31): the error's members, then the order */
    order_reply_duplicate(b, sizeof(b), 11, 2, 3, "queued", 0);
    assert_string_equal(b, "{\"error\":\"duplicate\",\"message\":\"this user already holds an order "
                           "for this event\",\"order_id\":\"11\",\"event_id\":\"2\",\"user_id\":\"3\","
                           "\"status\":\"queued\"}");
    char big[512];
    order_reply_duplicate(big, sizeof(big), 11, 2, 3, "created", 1795341600000LL);
    assert_non_null(strstr(big, "\"status\":\"created\",\"pay_by\":\"2026-11-22T10:00:00.000Z\"}"));
    /* several units refused (issue 31): what is left, or what the user holds */
    order_reply_units(b, sizeof(b), ORDER_ERR_SOLD_OUT, 3, 0);
    assert_string_equal(b, "{\"error\":\"sold_out\",\"message\":\"fewer units are left than the "
                           "order's quantity\",\"left\":3}");
    order_reply_units(b, sizeof(b), ORDER_ERR_LIMIT_REACHED, 2, 41);
    assert_string_equal(b, "{\"error\":\"limit_reached\",\"message\":\"this order would pass the "
                           "event's per_user_limit\",\"held\":2,\"order_id\":\"41\"}");
    order_reply_units(b, sizeof(b), ORDER_ERR_LIMIT_REACHED, 2, 0);
    assert_null(strstr(b, "order_id"));
    assert_int_equal(order_err_status(ORDER_ERR_LIMIT_REACHED), 409);
    char *e = order_reply_event(5, "a \"quoted\" name", 100, 7, 1795341600000LL, 1795345200123LL, NULL);
    assert_non_null(e);
    assert_string_equal(e, "{\"event_id\":\"5\",\"name\":\"a \\\"quoted\\\" name\",\"stock_total\":100,"
                           "\"stock_left\":7,\"starts_at\":\"2026-11-22T10:00:00.000Z\","
                           "\"ends_at\":\"2026-11-22T11:00:00.123Z\"}");
    free(e);
    order_event_limits lim = {4, 0, 300, 0}; /* only the overridden levels are shown */
    e = order_reply_event(5, "n", 1, 1, 1795341600000LL, 1795345200000LL, &lim);
    assert_non_null(e);
    assert_string_equal(e, "{\"event_id\":\"5\",\"name\":\"n\",\"stock_total\":1,\"stock_left\":1,"
                           "\"starts_at\":\"2026-11-22T10:00:00.000Z\","
                           "\"ends_at\":\"2026-11-22T11:00:00.000Z\","
                           "\"limits\":{\"ip_rate\":4,\"event_rate\":300}}");
    free(e);
    order_event_limits pow = {0, 0, 0, 20}; /* a challenge, no override (issue 31) */
    e = order_reply_event(5, "n", 1, 1, 1795341600000LL, 1795345200000LL, &pow);
    assert_non_null(e);
    assert_string_equal(e, "{\"event_id\":\"5\",\"name\":\"n\",\"stock_total\":1,\"stock_left\":1,"
                           "\"starts_at\":\"2026-11-22T10:00:00.000Z\","
                           "\"ends_at\":\"2026-11-22T11:00:00.000Z\","
                           "\"challenge\":{\"kind\":\"pow\",\"difficulty\":20}}");
    free(e);
}

static void test_keys(void **state)
{
    char k[ORDER_KEY_MAX];
    order_key(12, ORDER_KEY_STOCK, k, sizeof(k));
    assert_string_equal(k, "seckill:{e12}:stock");
    order_key(12, ORDER_KEY_BUYERS, k, sizeof(k));
    assert_string_equal(k, "seckill:{e12}:buyers");
    order_key(12, ORDER_KEY_META, k, sizeof(k));
    assert_string_equal(k, "seckill:{e12}:meta");
    order_key(12, ORDER_KEY_PENDING, k, sizeof(k));
    assert_string_equal(k, "seckill:{e12}:pending");
    order_key(9223372036854775807ULL, ORDER_KEY_PENDING, k, sizeof(k));
    assert_string_equal(k, "seckill:{e9223372036854775807}:pending");
    /* segment 0 is the event's own keys (K = 1 unchanged); k >= 1 has its own tag */
    order_key_seg(12, 0, ORDER_KEY_STOCK, k, sizeof(k));
    assert_string_equal(k, "seckill:{e12}:stock");
    order_key_seg(12, 2, ORDER_KEY_BUYERS, k, sizeof(k));
    assert_string_equal(k, "seckill:{e12.2}:buyers");
    /* the home segment: 0 for K <= 1, and consecutive ids spread over K = 3 */
    assert_int_equal(order_seg_home(12345, 1), 0);
    assert_int_equal(order_seg_home(12345, 0), 0);
    unsigned seen[3] = {0, 0, 0};
    for (uint64_t u = 1; u <= 300; u++) {
        unsigned h = order_seg_home(u << 22, 3); /* ids sharing their low bits */
        assert_true(h < 3);
        seen[h]++;
    }
    for (int j = 0; j < 3; j++)
        assert_true(seen[j] > 60);
    order_key_index(5, k, sizeof(k)); /* second 0 of libidgen's epoch */
    assert_string_equal(k, "seckill:oidx:0");
    order_key_index((100ULL << 32) | 7, k, sizeof(k)); /* second 100, sequence 7 */
    assert_string_equal(k, "seckill:oidx:100");
    assert_true(order_index_bucket((100ULL << 32) | 7) == order_index_bucket((100ULL << 32) | 99));
    assert_true(order_index_bucket(100ULL << 32) != order_index_bucket(101ULL << 32));
    order_key_ratelimit(6, k, sizeof(k));
    assert_string_equal(k, "seckill:rl:{u6}");
}

/* The order index entry: round trip at the bounds, and every malformed form refused. */
static void test_index_entry(void **state)
{
    (void)state;
    char v[ORDER_INDEX_VALUE_MAX];
    order_index_entry e = {(uint64_t)INT64_MAX, 42, 1, 0, 0}, d;
    size_t n = order_index_encode(&e, v, sizeof(v));
    assert_string_equal(v, "9223372036854775807:42:a");
    assert_int_equal(n, strlen(v));
    assert_int_equal(order_index_decode(v, n, &d), 0);
    assert_true(d.event_id == (uint64_t)INT64_MAX && d.user_id == 42 && d.acked == 1);
    e = (order_index_entry){7, 9, 0, 0, 0};
    n = order_index_encode(&e, v, sizeof(v));
    assert_string_equal(v, "7:9:p");
    assert_int_equal(order_index_decode(v, n, &d), 0);
    assert_true(d.event_id == 7 && d.user_id == 9 && d.acked == 0 && d.outcome == 0);
    /* the consumer's outcome fields: created, rejected, in PostgreSQL already */
    const char outcomes[] = {'c', 'r', 'd'};
    for (size_t i = 0; i < sizeof(outcomes); i++) {
        e = (order_index_entry){7, 9, 0, outcomes[i], 0};
        n = order_index_encode(&e, v, sizeof(v));
        assert_int_equal(v[n - 1], outcomes[i]);
        assert_int_equal(order_index_decode(v, n, &d), 0);
        assert_true(d.event_id == 7 && d.user_id == 9 && d.acked == 0 && d.outcome == outcomes[i]);
    }
    /* issue 22: created and paid entries carry pay_by; the others never do */
    e = (order_index_entry){(uint64_t)INT64_MAX, (uint64_t)INT64_MAX, 0, 'c', INT64_MAX};
    n = order_index_encode(&e, v, sizeof(v));
    assert_string_equal(v, "9223372036854775807:9223372036854775807:c:9223372036854775807");
    assert_true(n < ORDER_INDEX_VALUE_MAX);
    assert_int_equal(order_index_decode(v, n, &d), 0);
    assert_true(d.outcome == 'c' && d.pay_by_ms == INT64_MAX && d.user_id == (uint64_t)INT64_MAX);
    e = (order_index_entry){7, 9, 0, 'P', 1795000000123LL};
    n = order_index_encode(&e, v, sizeof(v));
    assert_string_equal(v, "7:9:P:1795000000123");
    assert_int_equal(order_index_decode(v, n, &d), 0);
    assert_true(d.outcome == 'P' && d.pay_by_ms == 1795000000123LL);
    e = (order_index_entry){7, 9, 0, 'X', 1795000000123LL};
    n = order_index_encode(&e, v, sizeof(v));
    assert_string_equal(v, "7:9:X");
    assert_int_equal(order_index_decode("7:9:c", 5, &d), 0); /* written before pay_by was */
    assert_int_equal(d.pay_by_ms, 0);
    const char *bad_pay_by[] = {"7:9:c:", "7:9:c:0", "7:9:c:-1", "7:9:c:x", "7:9:X:17",
                                "7:9:a:17", "7:9:c:17:1", "7:9:c:9223372036854775808"};
    for (size_t i = 0; i < sizeof(bad_pay_by) / sizeof(bad_pay_by[0]); i++)
        if (order_index_decode(bad_pay_by[i], strlen(bad_pay_by[i]), &d) != -1)
            fail_msg("decoded %s", bad_pay_by[i]);
    e = (order_index_entry){7, 9, 0, 'c', 0};
    assert_int_equal(order_index_encode(&e, v, 5), 0); /* no room for the NUL */
    const char *bad[] = {"", "7", "7:9", "7:9:", "7:9:x", "7:9:aa", "7:9:o", ":9:a", "7::a", "7:9a",
                         "18446744073709551616:9:a", "7:-9:a", "7 :9:a",
                         "9223372036854775808:9:a", "07:9:a", "7:0:a"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(order_index_decode(bad[i], strlen(bad[i]), &d), -1);
}

static void test_metrics_text(void **state)
{
    static order_metrics m;
    order_metrics_request(&m, ORDER_ROUTE_ORDER_CREATE, 202, 800);
    order_metrics_request(&m, ORDER_ROUTE_ORDER_CREATE, 409, 5);
    order_metrics_request(&m, ORDER_ROUTE_ORDER_CREATE, 418, 2000000);
    order_metrics_reserve(&m, 1);
    order_metrics_reserve(&m, 77);
    size_t len;
    char *t = order_metrics_render(&m, &len);
    assert_non_null(t);
    assert_int_equal(strlen(t), len);
    assert_non_null(strstr(t, "seckill_order_requests_total{route=\"order_create\",status=\"202\"} 1\n"));
    assert_non_null(strstr(t, "seckill_order_requests_total{route=\"order_create\",status=\"other\"} 1\n"));
    assert_non_null(strstr(t, "seckill_order_request_seconds_bucket{route=\"order_create\",le=\"0.001\"} 2\n"));
    assert_non_null(strstr(t, "seckill_order_request_seconds_bucket{route=\"order_create\",le=\"+Inf\"} 3\n"));
    assert_non_null(strstr(t, "seckill_order_request_seconds_count{route=\"order_create\"} 3\n"));
    assert_non_null(strstr(t, "seckill_order_reserve_total{result=\"sold_out\"} 1\n"));
    assert_non_null(strstr(t, "seckill_order_reserve_total{result=\"other\"} 1\n"));
    assert_non_null(strstr(t, "seckill_order_kafka_inflight 0\n"));
    free(t);
}

/* order_iwrite: the one builder of the index writes (HSET of fields, then EXPIRE). */
static void test_iwrite(void **state)
{
    (void)state;
    order_iwrite *w = order_iwrite_new(2);
    assert_non_null(w);
    const uint64_t a = (7ULL << 32) | 1, b = (7ULL << 32) | 2, other = (8ULL << 32) | 1;
    order_iwrite_begin(w, a, 604800);
    order_index_entry e = {11, 22, 0, 'P', 1795000000123LL}, f = {11, 23, 1, 0, 0};
    assert_int_equal(order_iwrite_add(w, a, ORDER_INDEX_STATUS_SUFFIX, &e), 0);
    assert_int_equal(order_iwrite_add(w, other, "", &f), -1); /* another second's hash */
    assert_int_equal(order_iwrite_add(w, b, "", &f), 0);
    assert_int_equal(order_iwrite_add(w, b, ORDER_INDEX_OUTCOME_SUFFIX, &f), -1); /* full */
    assert_int_equal(order_iwrite_count(w), 2);
    const char **argv;
    const size_t *lens;
    assert_int_equal(order_iwrite_hset(w, &argv, &lens), 6);
    const char *want[6] = {"HSET", "seckill:oidx:7", "30064771073:s", "11:22:P:1795000000123",
                           "30064771074", "11:23:a"};
    for (int i = 0; i < 6; i++) {
        assert_string_equal(argv[i], want[i]);
        assert_int_equal(lens[i], strlen(want[i]));
    }
    assert_int_equal(order_iwrite_expire(w, &argv, &lens), 4);
    assert_string_equal(argv[0], "EXPIRE");
    assert_string_equal(argv[1], "seckill:oidx:7");
    assert_string_equal(argv[2], "604800");
    assert_int_equal(lens[2], 6);
    assert_string_equal(argv[3], "LT"); /* a later write never pushes the expiry out */
    order_iwrite_begin(w, other, 60); /* a new write drops the fields */
    assert_int_equal(order_iwrite_count(w), 0);
    assert_int_equal(order_iwrite_hset(w, &argv, &lens), 2);
    assert_string_equal(argv[1], "seckill:oidx:8");
    order_iwrite_free(w);
    order_iwrite_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_bodies), cmocka_unit_test(test_reserve_codes),
        cmocka_unit_test(test_success_bodies),
        cmocka_unit_test(test_keys), cmocka_unit_test(test_index_entry),
        cmocka_unit_test(test_metrics_text), cmocka_unit_test(test_iwrite),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
