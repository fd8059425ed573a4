/* order_idem: Idempotency-Key's pure parts (the check, the fingerprint, the stored
 * values). See order_idem.h. */
#include "order_idem.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int order_idem_key_check(const char *key, size_t len, char *msg, size_t msgsz)
{
    if (len == 0) {
        snprintf(msg, msgsz, "Idempotency-Key: empty");
        return -1;
    }
    if (len > ORDER_IDEM_KEY_MAX) {
        snprintf(msg, msgsz, "Idempotency-Key: over %d characters", ORDER_IDEM_KEY_MAX);
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)key[i];
        if (c < 0x20 || c > 0x7e) {
            snprintf(msg, msgsz, "Idempotency-Key: a control character or a byte over 0x7e");
            return -1;
        }
    }
    return 0;
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

uint64_t order_idem_fingerprint(int route, uint64_t path_id, const char *body, size_t len)
{
    char head[48];
    int n = snprintf(head, sizeof(head), "%d/%" PRIu64 "/", route, path_id);
    uint64_t h = fnv1a(14695981039346656037ULL, head, n > 0 ? (size_t)n : 0);
    return fnv1a(h, body, len);
}

size_t order_idem_redis_key(uint64_t user, const char *key, size_t klen, char *out, size_t outsz)
{
    int n = snprintf(out, outsz, "seckill:idem:{u%" PRIu64 "}:%.*s", user, (int)klen, key);
    return n < 0 ? 0 : (size_t)n < outsz ? (size_t)n : outsz - 1;
}

size_t order_idem_encode_claim(uint64_t fp, char *out, size_t outsz)
{
    int n = snprintf(out, outsz, "p %016" PRIx64, fp);
    return n < 0 ? 0 : (size_t)n < outsz ? (size_t)n : outsz - 1;
}

char *order_idem_encode_answer(uint64_t fp, int status, const char *body, size_t blen, size_t *len)
{
    char head[40];
    int n = snprintf(head, sizeof(head), "d %016" PRIx64 " %03d ", fp, status);
    char *v = malloc((size_t)n + blen + 1);
    if (!v)
        return NULL;
    memcpy(v, head, (size_t)n);
    if (blen)
        memcpy(v + n, body, blen);
    v[(size_t)n + blen] = 0;
    *len = (size_t)n + blen;
    return v;
}

order_idem_verdict order_idem_decide(const char *v, size_t len, uint64_t fp, int *status,
                                     const char **body, size_t *blen)
{
    char want[17];
    snprintf(want, sizeof(want), "%016" PRIx64, fp);
    /* "p " + 16 hex, or "d " + 16 hex + " " + 3 digits + " " + body */
    if (len < 18 || (v[0] != 'p' && v[0] != 'd') || v[1] != ' ')
        return ORDER_IDEM_CORRUPT;
    if (memcmp(v + 2, want, 16) != 0)
        return ORDER_IDEM_MISMATCH;
    if (v[0] == 'p')
        return len == 18 ? ORDER_IDEM_IN_PROGRESS : ORDER_IDEM_CORRUPT;
    if (len < 23 || v[18] != ' ' || v[22] != ' ')
        return ORDER_IDEM_CORRUPT;
    int st = 0;
    for (int i = 19; i < 22; i++) {
        if (v[i] < '0' || v[i] > '9')
            return ORDER_IDEM_CORRUPT;
        st = st * 10 + (v[i] - '0');
    }
    if (st < 100)
        return ORDER_IDEM_CORRUPT;
    *status = st;
    *body = v + 23;
    *blen = len - 23;
    return ORDER_IDEM_REPLAY;
}

int order_idem_keeps(int status)
{
    return status < 500 && status != 429;
}
