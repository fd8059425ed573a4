/* Unit tests of order_evlist (GET /api/v1/events from memory): the first request loads
 * and the others wait, a stale snapshot is answered while one refresh runs, ended events
 * drop out at once, pagination, tags, and a failed refresh. Time is injected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "order_evlist.h"

#define NOW 1795392000000LL

static order_evlist_row row(uint64_t id, int64_t starts, int64_t ends)
{
    order_evlist_row r;
    memset(&r, 0, sizeof(r));
    r.id = id;
    snprintf(r.spec.name, sizeof(r.spec.name), "e%llu", (unsigned long long)id);
    r.spec.stock = 10;
    r.spec.starts_at_ms = starts;
    r.spec.ends_at_ms = ends;
    r.stock_left = 3;
    return r;
}

static void test_load_wait_refresh(void **state)
{
    (void)state;
    order_evlist *l = order_evlist_new(1000);
    order_events_waiter w1, w2;
    char *body = NULL, etag[24], etag2[24];
    size_t len;
    int refresh;
    assert_int_equal(order_evlist_page(l, NOW, 0, 20, &w1, &body, &len, etag, &refresh), ORDER_EVENTS_LOAD);
    assert_int_equal(order_evlist_page(l, NOW, 0, 20, &w2, &body, &len, etag, &refresh), ORDER_EVENTS_WAIT);
    order_evlist_row rows[3] = {row(1, NOW - 1000, NOW + 500), row(2, NOW, NOW + 60000), row(3, NOW + 1000, NOW + 60000)};
    order_events_waiter *back = order_evlist_loaded(l, rows, 3, NOW);
    assert_ptr_equal(back, &w2);
    assert_null(back->next);
    assert_int_equal(order_evlist_page(l, NOW + 10, 0, 2, &w1, &body, &len, etag, &refresh), ORDER_EVENTS_FRESH);
    assert_int_equal(refresh, 0);
    assert_non_null(strstr(body, "\"event_id\":\"1\""));
    assert_non_null(strstr(body, "\"event_id\":\"2\""));
    assert_null(strstr(body, "\"event_id\":\"3\""));
    assert_non_null(strstr(body, "\"next_offset\":2"));
    assert_int_equal(len, strlen(body));
    free(body);
    assert_int_equal(order_evlist_page(l, NOW + 10, 2, 2, &w1, &body, &len, etag2, &refresh), ORDER_EVENTS_FRESH);
    assert_non_null(strstr(body, "\"event_id\":\"3\""));
    assert_non_null(strstr(body, "\"next_offset\":null"));
    assert_string_not_equal(etag, etag2);
    free(body);
    /* event 1 ends at NOW + 500: gone from the page at once, without a refresh */
    assert_int_equal(order_evlist_page(l, NOW + 600, 0, 20, &w1, &body, &len, etag, &refresh), ORDER_EVENTS_FRESH);
    assert_null(strstr(body, "\"event_id\":\"1\""));
    free(body);
    /* stale: answered, and one caller (only one) runs the refresh */
    assert_int_equal(order_evlist_page(l, NOW + 1000, 0, 20, &w1, &body, &len, etag, &refresh), ORDER_EVENTS_FRESH);
    assert_int_equal(refresh, 1);
    free(body);
    assert_int_equal(order_evlist_page(l, NOW + 1001, 0, 20, &w1, &body, &len, etag, &refresh), ORDER_EVENTS_FRESH);
    assert_int_equal(refresh, 0);
    free(body);
    /* a failed refresh keeps the snapshot for one more interval */
    assert_null(order_evlist_failed(l, NOW + 1100));
    assert_int_equal(order_evlist_page(l, NOW + 1200, 0, 20, &w1, &body, &len, etag, &refresh), ORDER_EVENTS_FRESH);
    assert_int_equal(refresh, 0);
    free(body);
    order_evlist_row more[1] = {row(4, NOW + 5000, NOW + 60000)};
    assert_null(order_evlist_loaded(l, more, 1, NOW + 2100));
    assert_int_equal(order_evlist_page(l, NOW + 2100, 0, 20, &w1, &body, &len, etag, &refresh), ORDER_EVENTS_FRESH);
    assert_non_null(strstr(body, "\"event_id\":\"4\""));
    assert_null(strstr(body, "\"event_id\":\"2\""));
    free(body);
    order_evlist_free(l);
}

static void test_first_load_fails(void **state)
{
    (void)state;
    order_evlist *l = order_evlist_new(1000);
    order_events_waiter w1, w2;
    char *body = NULL, etag[24];
    size_t len;
    int refresh;
    assert_int_equal(order_evlist_page(l, NOW, 0, 20, &w1, &body, &len, etag, &refresh), ORDER_EVENTS_LOAD);
    assert_int_equal(order_evlist_page(l, NOW, 0, 20, &w2, &body, &len, etag, &refresh), ORDER_EVENTS_WAIT);
    order_events_waiter *back = order_evlist_failed(l, NOW + 5);
    assert_ptr_equal(back, &w2);
    assert_int_equal(back->failed, 1);
    /* the next request tries again */
    assert_int_equal(order_evlist_page(l, NOW + 6, 0, 20, &w1, &body, &len, etag, &refresh), ORDER_EVENTS_LOAD);
    assert_null(order_evlist_loaded(l, NULL, 0, NOW + 7));
    assert_int_equal(order_evlist_page(l, NOW + 8, 0, 20, &w1, &body, &len, etag, &refresh), ORDER_EVENTS_FRESH);
    assert_string_equal(body, "{\"events\":[],\"offset\":0,\"next_offset\":null");
    free(body);
    order_evlist_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_wait_refresh),
        cmocka_unit_test(test_first_load_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
