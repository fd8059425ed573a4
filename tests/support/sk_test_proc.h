/* sk_test_proc: the one way the tests start, watch and stop the programs they test
 * (seckill-order, seckill-consumer, seckill-devkafka, the idgen CLI), plus the small
 * probes several tests need: a process's CPU time, a log's size and contents, a
 * loopback connection. Waits poll a condition with a deadline, never a bare sleep.
 * Not thread-safe (fork from one thread). */
#ifndef SK_TEST_PROC_H
#define SK_TEST_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/** @brief How to start a child. Zero-initialised: our environment, stdout and stderr
 *  inherited, no signal when the test dies. */
typedef struct sk_test_spawn_opts {
    const char *const *env; /* "K=V" strings added to the environment, NULL-terminated */
    int clean_env;          /* 1: SECKILL_* of our environment are left out first */
    int death_sig;          /* signal the child gets if the test dies (0: none) */
    const char *out_path;   /* stdout to this file (truncated), NULL inherited */
    const char *err_path;   /* stderr likewise; the same path as out_path: one file */
    int null_stdin;         /* 1: stdin from /dev/null (a server must not hold the test's) */
} sk_test_spawn_opts;

/** @brief Starts argv[0] (a path, or a name looked up in $PATH) with argv.
 *  @returns the pid, or -1. */
pid_t sk_test_spawn(const char *const *argv, const sk_test_spawn_opts *o);

/** @brief Sends sig (0: none) and waits up to timeout_ms (< 0: for ever) for the exit.
 *  @returns the exit status (0..255), 128+signal if killed, or -1 if it did not exit
 *  in time (then it is SIGKILLed and reaped) or pid is not our child. */
int sk_test_proc_stop(pid_t pid, int sig, int timeout_ms);

/** @brief $SECKILL_BIN_DIR/name into buf ("./bin" when unset). @returns buf. */
const char *sk_test_bin(char *buf, size_t size, const char *name);

int64_t sk_test_now_ms(void);
/** @brief Pauses between two polls of a condition. */
void sk_test_pause_ms(int ms);

/** @brief utime + stime of pid in seconds, or -1. */
double sk_test_cpu_seconds(pid_t pid);
/** @brief The file's size in bytes, or -1. */
long sk_test_file_size(const char *path);
/** @brief 1 if a line of the file holds `what` (lines up to 4 KiB), else 0. */
int sk_test_log_has(const char *path, const char *what);
/** @brief The first line of a file, without its newline, into buf (a file a server
 *  writes its address to). @returns 0, or -1 (no file or an empty line yet). */
int sk_test_read_line(const char *path, char *buf, size_t size);
/** @brief Removes a directory and everything below it (a test's temporary one).
 *  @returns 0 or -1. */
int sk_test_rmtree(const char *dir);
/** @brief A blocking TCP connection to 127.0.0.1:port. @returns the fd, or -1. */
int sk_test_connect_port(int port);

#endif
