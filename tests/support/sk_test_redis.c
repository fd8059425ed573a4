/* sk_test_redis: throwaway redis-server processes for tests. See sk_test_redis.h. */
#include "sk_test_redis.h"
#include "sk_test_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_EXTRA 32

struct sk_test_redis {
    pid_t pid;
    int port;
    char dir[256];
    char url[512];
    char *extra[MAX_EXTRA + 1];
};

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path) == 0 ? 0 : 0; /* keep going past anything already gone */
}

int sk_test_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int port = -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* PING until it answers PONG or the process dies or 20 s pass. */
static int wait_ready(sk_test_redis *r, char *err, size_t errsz)
{
    const char *pass = NULL;
    for (int i = 0; r->extra[i]; i++)
        if (strcmp(r->extra[i], "--requirepass") == 0 && r->extra[i + 1])
            pass = r->extra[i + 1];
    double deadline = now_s() + 20;
    while (now_s() < deadline) {
        int status;
        if (waitpid(r->pid, &status, WNOHANG) == r->pid) {
            r->pid = 0;
            snprintf(err, errsz, "redis-server exited at start (see %s/redis.log)", r->dir);
            return -1;
        }
        struct timeval tv = {0, 200000};
        redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
        if (c && !c->err) {
            redisReply *rep = pass ? redisCommand(c, "AUTH %s", pass) : NULL;
            if (rep)
                freeReplyObject(rep);
            rep = redisCommand(c, "PING");
            int ok = rep && rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "PONG") == 0;
            if (rep)
                freeReplyObject(rep);
            redisFree(c);
            if (ok)
                return 0;
        } else if (c) {
            redisFree(c);
        }
        /* Polling is the condition wait here: redis-server offers no readiness signal. */
        usleep(20000);
    }
    snprintf(err, errsz, "redis-server on port %d did not answer PING within 20 s", r->port);
    return -1;
}

static int spawn(sk_test_redis *r, int wait, char *err, size_t errsz)
{
    char port[16], log[300];
    snprintf(port, sizeof(port), "%d", r->port);
    snprintf(log, sizeof(log), "%s/redis.log", r->dir);
    const char *base[] = {"redis-server", "--port",   port,         "--bind", "127.0.0.1",
                          "--dir",        r->dir,     "--save",     "",       "--appendonly",
                          "yes",          "--logfile", log,          "--daemonize", "no"};
    size_t nbase = sizeof(base) / sizeof(base[0]);
    char *argv[sizeof(base) / sizeof(base[0]) + MAX_EXTRA + 1];
    size_t n = 0;
    for (; n < nbase; n++)
        argv[n] = (char *)base[n];
    for (int i = 0; r->extra[i]; i++)
        argv[n++] = r->extra[i];
    argv[n] = NULL;
    /* Redis logs to its logfile; its stdio must not hold the test's output pipe open,
     * or a server orphaned by a test that died keeps ctest waiting for its timeout. */
    sk_test_spawn_opts o = {.out_path = "/dev/null", .err_path = "/dev/null", .null_stdin = 1};
    pid_t pid = sk_test_spawn((const char *const *)argv, &o);
    if (pid < 0) {
        snprintf(err, errsz, "fork: %s", strerror(errno));
        return -1;
    }
    r->pid = pid;
    return wait ? wait_ready(r, err, errsz) : 0;
}

sk_test_redis *sk_test_redis_start(const char *const *extra, char *err, size_t errsz)
{
    sk_test_redis *r = calloc(1, sizeof(*r));
    if (!r) {
        snprintf(err, errsz, "out of memory");
        return NULL;
    }
    const char *pass = NULL;
    for (int i = 0; extra && extra[i] && i < MAX_EXTRA; i++) {
        r->extra[i] = strdup(extra[i]);
        if (strcmp(extra[i], "--requirepass") == 0 && extra[i + 1])
            pass = extra[i + 1];
    }
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(r->dir, sizeof(r->dir), "%s/sk-test-redis-XXXXXX", tmp);
    if (!mkdtemp(r->dir)) {
        snprintf(err, errsz, "mkdtemp: %s", strerror(errno));
        sk_test_redis_free(r);
        return NULL;
    }
    /* A port that was free can be taken before redis binds it: try a few. */
    for (int attempt = 0; attempt < 5; attempt++) {
        r->port = sk_test_free_port();
        if (spawn(r, 1, err, errsz) == 0) {
            if (pass)
                snprintf(r->url, sizeof(r->url), "redis://:%s@127.0.0.1:%d", pass, r->port);
            else
                snprintf(r->url, sizeof(r->url), "redis://127.0.0.1:%d", r->port);
            return r;
        }
        if (r->pid)
            sk_test_redis_stop(r, SIGKILL);
    }
    sk_test_redis_free(r);
    return NULL;
}

int sk_test_redis_port(const sk_test_redis *r)
{
    return r->port;
}

pid_t sk_test_redis_pid(const sk_test_redis *r)
{
    return r->pid;
}

const char *sk_test_redis_url(const sk_test_redis *r)
{
    return r->url;
}

int sk_test_redis_stop(sk_test_redis *r, int sig)
{
    if (r->pid <= 0)
        return 0;
    kill(r->pid, sig);
    int status;
    while (waitpid(r->pid, &status, 0) < 0 && errno == EINTR)
        ;
    r->pid = 0;
    return 0;
}

/* Stops the server if it runs and starts it again on its port and data; `wait`: until
 * PING answers. */
static int restart(sk_test_redis *r, int wait, char *err, size_t errsz)
{
    if (r->pid > 0)
        sk_test_redis_stop(r, SIGTERM);
    return spawn(r, wait, err, errsz);
}

int sk_test_redis_restart(sk_test_redis *r, char *err, size_t errsz)
{
    return restart(r, 1, err, errsz);
}

int sk_test_redis_respawn(sk_test_redis *r, char *err, size_t errsz)
{
    return restart(r, 0, err, errsz);
}

void sk_test_redis_free(sk_test_redis *r)
{
    if (!r)
        return;
    if (r->pid > 0)
        sk_test_redis_stop(r, SIGKILL);
    /* Redis 7 keeps its AOF in a sub-directory of several files: remove the tree. */
    if (r->dir[0] && strstr(r->dir, "sk-test-redis-"))
        nftw(r->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    for (int i = 0; r->extra[i]; i++)
        free(r->extra[i]);
    free(r);
}
