/* rlock_wait: waiting for a lock (or permits, or a latch) to free. The waiter subscribes
 * to the object's channel on its own connection, then attempts again (so a release
 * between the failed attempt and the subscription is not missed), and sleeps in poll()
 * until a message, the lock's own expiry (no message is sent when a lease runs out),
 * or a jittered fallback interval. A waiter stays subscribed until its handle is freed. */
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

static int subscribe(rlock_client_t *c, const sk_redis_url *url, struct timeval tv, rlock_waiter *w,
                     const char *channel)
{
    char err[RLOCK_ERRSTR_SIZE];
    /* Redisson mode on a cluster with sharded pub/sub: its releases SPUBLISH, heard
     * only by SSUBSCRIBE on the master of the channel's slot. */
    int sharded = c && c->sharded;
    if (w->sub == NULL) {
        w->sub = c ? rlock_client_sub_connect(c, sharded ? channel : NULL, err, sizeof(err))
                   : sk_redis_url_connect(url, tv, err, sizeof(err));
        if (w->sub == NULL)
            return -1;
    }
    if (w->seed == 0)
        w->seed = (unsigned)getpid() ^ (unsigned)(uintptr_t)w ^ (unsigned)rlock_now_ms();
    const char *v[2] = {sharded ? "SSUBSCRIBE" : "SUBSCRIBE", channel};
    size_t vl[2] = {strlen(v[0]), strlen(channel)};
    if (redisAppendCommandArgv(w->sub, 2, v, vl) != REDIS_OK ||
        read_until(w->sub, sharded ? "ssubscribe" : "subscribe") != 0) {
        rlock_waiter_close(w);
        return -1;
    }
    w->subscribed = 1;
    return 0;
}

/* Drains every buffered reply, keeping the last message's payload in w->msg.
 * @returns how many there were, or -1 on a broken reader. */
static int drain(rlock_waiter *w)
{
    int n = 0;
    for (;;) {
        void *rep = NULL;
        if (redisGetReplyFromReader(w->sub, &rep) != REDIS_OK)
            return -1;
        if (rep == NULL)
            return n;
        redisReply *r = rep;
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 && r->element[2]->type == REDIS_REPLY_STRING)
            snprintf(w->msg, sizeof(w->msg), "%s", r->element[2]->str);
        freeReplyObject(r);
        n++;
    }
}

/* Waits up to t ms for a message. @returns 1 woken, 0 timed out, -1 connection broken. */
static int wait_message(rlock_waiter *w, int64_t t)
{
    w->msg[0] = '\0';
    int n = drain(w);
    if (n != 0)
        return n > 0 ? 1 : -1;
    struct pollfd p = {.fd = w->sub->fd, .events = POLLIN};
    int pr = poll(&p, 1, t > INT32_MAX ? INT32_MAX : (int)t);
    if (pr == 0 || (pr < 0 && errno == EINTR))
        return 0;
    if (pr < 0 || redisBufferRead(w->sub) != REDIS_OK)
        return -1;
    n = drain(w);
    return n < 0 ? -1 : n > 0;
}

int rlock_wait_until(rlock_client_t *c, const sk_redis_url *url, struct timeval tv, rlock_waiter *w,
                     const char *channel, int64_t wait_ms, int64_t poll_ms, rlock_attempt_fn *attempt,
                     void *ctx)
{
    int64_t hint = 0;
    w->woken = 0;
    int r = attempt(ctx, &hint);
    if (r != 0)
        return r > 0 ? 0 : r;
    if (wait_ms == 0)
        return RLOCK_ERR_TIMEOUT;
    int64_t deadline = wait_ms < 0 ? INT64_MAX : rlock_now_ms() + wait_ms;
    /* The subscription outlives the wait (until the handle is freed): under contention
     * a handle waits again and again, and a SUBSCRIBE/UNSUBSCRIBE pair per wait would
     * double its round trips. Messages that arrive between waits only cause one early
     * retry. Without a subscription (refused...) we still wait, by polling alone. */
    int fresh = !w->subscribed;
    int sub_ok = w->subscribed || subscribe(c, url, tv, w, channel) == 0;
    for (;;) {
        if (fresh) {
            /* Just subscribed: look again, a release may have come before we listened. */
            r = attempt(ctx, &hint);
            if (r != 0)
                return r > 0 ? 0 : r;
        }
        fresh = 1;
        int64_t now = rlock_now_ms();
        if (now >= deadline)
            return RLOCK_ERR_TIMEOUT;
        int64_t t = rlock_jitter_ms(poll_ms, &w->seed);
        if (hint > 0 && hint + 1 < t)
            t = hint + 1; /* the holder's lease ends then, with no message */
        if (deadline - now < t)
            t = deadline - now;
        w->woken = 0;
        if (sub_ok) {
            int m = wait_message(w, t);
            w->woken = m > 0;
            if (m < 0) {
                rlock_waiter_close(w);
                sub_ok = subscribe(c, url, tv, w, channel) == 0;
            }
        } else {
            rlock_sleep_ms(t);
        }
    }
}
