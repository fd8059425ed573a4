/* Unit tests of order_reqscan: request boundaries as the slow-client guard sees them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "order_reqscan.h"

static int feed(order_reqscan *s, const char *text)
{
    return order_reqscan_feed(s, (const unsigned char *)text, strlen(text));
}

static void test_get_without_body(void **state)
{
    (void)state;
    order_reqscan s;
    order_reqscan_init(&s);
    assert_int_equal(feed(&s, "G"), 1); /* one byte: a request has started */
    assert_int_equal(feed(&s, "ET /healthz HTTP/1.1\r\nHost: x\r\n"), 1);
    assert_int_equal(feed(&s, "\r"), 1);
    assert_int_equal(feed(&s, "\n"), 0); /* the blank line ends it */
    assert_int_equal(feed(&s, "\r\n"), 0); /* stray blank lines between requests */
}

static void test_body_by_content_length(void **state)
{
    (void)state;
    order_reqscan s;
    order_reqscan_init(&s);
    assert_int_equal(feed(&s, "POST /x HTTP/1.1\r\ncOnTeNt-LeNgTh:  5\r\n\r\nab"), 1);
    assert_int_equal(feed(&s, "cd"), 1);
    assert_int_equal(feed(&s, "e"), 0);
    /* Two pipelined requests in one read: the second one is partly there. */
    assert_int_equal(feed(&s, "POST /x HTTP/1.1\r\nContent-Length: 2\r\n\r\nokGET / HTTP/1.1\r\n"), 1);
    assert_int_equal(feed(&s, "\r\n"), 0);
    /* Content-Length of an earlier request is not carried into the next one. */
    assert_int_equal(feed(&s, "GET / HTTP/1.1\r\n\r\n"), 0);
}

static void test_bare_lf_and_long_lines(void **state)
{
    (void)state;
    order_reqscan s;
    order_reqscan_init(&s);
    char big[300];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    assert_int_equal(feed(&s, "GET / HTTP/1.1\nX-Long: "), 1);
    assert_int_equal(feed(&s, big), 1);
    assert_int_equal(feed(&s, "\nContent-Length: 0\n\n"), 0);
    /* A header that only starts like Content-Length is not it. */
    assert_int_equal(feed(&s, "POST / HTTP/1.1\r\nContent-Lengthy: 9\r\n\r\n"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_without_body),
        cmocka_unit_test(test_body_by_content_length),
        cmocka_unit_test(test_bare_lf_and_long_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
