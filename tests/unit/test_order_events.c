/* Unit tests of order_events (the event cache of GET /api/v1/events/{id}): one load and
 * one gate read in flight per event, waiters handed back, stock never served older than
 * stock_refresh_ms, negative entries that expire, the load budget, ids from the future,
 * eviction within the bound, and the If-None-Match comparison. Time is injected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "order_events.h"
#include "order_ocache.h"

/* 2026-11-23 in ms, and an event id issued a day before it (libidgen layout). */
#define NOW 1795392000000LL
#define ID_OF(sec_since_2024, seq) ((((uint64_t)(sec_since_2024)) << 32) | (seq))
static const uint64_t EV = ID_OF(90000000ULL, 7);

static order_events *mk(size_t cap, int64_t miss)
{
    order_events_limits lim = {cap, 100, 1000, miss};
    order_events *c = order_events_new(&lim);
    assert_non_null(c);
    return c;
}

static order_event_spec spec_of(const char *name, int64_t stock)
{
    order_event_spec s;
    memset(&s, 0, sizeof(s));
    snprintf(s.name, sizeof(s.name), "%s", name);
    s.stock = stock;
    s.starts_at_ms = NOW + 60000;
    s.ends_at_ms = NOW + 3600000;
    s.per_user_limit = 1;
    return s;
}

static size_t count(order_events_waiter *w)
{
    size_t n = 0;
    for (; w; w = w->next)
        n++;
    return n;
}

/* Loads EV (stock 10 in PostgreSQL, `gate` in Redis) and returns the fresh view. */
static void load(order_events *c, uint64_t id, int64_t gate, int64_t now, order_event_view *v)
{
    order_events_waiter w;
    assert_int_equal(order_events_lookup(c, id, now, &w, v), ORDER_EVENTS_LOAD);
    order_event_spec s = spec_of("Phone", 10);
    assert_null(order_events_loaded(c, id, &s, 10, now));
    assert_int_equal(order_events_lookup(c, id, now, &w, v), ORDER_EVENTS_REFRESH);
    assert_null(order_events_stock(c, id, 1, gate, now));
    assert_int_equal(order_events_lookup(c, id, now, &w, v), ORDER_EVENTS_FRESH);
}

/* An admin's change (issue 32): a fresh entry is loaded again at the next lookup (peek
 * no longer answers it), a negative one is dropped, and a forget during a load is
 * followed by another load. */
static void test_forget(void **state)
{
    (void)state;
    order_events *c = mk(16, 50);
    order_event_view v;
    order_events_waiter w;
    load(c, EV, 7, NOW, &v);
    order_events_forget(c, EV);
    assert_int_equal(order_events_peek(c, EV, NOW, &v), ORDER_EVENTS_WAIT);
    assert_int_equal(order_events_lookup(c, EV, NOW, &w, &v), ORDER_EVENTS_LOAD);
    order_event_spec s = spec_of("Phone 2", 10);
    order_events_forget(c, EV); /* changed again while the first reload runs */
    assert_null(order_events_loaded(c, EV, &s, 10, NOW));
    assert_int_equal(order_events_lookup(c, EV, NOW, &w, &v), ORDER_EVENTS_LOAD);
    assert_null(order_events_loaded(c, EV, &s, 10, NOW));
    assert_int_equal(order_events_lookup(c, EV, NOW, &w, &v), ORDER_EVENTS_REFRESH);
    assert_null(order_events_stock(c, EV, 1, 7, NOW));
    assert_int_equal(order_events_lookup(c, EV, NOW, &w, &v), ORDER_EVENTS_FRESH);
    assert_non_null(strstr(v.body, "Phone 2"));
    /* a negative entry: dropped, the next lookup loads */
    assert_int_equal(order_events_lookup(c, EV + 1, NOW, &w, &v), ORDER_EVENTS_LOAD);
    assert_null(order_events_absent(c, EV + 1, NOW));
    assert_int_equal(order_events_lookup(c, EV + 1, NOW, &w, &v), ORDER_EVENTS_ABSENT);
    order_events_forget(c, EV + 1);
    assert_int_equal(order_events_lookup(c, EV + 1, NOW, &w, &v), ORDER_EVENTS_LOAD);
    order_events_free(c);
}

