/* test_pg_hold: the accept-and-hold server of the PostgreSQL hang tests. See
 * test_pg_hold.h. */
#include "test_pg_hold.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void *hold_main(void *arg)
{
    pg_hold *h = arg;
    while (!atomic_load(&h->stop)) {
        /* A short poll: the stop flag is seen within 50 ms. */
        struct pollfd p = {.fd = h->lfd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        int fd = accept(h->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        int n = atomic_load(&h->nfds);
        if (n < PG_HOLD_MAX) {
            h->fds[n] = fd;
            atomic_store(&h->nfds, n + 1);
        } else {
            close(fd); /* more than any test opens: a refusal then, not a hang */
        }
    }
    return NULL;
}

int pg_hold_start(pg_hold *h)
{
    memset(h, 0, sizeof(*h));
    h->lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (h->lfd < 0)
        return -1;
    h->started = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (bind(h->lfd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(h->lfd, 128) != 0 ||
        getsockname(h->lfd, (struct sockaddr *)&a, &len) != 0) {
        close(h->lfd);
        h->started = 0;
        return -1;
    }
    h->port = ntohs(a.sin_port);
    if (pthread_create(&h->thread, NULL, hold_main, h) != 0) {
        close(h->lfd);
        h->started = 0;
        return -1;
    }
    return 0;
}

void pg_hold_conninfo(const pg_hold *h, const char *password, char *buf, size_t size)
{
    snprintf(buf, size, "host=127.0.0.1 port=%d dbname=seckill user=seckill password=%s", h->port,
             password);
}

void pg_hold_stop(pg_hold *h)
{
    if (!h->started)
        return;
    atomic_store(&h->stop, 1);
    pthread_join(h->thread, NULL);
    for (int i = 0; i < atomic_load(&h->nfds); i++)
        close(h->fds[i]);
    close(h->lfd);
    h->started = 0;
}
