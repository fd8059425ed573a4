/* Unit tests of sk_listen_tcp: the listening socket both services open (real sockets on
 * loopback; nothing else runs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sk_listen.h"
#include "sk_test_proc.h"

static void test_bad_address(void **state)
{
    (void)state;
    char err[256] = "";
    int port = -1;
    assert_int_equal(sk_listen_tcp("localhost", 0, 0, 16, &port, err, sizeof(err)), -1);
    assert_string_equal(err, "\"localhost\" is not an IPv4 address");
    assert_int_equal(port, -1); /* untouched */
    assert_int_equal(sk_listen_tcp("::1", 0, 0, 16, NULL, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "not an IPv4 address"));
}

/* Port 0: the kernel's choice, reported; the socket is non-blocking, close-on-exec, and
 * takes a connection. */
static void test_any_port(void **state)
{
    (void)state;
    char err[256] = "";
    int port = 0;
    int fd = sk_listen_tcp("127.0.0.1", 0, 0, 16, &port, err, sizeof(err));
    assert_true(fd >= 0);
    assert_true(port > 0);
    assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    assert_int_equal(accept(fd, NULL, NULL), -1); /* nobody yet: EAGAIN, not a block */
    int c = sk_test_connect_port(port);
    assert_true(c >= 0);
    int a = accept(fd, NULL, NULL); /* on loopback, queued by the time connect returns */
    assert_true(a >= 0);
    close(a);
    close(c);
    close(fd);
}

/* SO_REUSEPORT lets the workers share a port; the free check refuses a port another
 * socket already holds (a stale instance), with or without SO_REUSEPORT of its own. */
static void test_reuseport_and_free_check(void **state)
{
    (void)state;
    char err[256] = "";
    int port = 0;
    int first = sk_listen_tcp("127.0.0.1", 0, SK_LISTEN_REUSEPORT, 16, &port, err, sizeof(err));
    assert_true(first >= 0);
    int second_port = 0;
    int second = sk_listen_tcp("127.0.0.1", port, SK_LISTEN_REUSEPORT, 16, &second_port, err,
                               sizeof(err));
    assert_true(second >= 0);
    assert_int_equal(second_port, port);
    /* a new instance's first worker checks first: the port is taken */
    assert_int_equal(sk_listen_tcp("127.0.0.1", port, SK_LISTEN_REUSEPORT | SK_LISTEN_CHECK_FREE,
                                   16, NULL, err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "Address already in use"));
    /* without SO_REUSEPORT the bind itself fails */
    assert_int_equal(sk_listen_tcp("127.0.0.1", port, 0, 16, NULL, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "listen on 127.0.0.1:"));
    close(second);
    close(first);
    /* once they are closed the same port is free again (SO_REUSEADDR) */
    int again = sk_listen_tcp("127.0.0.1", port, SK_LISTEN_CHECK_FREE, 16, NULL, err, sizeof(err));
    assert_true(again >= 0);
    close(again);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_address),
        cmocka_unit_test(test_any_port),
        cmocka_unit_test(test_reuseport_and_free_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
