/* sk_listen: descriptor limits of a listening service. See sk_listen.h. */
#include "sk_listen.h"

#include "sk_log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* SO_REUSEPORT would let a second process (a stale one, say) share the port silently:
 * a plain bind first proves that nobody else holds it. */
static int port_is_free(const struct sockaddr_in *sa, char *err, size_t errsz)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errsz, "socket: %s", strerror(errno));
        return 0;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)); /* TIME_WAIT is fine */
    int rc = bind(fd, (const struct sockaddr *)sa, sizeof(*sa));
    if (rc != 0)
        snprintf(err, errsz, "port %d: %s", ntohs(sa->sin_port), strerror(errno));
    close(fd);
    return rc == 0;
}

int sk_listen_tcp(const char *bind_addr, int port, int flags, int backlog, int *bound_port,
                  char *err, size_t errsz)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, bind_addr, &sa.sin_addr) != 1) {
        snprintf(err, errsz, "\"%s\" is not an IPv4 address", bind_addr);
        return -1;
    }
    if ((flags & SK_LISTEN_CHECK_FREE) && port != 0 && !port_is_free(&sa, err, errsz))
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errsz, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (flags & SK_LISTEN_REUSEPORT)
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, backlog) != 0) {
        snprintf(err, errsz, "listen on %s:%d: %s", bind_addr, port, strerror(errno));
        close(fd);
        return -1;
    }
    if (bound_port) {
        socklen_t len = sizeof(sa);
        int got = getsockname(fd, (struct sockaddr *)&sa, &len) == 0;
        *bound_port = got ? ntohs(sa.sin_port) : port;
    }
    return fd;
}

int sk_listen_fit_nofile(long long *cap, long long reserve, const char *who)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    long long need = *cap + reserve;
    if (rl.rlim_cur == RLIM_INFINITY || (long long)rl.rlim_cur >= need)
        return 0;
    rlim_t old = rl.rlim_cur;
    rlim_t want = rl.rlim_max == RLIM_INFINITY || (long long)rl.rlim_max >= need ? (rlim_t)need
                                                                                 : rl.rlim_max;
    if (want > old) {
        rl.rlim_cur = want;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            rl.rlim_cur = old;
    }
    if ((long long)rl.rlim_cur >= need) {
        sk_log(SK_LOG_INFO, "nofile_raised", "from=%llu to=%llu for=%s cap=%lld",
               (unsigned long long)old, (unsigned long long)rl.rlim_cur, who, *cap);
        return 1;
    }
    long long fit = (long long)rl.rlim_cur - reserve;
    if (fit < 1)
        fit = 1;
    sk_log(SK_LOG_WARN, "connection_cap_lowered",
           "setting=%s from=%lld to=%lld nofile_soft=%llu nofile_hard=%llu reserve=%lld", who, *cap,
           fit, (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, reserve);
    *cap = fit;
    return 1;
}

struct sk_listen_backoff {
    struct evconnlistener *lev;
    struct event *timer;
    struct timeval pause;
    unsigned long failures, logged; /* failures in total, and when last logged */
    int64_t last_log_ms;
};

/* libevent hands the error callback the listener's user data, which is evhttp's: the
 * backoff of a listener is found in this small table (a few listeners per process). */
#define MAX_LISTENERS 128
static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static sk_listen_backoff *table[MAX_LISTENERS];

static sk_listen_backoff *lookup(struct evconnlistener *lev)
{
    sk_listen_backoff *b = NULL;
    pthread_mutex_lock(&table_mu);
    for (int i = 0; i < MAX_LISTENERS && !b; i++)
        if (table[i] && table[i]->lev == lev)
            b = table[i];
    pthread_mutex_unlock(&table_mu);
    return b;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sk_listen_backoff *b = arg;
    evconnlistener_enable(b->lev);
}

/* libevent calls this for every accept() error it does not retry by itself. */
static void on_accept_error(struct evconnlistener *lev, void *arg)
{
    (void)arg;
    int err = EVUTIL_SOCKET_ERROR();
    sk_listen_backoff *b = lookup(lev);
    if (!b)
        return;
    b->failures++;
    evconnlistener_disable(lev);
    evtimer_add(b->timer, &b->pause);
    int64_t now = mono_ms();
    /* One line per second at most, whatever the rate of failures. */
    if (b->last_log_ms == 0 || now - b->last_log_ms >= 1000) {
        sk_log(SK_LOG_WARN, "accept_failed", "err=\"%s\" failures=%lu pause_ms=%ld", strerror(err),
               b->failures - b->logged, (long)(b->pause.tv_sec * 1000 + b->pause.tv_usec / 1000));
        b->logged = b->failures;
        b->last_log_ms = now;
    }
}

sk_listen_backoff *sk_listen_backoff_install(struct evconnlistener *lev, struct event_base *base,
                                             int pause_ms)
{
    sk_listen_backoff *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    b->lev = lev;
    b->pause.tv_sec = pause_ms / 1000;
    b->pause.tv_usec = (pause_ms % 1000) * 1000;
    b->timer = evtimer_new(base, on_resume, b);
    if (!b->timer) {
        free(b);
        return NULL;
    }
    pthread_mutex_lock(&table_mu);
    int slot = -1;
    for (int i = 0; i < MAX_LISTENERS && slot < 0; i++)
        if (!table[i])
            slot = i;
    if (slot >= 0)
        table[slot] = b;
    pthread_mutex_unlock(&table_mu);
    if (slot < 0) {
        event_free(b->timer);
        free(b);
        return NULL;
    }
    evconnlistener_set_error_cb(lev, on_accept_error);
    return b;
}

unsigned long sk_listen_backoff_failures(const sk_listen_backoff *b)
{
    return b->failures;
}

void sk_listen_backoff_free(sk_listen_backoff *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&table_mu);
    for (int i = 0; i < MAX_LISTENERS; i++)
        if (table[i] == b)
            table[i] = NULL;
    pthread_mutex_unlock(&table_mu);
    event_free(b->timer);
    free(b);
}
