/* order_recon_rule: the cancel rule of the reconciler. See order_recon_rule.h. */
#include "order_recon_rule.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int64_t order_recon_cutoff(order_recon_mark *m, int64_t t_now, int64_t hw_now, int64_t committed)
{
    /* No commit yet counts as offset 0: drained only while the partition is empty. */
    int64_t c = committed < 0 ? 0 : committed;
    int64_t cutoff = ORDER_RECON_NEVER;
    if (c >= hw_now)
        cutoff = t_now;
    else if (m->set && c >= m->hw)
        cutoff = m->t_ms;
    /* A new mark once the old one is passed (or there is none): the group passes it in
     * turn about one consumer lag later. A mark not yet passed is kept, or a group that
     * lags for ever would never let anything go. */
    if (!m->set || c >= m->hw) {
        m->hw = hw_now;
        m->t_ms = t_now;
        m->set = 1;
    }
    return cutoff;
}

int order_recon_may_cancel(int64_t ts_ms, int64_t cutoff, int64_t wait_ms)
{
    if (cutoff == ORDER_RECON_NEVER || wait_ms < 0)
        return 0;
    return ts_ms <= cutoff - wait_ms;
}

order_recon_action order_recon_decide(int in_pg, int64_t ts_ms, int64_t cutoff, int64_t wait_ms)
{
    if (in_pg)
        return ORDER_RECON_CONFIRM;
    return order_recon_may_cancel(ts_ms, cutoff, wait_ms) ? ORDER_RECON_CANCEL : ORDER_RECON_KEEP;
}

int64_t order_recon_event_cutoff(const int64_t *cutoffs, int32_t n, int32_t p)
{
    if (p >= 0 && p < n)
        return cutoffs[p];
    if (n <= 0)
        return ORDER_RECON_NEVER;
    int64_t min = INT64_MAX;
    for (int32_t i = 0; i < n; i++)
        if (cutoffs[i] < min)
            min = cutoffs[i];
    return min;
}

int order_recon_is_order_id(const char *id)
{
    size_t len = strlen(id);
    return len > 0 && len <= 20 && strspn(id, "0123456789") == len;
}

int order_recon_pending_parse(const char *val, char *user, size_t usz, int64_t *ts_ms)
{
    const char *colon = strchr(val, ':');
    if (!colon || colon == val)
        return -1;
    size_t ulen = (size_t)(colon - val);
    if (ulen >= usz)
        return -1;
    char *end;
    errno = 0;
    long long ts = strtoll(colon + 1, &end, 10);
    if (errno || *end || end == colon + 1)
        return -1;
    memcpy(user, val, ulen);
    user[ulen] = 0;
    *ts_ms = ts;
    return 0;
}

int64_t order_recon_msg_timeout_ms(const char *message_timeout, const char *delivery_timeout)
{
    const char *mt = message_timeout ? message_timeout : delivery_timeout;
    int64_t v = mt ? strtoll(mt, NULL, 10) : 10000; /* order_kafka.c's default */
    /* 0 is librdkafka's "infinite": never certain. A quarter of the range keeps
     * cutoff - wait from overflowing. */
    return v > 0 ? v : INT64_MAX / 4;
}

int64_t order_recon_lost_since(const order_recon_lost *prev, int n, uint64_t id, int64_t now)
{
    for (int i = 0; i < n; i++)
        if (prev[i].id == id)
            return prev[i].since_ms;
    return now;
}
