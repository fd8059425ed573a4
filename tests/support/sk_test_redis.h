/* sk_test_redis: a throwaway redis-server for tests that stop, kill or restart Redis
 * (hiredis's test.sh idea, in C): a spare loopback port, a temporary directory, AOF
 * on by default, and waits on conditions (PING answers, the process exited) rather
 * than sleeps. Tests that only need a Redis use the shared one from deploy/local.sh up
 * ($SECKILL_REDIS_URL). Not thread-safe: one owner per server. */
#ifndef SK_TEST_REDIS_H
#define SK_TEST_REDIS_H

#include <stddef.h>
#include <sys/types.h>

typedef struct sk_test_redis sk_test_redis;

/** @brief Starts redis-server on a free port. `extra` is a NULL-terminated list of
 *  more arguments ("--requirepass", "x", NULL), or NULL. Waits until PING answers.
 *  @returns the handle (free with sk_test_redis_free) or NULL with errstr set. */
sk_test_redis *sk_test_redis_start(const char *const *extra, char *errstr, size_t errstr_size);

int sk_test_redis_port(const sk_test_redis *r);
pid_t sk_test_redis_pid(const sk_test_redis *r);
/** @brief "redis://127.0.0.1:PORT" (with the password if --requirepass was given). */
const char *sk_test_redis_url(const sk_test_redis *r);

/** @brief Sends `sig` (SIGTERM: clean shutdown, AOF flushed; SIGKILL: crash) and waits
 *  for the process to exit. @returns 0. */
int sk_test_redis_stop(sk_test_redis *r, int sig);

/** @brief Starts it again on the same port and directory (so it reloads its AOF) and
 *  waits until PING answers. @returns 0, or -1 with errstr set. */
int sk_test_redis_restart(sk_test_redis *r, char *errstr, size_t errstr_size);

/** @brief Like sk_test_redis_restart, but returns once the process is started, without
 *  waiting for PING: for tests of what clients see while it loads its data.
 *  @returns 0, or -1 with errstr set. */
int sk_test_redis_respawn(sk_test_redis *r, char *errstr, size_t errstr_size);
/** @brief Stops the server if it runs, removes its directory, frees. NULL is fine. */
void sk_test_redis_free(sk_test_redis *r);

/** @brief Returns a loopback TCP port that was free a moment ago. */
int sk_test_free_port(void);

#endif