static void test_one_load_many_waiters(void **state)
{
    (void)state;
    order_events *c = mk(16, 50);
    order_event_view v;
    order_events_waiter w[5];
    assert_int_equal(order_events_lookup(c, EV, NOW, &w[0], &v), ORDER_EVENTS_LOAD);
    for (int i = 1; i < 5; i++)
        assert_int_equal(order_events_lookup(c, EV, NOW, &w[i], &v), ORDER_EVENTS_WAIT);
    order_event_spec s = spec_of("Phone", 10);
    order_events_waiter *back = order_events_loaded(c, EV, &s, 10, NOW);
    assert_int_equal(count(back), 4);
    for (order_events_waiter *x = back; x; x = x->next)
        assert_int_equal(x->failed, 0);
    /* PostgreSQL's figure is not served before the gate was read once. */
    assert_int_equal(order_events_lookup(c, EV, NOW, &w[1], &v), ORDER_EVENTS_REFRESH);
    assert_int_equal(order_events_lookup(c, EV, NOW, &w[2], &v), ORDER_EVENTS_WAIT);
    back = order_events_stock(c, EV, 1, 7, NOW + 1);
    assert_int_equal(count(back), 1);
    assert_int_equal(order_events_lookup(c, EV, NOW + 1, &w[2], &v), ORDER_EVENTS_FRESH);
    v.body[v.body_len] = '\0';
    assert_non_null(strstr(v.body, "\"stock_left\":7"));
    assert_non_null(strstr(v.body, "\"stock_total\":10"));
    assert_int_equal(v.body[v.body_len - 1] != '}', 1); /* the caller closes it */
    uint64_t loads, ev;
    order_events_counts(c, &loads, &ev);
    assert_int_equal(loads, 1);
    order_events_free(c);
}

static void test_stock_refresh_interval(void **state)
{
    (void)state;
    order_events *c = mk(16, 50);
    order_event_view v, v2;
    order_events_waiter w;
    load(c, EV, 9, NOW, &v);
    /* within the interval: no gate read, same tag */
    assert_int_equal(order_events_lookup(c, EV, NOW + 99, &w, &v2), ORDER_EVENTS_FRESH);
    assert_string_equal(v.etag, v2.etag);
    assert_int_equal(order_events_peek(c, EV, NOW + 99, &v2), ORDER_EVENTS_FRESH);
    assert_string_equal(v.etag, v2.etag);
    /* peek never answers a stale figure and claims nothing */
    assert_int_equal(order_events_peek(c, EV, NOW + 100, &v2), ORDER_EVENTS_WAIT);
    assert_int_equal(order_events_peek(c, ID_OF(7, 7), NOW + 100, &v2), ORDER_EVENTS_WAIT);
    /* at the interval: one read, the others wait, never a stale answer */
    assert_int_equal(order_events_lookup(c, EV, NOW + 100, &w, &v2), ORDER_EVENTS_REFRESH);
    order_events_waiter w2;
    assert_int_equal(order_events_lookup(c, EV, NOW + 101, &w2, &v2), ORDER_EVENTS_WAIT);
    assert_int_equal(count(order_events_stock(c, EV, 1, 3, NOW + 102)), 1);
    assert_int_equal(order_events_lookup(c, EV, NOW + 102, &w, &v2), ORDER_EVENTS_FRESH);
    assert_string_not_equal(v.etag, v2.etag); /* the stock changed: so did the tag */
    v2.body[v2.body_len] = '\0';
    assert_non_null(strstr(v2.body, "\"stock_left\":3"));
    /* Redis had nothing: the last figure stays for one more interval */
    assert_int_equal(order_events_lookup(c, EV, NOW + 300, &w, &v2), ORDER_EVENTS_REFRESH);
    order_events_stock(c, EV, 0, 0, NOW + 300);
    assert_int_equal(order_events_lookup(c, EV, NOW + 301, &w, &v2), ORDER_EVENTS_FRESH);
    v2.body[v2.body_len] = '\0';
    assert_non_null(strstr(v2.body, "\"stock_left\":3"));
    /* a read that never answers is taken over after 2 s */
    assert_int_equal(order_events_lookup(c, EV, NOW + 500, &w, &v2), ORDER_EVENTS_REFRESH);
    assert_int_equal(order_events_lookup(c, EV, NOW + 600, &w2, &v2), ORDER_EVENTS_WAIT);
    order_events_waiter w3;
    assert_int_equal(order_events_lookup(c, EV, NOW + 2600, &w3, &v2), ORDER_EVENTS_REFRESH);
    assert_int_equal(count(order_events_stock(c, EV, 1, 2, NOW + 2601)), 1);
    order_events_free(c);
}

