/* test_pg_hold: a "PostgreSQL" that accepts every connection and never answers: a
 * listening socket on 127.0.0.1 whose thread accepts and holds what comes, reads
 * nothing and writes nothing, so a client waits on the startup (or SSL) answer until
 * its own bound. The kernel would complete handshakes from the backlog even without
 * accept(); accepting keeps them open however many come, as a hung server would. */
#ifndef TEST_PG_HOLD_H
#define TEST_PG_HOLD_H

#include <pthread.h>
#include <stdatomic.h>

#define PG_HOLD_MAX 256

typedef struct pg_hold {
    int started; /* 1 between pg_hold_start and pg_hold_stop */
    int lfd, port;
    int fds[PG_HOLD_MAX];
    atomic_int nfds; /* connections accepted so far */
    atomic_int stop;
    pthread_t thread;
} pg_hold;

/** @brief Listens on a free port of 127.0.0.1 and starts accepting. @returns 0 or -1. */
int pg_hold_start(pg_hold *h);

/** @brief A conninfo for h (user, password and database set, so libpq asks the
 *  environment for nothing), into buf. The password is `password`: a test checks that
 *  no message shows it. */
void pg_hold_conninfo(const pg_hold *h, const char *password, char *buf, size_t size);

/** @brief Stops accepting and closes every connection it holds. */
void pg_hold_stop(pg_hold *h);

#endif
