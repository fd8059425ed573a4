/* rlock_redisson_harness: see rlock_redisson_harness.h. */
#include "rlock_redisson_harness.h"

#ifdef RLOCK_REDISSON_CLUSTER
sk_test_cluster *cl;
#endif


static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int64_t median(int64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_i64);
    return v[n / 2];
}

const char *url;
rcl_ctx *raw;
static pthread_mutex_t raw_mu = PTHREAD_MUTEX_INITIALIZER; /* rcl_ctx: one thread at a time */

/* ------------------------------------------------------------------ wall clock */

int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------ Java driver */

driver A, B;

static int drv_start(driver *d, int watchdog_ms)
{
    const char *jar = getenv("RLOCK_REDISSON_JAR");
    if (jar == NULL)
        return -1;
    int pin[2], pout[2];
    if (pipe(pin) != 0 || pipe(pout) != 0)
        return -1;
    char wd[24];
    snprintf(wd, sizeof(wd), "%d", watchdog_ms);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(pin[0], 0);
        dup2(pout[1], 1);
        close(pin[1]);
        close(pout[0]);
        /* C1 only and the serial collector: a quick start on 2 busy cores */
        execlp("java", "java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-jar", jar, url, wd, (char *)NULL);
        _exit(127);
    }
    close(pin[0]);
    close(pout[1]);
    memset(d, 0, sizeof(*d));
    d->pid = pid;
    d->in = pin[1];
    d->out = pout[0];
    return 0;
}

/* Reads one reply line into line (without '\n') within timeout_ms (0: only what is
 * already there). @returns 1 got one, 0 none in time, -1 the driver is gone. */
int drv_recv(driver *d, char *line, size_t size, int timeout_ms)
{
    int64_t end = rt_now_ms() + timeout_ms;
    for (;;) {
        char *nl = memchr(d->buf, '\n', d->len);
        if (nl != NULL) {
            size_t n = (size_t)(nl - d->buf);
            snprintf(line, size, "%.*s", (int)n, d->buf);
            memmove(d->buf, nl + 1, d->len - n - 1);
            d->len -= n + 1;
            return 1;
        }
        int64_t left = end - rt_now_ms();
        struct pollfd p = {.fd = d->out, .events = POLLIN};
        int pr = poll(&p, 1, left > 0 ? (int)left : 0);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            return 0;
        ssize_t r = read(d->out, d->buf + d->len, sizeof(d->buf) - 1 - d->len);
        if (r <= 0)
            return -1;
        d->len += (size_t)r;
    }
}

void drv_send(driver *d, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    line[n++] = '\n';
    assert_int_equal(write(d->in, line, (size_t)n), n);
}

/* Reads the reply of a command sent before; fails the test on "err" or no answer. */
void drv_reply(driver *d, char *line, size_t size)
{
    int r = drv_recv(d, line, size, 120000);
    if (r != 1)
        fail_msg("driver %d: no reply (%d)", (int)d->pid, r);
    if (strncmp(line, "ok", 2) != 0)
        fail_msg("driver %d: %s", (int)d->pid, line);
}

/* Sends a command and waits for its "ok ..." reply; returns the first number after ok. */
long long drv(driver *d, const char *fmt, ...)
{
    char cmd[512], line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    drv_send(d, "%s", cmd);
    drv_reply(d, line, sizeof(line));
    return strtoll(line + 2, NULL, 10);
}

void drv_ready(driver *d)
{
    char line[256];
    if (drv_recv(d, line, sizeof(line), 120000) != 1 || strncmp(line, "ready ", 6) != 0)
        fail_msg("driver did not start (is the jar built? %s)", getenv("RLOCK_REDISSON_JAR"));
    /* "ready <id> <Redisson version>" */
    char *sp = strchr(line + 6, ' ');
    if (sp)
        *sp++ = '\0';
    if (strlen(line + 6) >= sizeof(d->id))
        fail_msg("driver id too long: %s", line + 6);
    memcpy(d->id, line + 6, strlen(line + 6) + 1);
    printf("# driver %d: Redisson %s, id %s\n", (int)d->pid, sp ? sp : "?", d->id);
}

void drv_stop(driver *d)
{
    if (d->pid <= 0)
        return;
    drv_send(d, "quit");
    close(d->in);
    int st;
    waitpid(d->pid, &st, 0);
    close(d->out);
    d->pid = 0;
}

/* ------------------------------------------------------------------ raw Redis */

redisReply *cmd(int argc, const char **argv)
{
    size_t vl[8];
    for (int i = 0; i < argc; i++)
        vl[i] = strlen(argv[i]);
    pthread_mutex_lock(&raw_mu);
    redisReply *r = rcl_command_argv(raw, argc, argv, vl);
    pthread_mutex_unlock(&raw_mu);
    if (r == NULL || r->type == REDIS_REPLY_ERROR)
        fail_msg("redis %s: %s", argv[0], r ? r->str : rcl_errstr(raw));
    return r;
}