static void test_negative_and_budget(void **state)
{
    (void)state;
    order_events *c = mk(64, 3);
    order_event_view v;
    order_events_waiter w, w2;
    assert_int_equal(order_events_lookup(c, EV, NOW, &w, &v), ORDER_EVENTS_LOAD);
    assert_int_equal(order_events_lookup(c, EV, NOW, &w2, &v), ORDER_EVENTS_WAIT);
    assert_int_equal(count(order_events_absent(c, EV, NOW)), 1);
    assert_int_equal(order_events_lookup(c, EV, NOW + 999, &w, &v), ORDER_EVENTS_ABSENT);
    /* after negative_ttl_ms it is asked again (an event created meanwhile shows up) */
    assert_int_equal(order_events_lookup(c, EV, NOW + 1000, &w, &v), ORDER_EVENTS_LOAD);
    order_events_absent(c, EV, NOW + 1000);
    /* budget: 3 loads per second, whatever the ids */
    int loads = 0, busy = 0;
    for (uint64_t i = 1; i <= 100; i++) {
        order_events_status st = order_events_lookup(c, ID_OF(1000, i), NOW + 1500, &w, &v);
        if (st == ORDER_EVENTS_LOAD) {
            loads++;
            order_events_absent(c, ID_OF(1000, i), NOW + 1500);
        } else if (st == ORDER_EVENTS_BUSY) {
            busy++;
        }
    }
    assert_int_equal(loads, 2); /* one of this second's 3 went to EV above */
    assert_int_equal(busy, 98);
    /* an id whose libidgen time is in the future is never looked up */
    uint64_t future = ID_OF((uint64_t)(NOW / 1000 - 1704067200 + 3600), 1);
    assert_int_equal(order_events_lookup(c, future, NOW + 5000, &w, &v), ORDER_EVENTS_ABSENT);
    /* a failed load hands its waiters back as failed and is tried again */
    assert_int_equal(order_events_lookup(c, ID_OF(5, 5), NOW + 6000, &w, &v), ORDER_EVENTS_LOAD);
    assert_int_equal(order_events_lookup(c, ID_OF(5, 5), NOW + 6000, &w2, &v), ORDER_EVENTS_WAIT);
    order_events_waiter *back = order_events_failed(c, ID_OF(5, 5));
    assert_int_equal(count(back), 1);
    assert_int_equal(back->failed, 1);
    assert_int_equal(order_events_lookup(c, ID_OF(5, 5), NOW + 6001, &w, &v), ORDER_EVENTS_LOAD);
    order_events_free(c);
}

static void test_eviction_bound(void **state)
{
    (void)state;
    order_events *c = mk(4, 1000);
    order_event_view v;
    order_events_waiter w;
    for (uint64_t i = 1; i <= 4; i++)
        load(c, ID_OF(2000, i), (int64_t)i, NOW + (int64_t)i, &v);
    /* touch 1 so that 2 is the least recently used */
    assert_int_equal(order_events_lookup(c, ID_OF(2000, 1), NOW + 10, &w, &v), ORDER_EVENTS_FRESH);
    load(c, ID_OF(2000, 5), 5, NOW + 20, &v);
    uint64_t loads, ev;
    order_events_counts(c, &loads, &ev);
    assert_int_equal(ev, 1);
    assert_int_equal(order_events_lookup(c, ID_OF(2000, 1), NOW + 30, &w, &v), ORDER_EVENTS_FRESH);
    assert_int_equal(order_events_lookup(c, ID_OF(2000, 2), NOW + 30, &w, &v), ORDER_EVENTS_LOAD);
    order_events_absent(c, ID_OF(2000, 2), NOW + 30);
    /* entries that requests wait on are never evicted: a full table of them is BUSY */
    order_events *d = mk(4, 1000);
    order_events_waiter ws[4];
    for (uint64_t i = 1; i <= 4; i++)
        assert_int_equal(order_events_lookup(d, ID_OF(3000, i), NOW, &ws[i - 1], &v), ORDER_EVENTS_LOAD);
    assert_int_equal(order_events_lookup(d, ID_OF(3000, 9), NOW, &w, &v), ORDER_EVENTS_BUSY);
    for (uint64_t i = 1; i <= 4; i++)
        order_events_absent(d, ID_OF(3000, i), NOW);
    order_events_free(d);
    order_events_free(c);
}

static void test_etag_match(void **state)
{
    (void)state;
    const char *tag = "W/\"00112233aabbccdd\"";
    assert_true(order_events_etag_match(tag, tag));
    assert_true(order_events_etag_match("\"00112233aabbccdd\"", tag));
    assert_true(order_events_etag_match("\"x\", W/\"00112233aabbccdd\" ", tag));
    assert_true(order_events_etag_match("*", tag));
    assert_false(order_events_etag_match("W/\"00112233aabbccde\"", tag));
    assert_false(order_events_etag_match("", tag));
    assert_false(order_events_etag_match("W/\"00112233aabbccdd", tag));
}

