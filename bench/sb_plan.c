/* sb_plan: request -> user mapping and base URLs. See sb_plan.h. */
#include "sb_plan.h"

#include <stdio.h>
#include <string.h>

/* splitmix64: spreads a seed into well-mixed constants, and is the Feistel round function. */
static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int sb_plan_init(sb_plan *p, uint64_t users, uint64_t requests, uint64_t seed)
{
    if (users == 0)
        return -1;
    uint64_t tries = requests ? (requests + users - 1) / users : 16;
    if (users > (1ull << 62) / tries)
        return -1;
    p->users = users;
    p->span = users * tries;
    int bits = 2;
    while (bits < 62 && (1ull << bits) < p->span)
        bits++;
    bits += bits & 1; /* even: two halves of equal width */
    p->half_bits = bits / 2;
    for (int r = 0; r < 4; r++)
        p->keys[r] = mix64(seed * 4 + (uint64_t)r);
    return 0;
}

/* One pass of the balanced Feistel network: a bijection of [0, 2^(2*half_bits)). */
static uint64_t feistel(const sb_plan *p, uint64_t x)
{
    uint64_t mask = (1ull << p->half_bits) - 1;
    uint64_t l = x >> p->half_bits, r = x & mask;
    for (int k = 0; k < 4; k++) {
        uint64_t t = l ^ (mix64(r ^ p->keys[k]) & mask);
        l = r;
        r = t;
    }
    return (l << p->half_bits) | r;
}

uint64_t sb_plan_user(const sb_plan *p, uint64_t i)
{
    /* Cycle walking: applying a permutation of the bigger domain until the value falls
     * back into [0, R) is a permutation of [0, R); the domain is under 4R, so the
     * expected number of passes is under 4. */
    uint64_t x = feistel(p, i % p->span);
    while (x >= p->span)
        x = feistel(p, x);
    return x % p->users + 1;
}

int sb_url_parse(const char *s, size_t len, sb_url *out, char *err, size_t errsz)
{
    memset(out, 0, sizeof(*out));
    while (len && (*s == ' ' || *s == '\t')) {
        s++;
        len--;
    }
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    if (len < 8 || strncmp(s, "http://", 7) != 0) {
        snprintf(err, errsz, "base URL \"%.*s\": expected http://host[:port][/prefix]", (int)len, s);
        return -1;
    }
    const char *h = s + 7, *end = s + len;
    const char *slash = memchr(h, '/', (size_t)(end - h));
    const char *hend = slash ? slash : end;
    const char *colon = memchr(h, ':', (size_t)(hend - h));
    const char *host_end = colon ? colon : hend;
    if (host_end == h || (size_t)(host_end - h) >= sizeof(out->host)) {
        snprintf(err, errsz, "base URL \"%.*s\": bad host", (int)len, s);
        return -1;
    }
    memcpy(out->host, h, (size_t)(host_end - h));
    if (colon) {
        size_t pl = (size_t)(hend - colon - 1);
        int port = 0;
        for (size_t i = 0; i < pl; i++) {
            if (colon[1 + i] < '0' || colon[1 + i] > '9') {
                port = -1;
                break;
            }
            port = port * 10 + (colon[1 + i] - '0');
            if (port > 65535)
                break;
        }
        if (pl == 0 || port <= 0 || port > 65535) {
            snprintf(err, errsz, "base URL \"%.*s\": bad port", (int)len, s);
            return -1;
        }
        snprintf(out->port, sizeof(out->port), "%d", port);
    } else {
        strcpy(out->port, "80");
    }
    if (slash) {
        size_t pl = (size_t)(end - slash);
        while (pl && slash[pl - 1] == '/')
            pl--;
        if (pl >= sizeof(out->prefix)) {
            snprintf(err, errsz, "base URL \"%.*s\": path too long", (int)len, s);
            return -1;
        }
        memcpy(out->prefix, slash, pl);
    }
    return 0;
}

int sb_url_parse_list(const char *s, sb_url *out, int max, char *err, size_t errsz)
{
    int n = 0;
    const char *p = s;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len > 0) {
            if (n == max) {
                snprintf(err, errsz, "more than %d base URLs", max);
                return -1;
            }
            if (sb_url_parse(p, len, &out[n], err, errsz) != 0)
                return -1;
            n++;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    if (n == 0) {
        snprintf(err, errsz, "no base URL (set http=http://host:port or SECKILL_HTTP)");
        return -1;
    }
    return n;
}
