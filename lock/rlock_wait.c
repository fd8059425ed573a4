/* rlock_wait: waiting for a lock (or permits, or a latch) to free. The waiter subscribes
 * to the object's channel on its own connection, then attempts again (so a release
 * between the failed attempt and the subscription is not missed), and sleeps in poll()
 * until a message, the lock's own expiry (no message is sent when a lease runs out),
 * or a jittered fallback interval. */
#include "rlock_int.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

void rlock_waiter_close(rlock_waiter *w)
{
    if (w->sub)
        redisFree(w->sub);
    w->sub = NULL;
    w->subscribed = 0;
}

/* Reads replies until one is an array whose first element is `kind` (subscribe or
 * unsubscribe confirmation); everything before it (stale messages) is dropped. */
static int read_until(redisContext *s, const char *kind)
{
    for (int i = 0; i < 100000; i++) {
        void *rep = NULL;
        if (redisGetReply(s, &rep) != REDIS_OK || rep == NULL)
            return -1;
        redisReply *r = rep;
        int match = r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
                    r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, kind) == 0;
        freeReplyObject(r);
        if (match)
            return 0;
    }
    return -1;
}

static int subscribe(rlock_client_t *c, rlock_waiter *w, const char *channel)
{
    char err[RLOCK_ERRSTR_SIZE];
    if (w->sub == NULL) {
        w->sub = rlock_client_connect(c, err, sizeof(err));
        if (w->sub == NULL)
            return -1;
    }
    if (w->seed == 0)
        w->seed = (unsigned)getpid() ^ (unsigned)(uintptr_t)w ^ (unsigned)rlock_now_ms();
    const char *v[2] = {"SUBSCRIBE", channel};
    size_t vl[2] = {9, strlen(channel)};
    if (redisAppendCommandArgv(w->sub, 2, v, vl) != REDIS_OK || read_until(w->sub, "subscribe") != 0) {
        rlock_waiter_close(w);
        return -1;
    }
    w->subscribed = 1;
    return 0;
}

static void unsubscribe(rlock_waiter *w, const char *channel)
{
    const char *v[2] = {"UNSUBSCRIBE", channel};
    size_t vl[2] = {11, strlen(channel)};
    if (redisAppendCommandArgv(w->sub, 2, v, vl) != REDIS_OK || read_until(w->sub, "unsubscribe") != 0)
        rlock_waiter_close(w);
    w->subscribed = 0;
}

/* Drains every buffered reply. @returns how many there were, or -1 on a broken reader. */
static int drain(redisContext *s)
{
    int n = 0;
    for (;;) {
        void *rep = NULL;
        if (redisGetReplyFromReader(s, &rep) != REDIS_OK)
            return -1;
        if (rep == NULL)
            return n;
        freeReplyObject(rep);
        n++;
    }
}

/* Waits up to t ms for a message. @returns 1 woken, 0 timed out, -1 connection broken. */
static int wait_message(rlock_waiter *w, int64_t t)
{
    int n = drain(w->sub);
    if (n != 0)
        return n > 0 ? 1 : -1;
    struct pollfd p = {.fd = w->sub->fd, .events = POLLIN};
    int pr = poll(&p, 1, t > INT32_MAX ? INT32_MAX : (int)t);
    if (pr == 0 || (pr < 0 && errno == EINTR))
        return 0;
    if (pr < 0 || redisBufferRead(w->sub) != REDIS_OK)
        return -1;
    n = drain(w->sub);
    return n < 0 ? -1 : n > 0;
}

int rlock_wait_until(rlock_client_t *c, rlock_waiter *w, const char *channel, int64_t wait_ms,
                     int64_t poll_ms, rlock_attempt_fn *attempt, void *ctx)
{
    int64_t hint = 0;
    int r = attempt(ctx, &hint);
    if (r != 0)
        return r > 0 ? 0 : r;
    if (wait_ms == 0)
        return RLOCK_ERR_TIMEOUT;
    int64_t deadline = wait_ms < 0 ? INT64_MAX : rlock_now_ms() + wait_ms;
    /* Without a subscription (connection refused...) we still wait, by polling alone. */
    int sub_ok = subscribe(c, w, channel) == 0;
    int rv;
    for (;;) {
        r = attempt(ctx, &hint);
        if (r != 0) {
            rv = r > 0 ? 0 : r;
            break;
        }
        int64_t now = rlock_now_ms();
        if (now >= deadline) {
            rv = RLOCK_ERR_TIMEOUT;
            break;
        }
        int64_t t = rlock_jitter_ms(poll_ms, &w->seed);
        if (hint > 0 && hint + 1 < t)
            t = hint + 1; /* the holder's lease ends then, with no message */
        if (deadline - now < t)
            t = deadline - now;
        if (sub_ok) {
            if (wait_message(w, t) < 0) {
                rlock_waiter_close(w);
                sub_ok = subscribe(c, w, channel) == 0;
            }
        } else {
            rlock_sleep_ms(t);
        }
    }
    if (sub_ok && w->sub)
        unsubscribe(w, channel);
    return rv;
}
