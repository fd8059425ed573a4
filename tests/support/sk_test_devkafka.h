/* sk_test_devkafka: a private seckill-devkafka (deploy/devkafka/devkafka.c, librdkafka's
 * mock cluster) for one test: started from $SECKILL_BIN_DIR in a temporary directory,
 * ready once it has written its bootstrap and control addresses and answers "ping" on
 * the control port; and that control port: one command line, one "ok" or "err <why>"
 * answer, for the tests that break Kafka on purpose. Not thread-safe. */
#ifndef SK_TEST_DEVKAFKA_H
#define SK_TEST_DEVKAFKA_H

#include <sys/types.h>

typedef struct sk_test_devkafka {
    pid_t pid;           /* 0 when not running */
    char dir[128];       /* its temporary directory (bootstrap and control files) */
    char bootstrap[128]; /* "127.0.0.1:port,..." for bootstrap.servers */
    char control[128];   /* "127.0.0.1:port" of the control port */
} sk_test_devkafka;

/** @brief Starts seckill-devkafka with `partitions` per topic (0: its default), stdout
 *  to /dev/null, stderr inherited, SIGTERMed if the test dies; waits (up to 20 s) for
 *  its addresses and a "ping" answer. @returns 0, or -1 (nothing left running). */
int sk_test_devkafka_start(sk_test_devkafka *k, int partitions);

/** @brief SIGTERM, waits for the exit, removes its directory. Fine on a stopped one. */
void sk_test_devkafka_stop(sk_test_devkafka *k);

/** @brief Sends `line` (e.g. "errors produce 2 MSG_SIZE_TOO_LARGE") to the control
 *  address "host:port". @returns 0 on "ok", -1 otherwise (the answer on stderr). */
int sk_test_devkafka_control(const char *control, const char *line);

#endif