/* order_ocache: final outcomes only, for ttl_ms, a collision is a miss, never a wrong answer */
static void test_ocache(void **state)
{
    (void)state;
    order_ocache *c = order_ocache_new(100, 1000, 5000, 3);
    assert_non_null(c);
    uint64_t ev, user;
    char out;
    assert_int_equal(order_ocache_get(c, 42, NOW, &ev, &user, &out, NULL), 0);
    order_ocache_put(c, 42, 7, 9, 'q', 0, NOW); /* not final: ignored */
    assert_int_equal(order_ocache_get(c, 42, NOW, &ev, &user, &out, NULL), 0);
    order_ocache_put(c, 42, 7, 9, 'c', 1795000000123LL, NOW);
    int64_t pay_by = 0;
    assert_int_equal(order_ocache_get(c, 42, NOW + 999, &ev, &user, &out, &pay_by), 1);
    assert_true(ev == 7 && user == 9 && out == 'c');
    assert_int_equal(pay_by, 1795000000123LL); /* issue 22: GET answers pay_by from here too */
    assert_int_equal(order_ocache_get(c, 42, NOW + 1000, &ev, &user, &out, NULL), 0);
    /* many orders in a small table: every hit is the order asked for */
    for (uint64_t id = 1; id <= 5000; id++)
        order_ocache_put(c, ID_OF(100, id), id, id + 1, 'r', 0, NOW);
    int hits = 0;
    for (uint64_t id = 1; id <= 5000; id++) {
        if (order_ocache_get(c, ID_OF(100, id), NOW + 1, &ev, &user, &out, NULL)) {
            hits++;
            assert_true(ev == id && user == id + 1 && out == 'r');
        }
    }
    assert_true(hits > 0 && hits <= 128);
    order_ocache_free(c);
}

/* order_ocache_claim_lookup: one lookup per order per every_ms, per_s in all, and a
 * final outcome put after a lookup answers as before */
static void test_ocache_lookups(void **state)
{
    (void)state;
    order_ocache *c = order_ocache_new(4096, 1000, 5000, 3);
    assert_non_null(c);
    uint64_t ev, user;
    char out;
    assert_int_equal(order_ocache_claim_lookup(c, 42, NOW), 1);
    assert_int_equal(order_ocache_claim_lookup(c, 42, NOW + 1), 0);      /* looked up lately */
    assert_int_equal(order_ocache_get(c, 42, NOW + 1, &ev, &user, &out, NULL), 0); /* not an outcome */
    assert_int_equal(order_ocache_claim_lookup(c, 42, NOW + 4999), 0);
    assert_int_equal(order_ocache_claim_lookup(c, 42, NOW + 5000), 1);   /* next interval */
    /* the budget: 3 a second over all orders, whatever their ids */
    int64_t t = (NOW / 1000 + 10) * 1000;
    assert_int_equal(order_ocache_claim_lookup(c, ID_OF(1, 1), t), 1);
    assert_int_equal(order_ocache_claim_lookup(c, ID_OF(1, 2), t + 1), 1);
    assert_int_equal(order_ocache_claim_lookup(c, ID_OF(1, 3), t + 2), 1);
    assert_int_equal(order_ocache_claim_lookup(c, ID_OF(1, 4), t + 3), 0);
    assert_int_equal(order_ocache_claim_lookup(c, ID_OF(1, 4), t + 1000), 1); /* a new second */
    /* the lookup found it: the outcome replaces the mark */
    order_ocache_put(c, ID_OF(1, 1), 7, 9, 'c', 0, t + 1001);
    assert_int_equal(order_ocache_get(c, ID_OF(1, 1), t + 1002, &ev, &user, &out, NULL), 1);
    assert_true(ev == 7 && user == 9 && out == 'c');
    /* and keeps both: the found outcome answers past its ttl until the next lookup may
     * start, and no second lookup in the interval */
    assert_int_equal(order_ocache_get(c, ID_OF(1, 1), t + 4999, &ev, &user, &out, NULL), 1);
    assert_int_equal(order_ocache_claim_lookup(c, ID_OF(1, 1), t + 4999), 0);
    assert_int_equal(order_ocache_get(c, ID_OF(1, 1), t + 5000, &ev, &user, &out, NULL), 0);
    assert_int_equal(order_ocache_claim_lookup(c, ID_OF(1, 1), t + 5000), 1);
    order_ocache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_load_many_waiters),
        cmocka_unit_test(test_forget),
        cmocka_unit_test(test_stock_refresh_interval),
        cmocka_unit_test(test_negative_and_budget),
        cmocka_unit_test(test_eviction_bound),
        cmocka_unit_test(test_etag_match),
        cmocka_unit_test(test_ocache),
        cmocka_unit_test(test_ocache_lookups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
