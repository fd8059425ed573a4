/* order_recon_rule: the cancel rule of the reconciler. See order_recon_rule.h. */
#include "order_recon_rule.h"
#include "sk_order_msg.h"
#include "order_msg.h"

#include <errno.h>
#include <stdio.h>
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

int order_recon_pending_parse(const char *val, char *user, size_t usz, int64_t *ts_ms, int *claim)
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
    if (errno || end == colon + 1)
        return -1;
    if (*end == ':' && end[1] >= '1' && end[1] <= '9') { /* ":q", the units (issue 31) */
        char *qend;
        long long q = strtoll(end + 1, &qend, 10);
        if (errno || q < 2 || q > SK_ORDER_MSG_MAX_QUANTITY)
            return -1;
        end = qend;
    }
    if (*end && strcmp(end, ":c") != 0)
        return -1;
    memcpy(user, val, ulen);
    user[ulen] = 0;
    *ts_ms = ts;
    if (claim)
        *claim = *end != 0;
    return 0;
}

int order_recon_pending_units(const char *val)
{
    char user[24];
    int64_t ts;
    if (order_recon_pending_parse(val, user, sizeof(user), &ts, NULL) != 0)
        return 1;
    const char *q = strchr(strchr(val, ':') + 1, ':'); /* after the time: ":q" or ":c" */
    return q && q[1] != 'c' ? atoi(q + 1) : 1;
}

int order_recon_is_claim(const char *val, size_t len)
{
    return len >= 2 && strcmp(val + len - 2, ":c") == 0;
}

char *order_recon_id_array(const char *const *ids, size_t n)
{
    /* 20 digits and a comma each, the braces and the NUL */
    char *arr = malloc(n * 21 + 3);
    if (!arr)
        return NULL;
    size_t off = 0;
    arr[off++] = '{';
    for (size_t i = 0; i < n; i++)
        if (order_recon_is_order_id(ids[i]))
            off += (size_t)sprintf(arr + off, "%s%s", off > 1 ? "," : "", ids[i]);
    arr[off++] = '}';
    arr[off] = 0;
    return arr;
}

unsigned order_recon_segments_k(const char *col)
{
    int k = col ? atoi(col) : 1;
    return k > 1 && k <= ORDER_SEGMENTS_MAX ? (unsigned)k : 1;
}

long long order_recon_segment_stock(long long stock_left, long long snap_stock, size_t npending,
                                    long long in_pg)
{
    long long stock = stock_left - snap_stock - ((long long)npending - in_pg);
    return stock < 0 ? 0 : stock;
}

int order_recon_buyers_homed(const char **users, int n, unsigned seg, unsigned k)
{
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (order_seg_home(strtoull(users[i], NULL, 10), k) == seg)
            users[kept++] = users[i];
    return kept;
}

int order_recon_closed_homed(const char **ids, const char **users, int n, unsigned seg, unsigned k)
{
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (order_seg_home(strtoull(users[i], NULL, 10), k) == seg) {
            ids[kept] = ids[i];
            users[kept++] = users[i];
        }
    return kept;
}

int64_t order_recon_msg_timeout_ms(const char *message_timeout, const char *delivery_timeout)
{
    const char *mt = message_timeout ? message_timeout : delivery_timeout;
    int64_t v = mt ? strtoll(mt, NULL, 10) : 10000; /* order_kafka.c's default */
    /* 0 is librdkafka's "infinite": never certain. A quarter of the range keeps
     * cutoff - wait from overflowing. */
    return v > 0 ? v : INT64_MAX / 4;
}

int64_t order_recon_lost_carry(order_recon_lost *prev, int n, order_recon_lost *l, int64_t now)
{
    l->since_ms = now;
    for (int j = 0; j < n; j++) {
        order_recon_lost *o = &prev[j];
        if (o->id != l->id || o->seg != l->seg)
            continue;
        l->since_ms = o->since_ms;
        l->snap_ms = o->snap_ms;
        l->snap_stock = o->snap_stock;
        l->snap_ids = o->snap_ids;
        l->nsnap = o->nsnap;
        l->snap_cap = o->snap_cap;
        l->snap_present = o->snap_present;
        l->rel_ids = o->rel_ids;
        l->nrel = o->nrel;
        l->rel_cap = o->rel_cap;
        o->snap_ids = o->rel_ids = NULL;
        o->nsnap = o->snap_cap = o->nrel = o->rel_cap = 0;
    }
    return l->since_ms;
}

/* Appends a copy of id to a growing list (ids, *n used, *cap allocated). */
static int list_add(char ***ids, size_t *n, size_t *cap, const char *id)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        char **m = realloc(*ids, c * sizeof(*m));
        if (!m)
            return -1;
        *ids = m;
        *cap = c;
    }
    if (!((*ids)[*n] = strdup(id)))
        return -1;
    (*n)++;
    return 0;
}

static void list_free(char ***ids, size_t *n, size_t *cap)
{
    for (size_t j = 0; j < *n; j++)
        free((*ids)[j]);
    free(*ids);
    *ids = NULL;
    *n = *cap = 0;
}

int order_recon_snap_add(order_recon_lost *l, const char *id)
{
    return list_add(&l->snap_ids, &l->nsnap, &l->snap_cap, id);
}

int order_recon_snap_add_released(order_recon_lost *l, const char *id)
{
    return list_add(&l->rel_ids, &l->nrel, &l->rel_cap, id);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void order_recon_snap_sort_released(order_recon_lost *l)
{
    if (l->nrel > 1)
        qsort(l->rel_ids, l->nrel, sizeof(*l->rel_ids), cmp_str);
}

long long order_recon_owed_elsewhere(const char *const *ids, const char *const *users, int n,
                                     const order_recon_lost *l)
{
    long long owed = 0;
    for (int i = 0; i < n; i++) {
        unsigned h = order_seg_home(strtoull(users[i], NULL, 10), l->k);
        if (h == l->seg || h >= 64 || !(l->snap_present >> h & 1))
            continue; /* ours, or a lost segment's: its own reload names it */
        if (!l->nrel || !bsearch(&ids[i], l->rel_ids, l->nrel, sizeof(*l->rel_ids), cmp_str))
            owed++;
    }
    return owed;
}

void order_recon_snap_drop(order_recon_lost *l)
{
    list_free(&l->snap_ids, &l->nsnap, &l->snap_cap);
    list_free(&l->rel_ids, &l->nrel, &l->rel_cap);
    l->snap_present = 0;
    l->snap_ms = 0;
}

void order_recon_lost_free(order_recon_lost *l, int n)
{
    for (int i = 0; l && i < n; i++)
        order_recon_snap_drop(&l[i]);
    free(l);
}
