/* sk_test_proc: see sk_test_proc.h. */
#include "sk_test_proc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

int64_t sk_test_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sk_test_pause_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

const char *sk_test_bin(char *buf, size_t size, const char *name)
{
    const char *d = getenv("SECKILL_BIN_DIR");
    snprintf(buf, size, "%s/%s", d && *d ? d : "./bin", name);
    return buf;
}

/* 1 if "NAME=..." entry `e` sets a name that one of `env` sets too. */
static int overridden(const char *e, const char *const *env)
{
    size_t n = strcspn(e, "=");
    for (; env && *env; env++)
        if (strncmp(*env, e, n) == 0 && (*env)[n] == '=')
            return 1;
    return 0;
}

/* The child's environment: ours (without SECKILL_* when clean, and without what
 * o->env sets again: getenv would find the first), then o->env. The strings are
 * borrowed; the array is malloc'd. */
static char **child_env(const sk_test_spawn_opts *o)
{
    size_t n = 0, m = 0, k = 0;
    while (environ[n])
        n++;
    while (o->env && o->env[m])
        m++;
    char **e = calloc(n + m + 1, sizeof(char *));
    if (!e)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if ((!o->clean_env || strncmp(environ[i], "SECKILL_", 8) != 0) &&
            !overridden(environ[i], o->env))
            e[k++] = environ[i];
    for (size_t i = 0; i < m; i++)
        e[k++] = (char *)o->env[i];
    return e;
}

/* In the child: points fd `to` at `path` (truncated). */
static void redirect(const char *path, int to)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, to) < 0)
        _exit(126);
    close(fd);
}

/* In the child: stdin from `path`. */
static void redirect_in(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0 || dup2(fd, STDIN_FILENO) < 0)
        _exit(126);
    close(fd);
}

pid_t sk_test_spawn(const char *const *argv, const sk_test_spawn_opts *o)
{
    static const sk_test_spawn_opts none = {0};
    if (!o)
        o = &none;
    char **e = child_env(o);
    if (!e)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        /* A failed assertion leaves the test early: never leave a server behind. */
        if (o->death_sig)
            prctl(PR_SET_PDEATHSIG, o->death_sig);
        if (o->out_path)
            redirect(o->out_path, STDOUT_FILENO);
        if (o->err_path && o->out_path && strcmp(o->err_path, o->out_path) == 0)
            dup2(STDOUT_FILENO, STDERR_FILENO);
        else if (o->err_path)
            redirect(o->err_path, STDERR_FILENO);
        if (o->null_stdin)
            redirect_in("/dev/null");
        if (strchr(argv[0], '/'))
            execve(argv[0], (char *const *)argv, e);
        else
            execvpe(argv[0], (char *const *)argv, e);
        _exit(127);
    }
    free(e);
    return pid;
}

int sk_test_proc_stop(pid_t pid, int sig, int timeout_ms)
{
    if (pid <= 0)
        return -1;
    if (sig)
        kill(pid, sig);
    int64_t deadline = sk_test_now_ms() + timeout_ms;
    int status;
    for (;;) {
        pid_t r = waitpid(pid, &status, timeout_ms < 0 ? 0 : WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return -1;
        if (timeout_ms >= 0 && sk_test_now_ms() >= deadline) {
            fprintf(stderr, "pid %d did not exit within %d ms: killing it\n", (int)pid, timeout_ms);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        if (timeout_ms >= 0)
            sk_test_pause_ms(10);
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}

double sk_test_cpu_seconds(pid_t pid)
{
    char path[64], buf[2048];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    /* after ")": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

long sk_test_file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

int sk_test_log_has(const char *path, const char *what)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof(line), f))
        found = strstr(line, what) != NULL;
    fclose(f);
    return found;
}

int sk_test_connect_port(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int sk_test_rmtree(const char *dir)
{
    return nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

int sk_test_read_line(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    buf[strcspn(buf, "\r\n")] = '\0';
    return buf[0] ? 0 : -1;
}
