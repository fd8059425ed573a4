/* rlock_keys: pure helpers: key naming (one hash tag per lock, so each script touches
 * one slot), Redlock validity, jitter, random ids, monotonic time. No I/O but the OS
 * random source, the clock and the thread id. */
#include "rlock_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int rlock_key_build(char *out, size_t outsz, const char *name, const char *suffix)
{
    if (name == NULL || name[0] == '\0' || suffix == NULL)
        return -1;
    const char *open = strchr(name, '{');
    if (open != NULL) {
        /* The caller's own hash tag must be a real one: non-empty, closed. */
        const char *close = strchr(open + 1, '}');
        if (close == NULL || close == open + 1)
            return -1;
        return snprintf(out, outsz, "%s%s", name, suffix);
    }
    if (strchr(name, '}') != NULL)
        return -1;
    return snprintf(out, outsz, "rlock:{%s}%s", name, suffix);
}

char *rlock_key_dup(const char *name, const char *suffix)
{
    int n = rlock_key_build(NULL, 0, name, suffix);
    if (n < 0)
        return NULL;
    char *k = malloc((size_t)n + 1);
    if (k)
        rlock_key_build(k, (size_t)n + 1, name, suffix);
    return k;
}

int rlock_rs_prefix_name(char *out, size_t outsz, const char *prefix, const char *name)
{
    if (name == NULL || name[0] == '\0')
        return -1;
    /* RedissonObject.prefixName: a name with its own hash tag keeps it */
    return strchr(name, '{') ? snprintf(out, outsz, "%s:%s", prefix, name)
                             : snprintf(out, outsz, "%s:{%s}", prefix, name);
}

int rlock_rs_suffix_name(char *out, size_t outsz, const char *name, const char *suffix)
{
    if (name == NULL || name[0] == '\0')
        return -1;
    /* RedissonObject.suffixName */
    return strchr(name, '{') ? snprintf(out, outsz, "%s:%s", name, suffix)
                             : snprintf(out, outsz, "{%s}:%s", name, suffix);
}

char *rlock_rs_name_dup(const char *prefix, const char *name, const char *suffix)
{
    int n = prefix ? rlock_rs_prefix_name(NULL, 0, prefix, name) : rlock_rs_suffix_name(NULL, 0, name, suffix);
    if (n < 0)
        return NULL;
    char *k = malloc((size_t)n + 1);
    if (k && prefix)
        rlock_rs_prefix_name(k, (size_t)n + 1, prefix, name);
    else if (k)
        rlock_rs_suffix_name(k, (size_t)n + 1, name, suffix);
    return k;
}

int rlock_uuid4(char out[37])
{
    char h[33];
    if (rlock_random_hex32(h) != 0)
        return -1;
    /* version 4, variant 10xx: the form of Java's UUID.randomUUID().toString() */
    h[12] = '4';
    h[16] = "89ab"[(h[16] <= '9' ? h[16] - '0' : h[16] - 'a' + 10) & 3];
    snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12, h + 16, h + 20);
    return 0;
}

int64_t rlock_redlock_validity(int64_t ttl_ms, int64_t elapsed_ms)
{
    int64_t drift = ttl_ms / 100 + 2;
    return ttl_ms - elapsed_ms - drift;
}

int64_t rlock_jitter_ms(int64_t base_ms, unsigned int *seed)
{
    if (base_ms <= 1)
        return 1;
    int64_t span = base_ms; /* [base/2, base*3/2) */
    int64_t v = base_ms / 2 + (int64_t)(rand_r(seed) % (unsigned)(span > 0x7fffffff ? 0x7fffffff : span));
    return v < 1 ? 1 : v;
}

int rlock_random_hex32(char out[33])
{
    unsigned char b[16];
    size_t got = 0;
    while (got < sizeof(b)) {
        ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)n;
    }
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[2 * i] = hex[b[i] >> 4];
        out[2 * i + 1] = hex[b[i] & 15];
    }
    out[32] = '\0';
    return 0;
}

/* gettid is a system call each time (glibc caches nothing), and every lock and unlock
 * of an owner-keyed lock needs it, some twice: kept per thread. A fork's child is one
 * new thread with the forking thread's copy: the handler clears it there. */
static __thread long tid_cached;
static pthread_once_t tid_once = PTHREAD_ONCE_INIT;
static void tid_forget(void) { tid_cached = 0; }
static void tid_atfork(void) { pthread_atfork(NULL, NULL, tid_forget); }

long rlock_thread_id(void)
{
    if (tid_cached == 0) {
        pthread_once(&tid_once, tid_atfork);
        tid_cached = (long)syscall(SYS_gettid);
    }
    return tid_cached;
}

int64_t rlock_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t rlock_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rlock_sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}
