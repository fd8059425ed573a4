/* order_msg: key names and index entries. See order_msg.h. */
#include "order_msg.h"
#include "order_status.h"
#include "sk_id.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A text built piece by piece into out[0..outsz-1]; len becomes outsz (never a valid
 * length) once something did not fit, and stays so. Every piece is short, so this
 * replaces snprintf on the accept path, where formatting took several per cent of the
 * service's instructions (callgrind, order/README.md). */
typedef struct strbuf {
    char *out;
    size_t outsz, len;
} strbuf;

static void sb_put(strbuf *b, const char *s, size_t n)
{
    if (b->len >= b->outsz || b->outsz - b->len <= n) {
        b->len = b->outsz;
        return;
    }
    memcpy(b->out + b->len, s, n);
    b->len += n;
    b->out[b->len] = 0;
}

#define SB_LIT(b, lit) sb_put((b), (lit), sizeof(lit) - 1)

static void sb_u64(strbuf *b, uint64_t v)
{
    char d[SK_ID_DEC_MAX];
    sb_put(b, d, sk_id_format(d, v));
}

/* The length written, or 0 if it did not fit. */
static size_t sb_done(const strbuf *b)
{
    return b->len < b->outsz ? b->len : 0;
}

size_t order_key(uint64_t event_id, order_key_kind kind, char *out, size_t outsz)
{
    return order_key_seg(event_id, 0, kind, out, outsz);
}

size_t order_key_seg(uint64_t event_id, unsigned seg, order_key_kind kind, char *out, size_t outsz)
{
    static const char *names[ORDER_KEY_COUNT] = {"stock", "buyers", "meta", "pending",
                                                  "released", "units"};
    const char *name = (unsigned)kind < ORDER_KEY_COUNT ? names[kind] : "?";
    strbuf b = {out, outsz, 0};
    SB_LIT(&b, "seckill:{e");
    sb_u64(&b, event_id);
    if (seg > 0) {
        SB_LIT(&b, ".");
        sb_u64(&b, seg);
    }
    SB_LIT(&b, "}:");
    sb_put(&b, name, strlen(name));
    return sb_done(&b);
}

unsigned order_seg_home(uint64_t user_id, unsigned k)
{
    if (k <= 1)
        return 0;
    /* splitmix64's finaliser: every bit of the id moves every bit of the result */
    uint64_t z = user_id + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (unsigned)(z % k);
}

unsigned order_release_keys_of(uint64_t event_id, uint64_t user_id, unsigned k,
                               order_release_keys *out)
{
    static const order_key_kind kinds[4] = {ORDER_KEY_STOCK, ORDER_KEY_BUYERS, ORDER_KEY_RELEASED,
                                            ORDER_KEY_UNITS};
    unsigned home = order_seg_home(user_id, k);
    for (int i = 0; i < 4; i++)
        out->len[i] = order_key_seg(event_id, home, kinds[i], out->key[i], sizeof(out->key[i]));
    return home;
}

uint64_t order_index_bucket(uint64_t order_id)
{
    return order_id >> 32;
}

int64_t order_id_age_s(uint64_t order_id, int64_t now_s)
{
    return now_s - ((int64_t)order_index_bucket(order_id) + 1704067200LL); /* libidgen's epoch */
}

size_t order_key_index(uint64_t order_id, char *out, size_t outsz)
{
    strbuf b = {out, outsz, 0};
    SB_LIT(&b, "seckill:oidx:");
    sb_u64(&b, order_index_bucket(order_id));
    return sb_done(&b);
}

/* Only a created or paid order carries its pay_by in the index (order_index_entry). */
static int has_pay_by(char letter)
{
    return letter == ORDER_STATUS_LETTER_CREATED || letter == ORDER_STATUS_LETTER_PAID;
}

/* The front's 'a' / 'p', the consumer's 'd' (a replay), or a status's letter. */
static int known_letter(char c)
{
    return c == 'a' || c == 'p' || c == ORDER_INDEX_OUTCOME_REPLAY ||
           order_status_of_letter(c) != ORDER_STATUS_UNKNOWN;
}

size_t order_index_encode(const order_index_entry *e, char *out, size_t outsz)
{
    strbuf b = {out, outsz, 0};
    sb_u64(&b, e->event_id);
    SB_LIT(&b, ":");
    sb_u64(&b, e->user_id);
    const char tail[2] = {':', e->outcome ? e->outcome : e->acked ? 'a' : 'p'};
    sb_put(&b, tail, 2);
    if (has_pay_by(e->outcome) && e->pay_by_ms > 0) {
        SB_LIT(&b, ":");
        sb_u64(&b, (uint64_t)e->pay_by_ms);
    }
    return sb_done(&b);
}

int order_index_decode(const char *s, size_t len, order_index_entry *e)
{
    const char *c1 = memchr(s, ':', len);
    const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - s)) : NULL;
    e->pay_by_ms = 0;
    if (c2 && s + len - c2 > 3 && c2[2] == ':' && has_pay_by(c2[1])) {
        uint64_t v; /* "<letter>:<pay_by_ms>" */
        if (sk_id_parse(c2 + 3, (size_t)(s + len - (c2 + 3)), &v) != 0)
            return -1;
        e->pay_by_ms = (int64_t)v;
        len = (size_t)(c2 + 2 - s);
    }
    if (!c2 || s + len - c2 != 2 || !known_letter(c2[1]) ||
        sk_id_parse(s, (size_t)(c1 - s), &e->event_id) != 0 ||
        sk_id_parse(c1 + 1, (size_t)(c2 - c1 - 1), &e->user_id) != 0)
        return -1;
    e->acked = c2[1] == 'a';
    e->outcome = c2[1] == 'a' || c2[1] == 'p' ? 0 : c2[1];
    return 0;
}

/* The letters and names are order_status.h's (one table for both). */
const char *order_index_status_name(char outcome)
{
    return order_status_name(order_status_of_letter(outcome));
}

char order_index_status_letter(const char *status)
{
    return order_status_letter(order_status_parse(status));
}

size_t order_key_ratelimit(uint64_t user_id, char *out, size_t outsz)
{
    int n = snprintf(out, outsz, "seckill:rl:{u%" PRIu64 "}", user_id);
    return n > 0 ? (size_t)n : 0;
}
