/* order_limit: rate-limit levels and the client's address. See order_limit.h. */
#include "order_limit.h"
#include "order_bucket.h"
#include "order_metrics.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(ORDER_LIMIT_LEVELS == ORDER_METRICS_LIMIT_LEVELS, "one counter per level");

struct order_limit {
    order_limit_proxies proxies;
    order_bucket_table *ip; /* NULL: level off */
    double ip_rate;
    order_bucket_table *over; /* per-event overrides, each key its own rate */
};

const char *order_limit_level_name(order_limit_level l)
{
    switch (l) {
    case ORDER_LIMIT_IP: return "ip";
    case ORDER_LIMIT_USER: return "user";
    case ORDER_LIMIT_EVENT: return "event";
    default: return "other";
    }
}

/* One IPv4 address from s[0..len): 0 ok. */
static int parse_ip(const char *s, size_t len, uint32_t *out)
{
    char buf[INET_ADDRSTRLEN];
    if (len == 0 || len >= sizeof(buf))
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    struct in_addr a;
    if (inet_pton(AF_INET, buf, &a) != 1)
        return -1;
    *out = ntohl(a.s_addr);
    return 0;
}

static void trim(const char **s, size_t *len)
{
    while (*len && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*len)--;
    }
    while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t'))
        (*len)--;
}

int order_limit_proxies_parse(const char *list, order_limit_proxies *out, char *err, size_t errsz)
{
    memset(out, 0, sizeof(*out));
    const char *p = list;
    while (*p) {
        size_t len = strcspn(p, ",");
        const char *item = p;
        size_t ilen = len;
        p += len;
        if (*p == ',')
            p++;
        trim(&item, &ilen);
        if (ilen == 0)
            continue;
        if (out->n == ORDER_LIMIT_PROXIES_MAX) {
            snprintf(err, errsz, "http.trusted_proxies: more than %d entries",
                     ORDER_LIMIT_PROXIES_MAX);
            return -1;
        }
        const char *slash = memchr(item, '/', ilen);
        size_t alen = slash ? (size_t)(slash - item) : ilen;
        long bits = 32;
        if (slash) {
            char nb[4];
            size_t blen = ilen - alen - 1;
            char *end;
            if (blen == 0 || blen >= sizeof(nb))
                goto bad;
            memcpy(nb, slash + 1, blen);
            nb[blen] = '\0';
            bits = strtol(nb, &end, 10);
            if (*end || bits < 0 || bits > 32)
                goto bad;
        }
        uint32_t a;
        if (parse_ip(item, alen, &a) != 0)
            goto bad;
        uint32_t mask = bits == 0 ? 0 : 0xffffffffu << (32 - bits);
        out->net[out->n] = a & mask;
        out->mask[out->n] = mask;
        out->n++;
        continue;
    bad:
        snprintf(err, errsz, "http.trusted_proxies: \"%.*s\" is not an IPv4 address or a.b.c.d/len",
                 (int)(ilen > 64 ? 64 : ilen), item);
        return -1;
    }
    return 0;
}

int order_limit_proxy_trusted(const order_limit_proxies *p, uint32_t addr)
{
    for (int i = 0; i < p->n; i++)
        if ((addr & p->mask[i]) == p->net[i])
            return 1;
    return 0;
}

uint32_t order_limit_client_ip(const order_limit_proxies *p, uint32_t peer, const char *xff)
{
    if (!xff || !order_limit_proxy_trusted(p, peer))
        return peer;
    uint32_t hop = peer;
    size_t end = strlen(xff);
    /* Right to left: each entry was appended by the hop after it. */
    while (end > 0) {
        size_t start = end;
        while (start > 0 && xff[start - 1] != ',')
            start--;
        const char *item = xff + start;
        size_t ilen = end - start;
        trim(&item, &ilen);
        end = start > 0 ? start - 1 : 0;
        if (ilen == 0)
            continue;
        uint32_t a;
        if (parse_ip(item, ilen, &a) != 0)
            return hop;
        if (!order_limit_proxy_trusted(p, a))
            return a;
        hop = a;
    }
    return hop; /* every hop is one of ours */
}

long long order_limit_retry_after_s(double rate)
{
    if (!(rate > 0))
        return 1;
    /* Rounded up by hand: one token's time, no libm for one ceil. */
    double t = 1.0 / rate;
    long long s = (long long)t;
    if ((double)s < t)
        s++;
    return s < 1 ? 1 : s;
}

order_limit *order_limit_new(long long ip_rate, long long ip_burst, long long ip_capacity,
                             const char *proxies, char *err, size_t errsz)
{
    order_limit *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(err, errsz, "out of memory");
        return NULL;
    }
    if (order_limit_proxies_parse(proxies ? proxies : "", &l->proxies, err, errsz) != 0) {
        free(l);
        return NULL;
    }
    /* The rate is given per call (the event's); 1/1 here is never used. */
    l->over = order_bucket_new((size_t)ip_capacity, 1, 1);
    if (!l->over) {
        snprintf(err, errsz, "ratelimit.ips: cannot make the per-event buckets");
        free(l);
        return NULL;
    }
    if (ip_rate > 0) {
        l->ip_rate = (double)ip_rate;
        l->ip = order_bucket_new((size_t)ip_capacity, (double)ip_rate, (double)ip_burst);
        if (!l->ip) {
            snprintf(err, errsz, "ratelimit.ip_*: cannot make the buckets");
            order_bucket_free(l->over);
            free(l);
            return NULL;
        }
    }
    return l;
}

void order_limit_free(order_limit *l)
{
    if (!l)
        return;
    order_bucket_free(l->ip);
    order_bucket_free(l->over);
    free(l);
}

int order_limit_ip_on(const order_limit *l)
{
    return l->ip != NULL;
}

const order_limit_proxies *order_limit_proxies_of(const order_limit *l)
{
    return &l->proxies;
}

int order_limit_ip_take(order_limit *l, uint32_t ip, int64_t now_us, long long *retry_after_s)
{
    if (!l->ip)
        return 1;
    /* order_bucket keys must not be 0; 0.0.0.0 is no peer's address anyway. */
    if (order_bucket_take(l->ip, (uint64_t)ip + 1, now_us))
        return 1;
    *retry_after_s = order_limit_retry_after_s(l->ip_rate);
    return 0;
}

int order_limit_override_take(order_limit *l, order_limit_level level, uint64_t who,
                              uint64_t event_id, int64_t rate, int64_t now_us,
                              long long *retry_after_s)
{
    /* One key per (level, who, event), never 0 (order_bucket's empty way). A collision
     * of two 64-bit keys shares a bucket: negligible. */
    uint64_t x = order_bucket_mix(order_bucket_mix(who ^ ((uint64_t)level << 62)) ^ event_id);
    if (order_bucket_take_rate(l->over, x ? x : 1, now_us, (double)rate, (double)rate))
        return 1;
    *retry_after_s = order_limit_retry_after_s((double)rate);
    return 0;
}