long long cmd_int(int argc, const char **argv)
{
    redisReply *r = cmd(argc, argv);
    long long v = r->type == REDIS_REPLY_INTEGER ? r->integer : r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    freeReplyObject(r);
    return v;
}

/* Subscribers of `channel`, plain and sharded, on every node. */
long long subscribers(const char *channel)
{
    long long n = 0;
#ifdef RLOCK_REDISSON_CLUSTER
    for (int i = 0; i < SK_TEST_CLUSTER_NODES; i++) {
        for (int k = 0; k < 2; k++) {
            redisReply *r = sk_test_cluster_cmd(cl, i, k ? "PUBSUB SHARDNUMSUB %s" : "PUBSUB NUMSUB %s", channel);
            if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
                n += r->element[1]->integer;
            if (r)
                freeReplyObject(r);
        }
    }
#else
    const char *argv[3] = {"PUBSUB", "NUMSUB", channel};
    redisReply *r = cmd(3, argv);
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        n = r->element[1]->integer;
    freeReplyObject(r);
#endif
    return n;
}

/* Waits until `channel` has at least n subscribers (n > 0), or none (n == 0). */
void wait_subscribers(const char *channel, long long n)
{
    int64_t end = rt_now_ms() + 60000;
    for (;;) {
        long long now = subscribers(channel);
        if (n > 0 ? now >= n : now == 0)
            return;
        if (rt_now_ms() > end)
            fail_msg("%s: %lld subscribers, want %s%lld", channel, now, n > 0 ? ">= " : "", n);
        rt_sleep_ms(5);
    }
}

rlock_client_t *rs_client(int watchdog_ms, int poll_ms)
{
    char err[256];
    rlock_client_opts o = {.watchdog_timeout_ms = watchdog_ms, .wait_poll_ms = poll_ms, .redisson = 1};
    rlock_client_t *c = rlock_client_new(url, &o, err, sizeof(err));
    if (c == NULL)
        fail_msg("rlock_client_new: %s", err);
    return c;
}

/* ------------------------------------------------------------------ C workers */

/* GET then SET under the lock (as the driver's "mutex") */
void *mutex_worker(void *p)
{
    struct worker *w = p;
    rlock_t *l = rlock_new(w->c, w->name, w->kind);
    for (int i = 0; i < w->rounds && l; i++) {
        if (rlock_lock(l, 0, NULL) != 0) {
            w->bad++;
            continue;
        }
        const char *get[2] = {"GET", w->counter};
        long long v = cmd_int(2, get);
        char s[24];
        snprintf(s, sizeof(s), "%lld", v + 1);
        const char *set[3] = {"SET", w->counter, s};
        freeReplyObject(cmd(3, set));
        if (rlock_unlock(l) != 0)
            w->bad++;
    }
    rlock_free(l);
    return NULL;
}

int test_setup(void **state)
{
    (void)state;
    char err[512];
#ifdef RLOCK_REDISSON_CLUSTER
    cl = sk_test_cluster_start(NULL, err, sizeof(err));
    if (cl == NULL) {
        fprintf(stderr, "sk_test_cluster_start: %s\n", err);
        return -1;
    }
    url = sk_test_cluster_url(cl);
#else
    url = rt_redis_url();
    if (url == NULL) {
        fprintf(stderr, "SECKILL_REDIS_URL not set\n");
        return -1;
    }
#endif
    struct timeval tv = {5, 0};
    raw = rcl_connect(url, tv, err, sizeof(err));
    if (raw == NULL) {
        fprintf(stderr, "rcl_connect: %s\n", err);
        return -1;
    }
    /* both JVMs start at once: their start-up is the slow part */
    if (drv_start(&A, 30000) != 0 || drv_start(&B, B_WATCHDOG) != 0) {
        fprintf(stderr, "cannot start the Redisson driver (RLOCK_REDISSON_JAR=%s)\n", getenv("RLOCK_REDISSON_JAR"));
        return -1;
    }
    return 0;
}

int test_teardown(void **state)
{
    (void)state;
    drv_stop(&A);
    drv_stop(&B);
    rcl_free(raw);
#ifdef RLOCK_REDISSON_CLUSTER
    sk_test_cluster_free(cl);
#endif
    return 0;
}

void test_ready(void **state)
{
    (void)state;
    drv_ready(&A);
    drv_ready(&B);
}

/* The hold is the thread's: it releases it itself. */
void *waiter_main(void *p)
{
    struct waiter *w = p;
    w->rv = rlock_try_lock(w->l, 20000, 0, NULL);
    w->at = wall_ms();
    w->unlock_rv = w->rv == 0 ? rlock_unlock(w->l) : -99;
    return NULL;
}
