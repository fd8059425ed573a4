/* order_gate_args: the gate scripts' arguments and reply codes (pure). See order_gate.h. */
#include "order_gate.h"
#include "sk_id.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add(order_gate_args *a, const char *s, size_t len)
{
    a->argv[a->n] = s;
    a->lens[a->n] = len;
    a->n++;
}

static void add_key(order_gate_args *a, uint64_t event_id, unsigned seg, order_key_kind kind)
{
    char *k = a->keys[a->nkeys];
    add(a, k, order_key_seg(event_id, seg, kind, k, ORDER_KEY_MAX));
    a->nkeys++;
}

static void add_u64(order_gate_args *a, uint64_t v)
{
    char *w = a->words[a->n];
    add(a, w, sk_id_format(w, v));
}

/* The order's word: its id, or "order_id:q" for q > 1 units (reserve.lua, borrow.lua). */
static void add_order(order_gate_args *a, const order_gate_item *it)
{
    char *w = a->words[a->n];
    size_t len = sk_id_format(w, it->order_id);
    if (it->quantity > 1)
        len += (size_t)snprintf(w + len, sizeof(a->words[0]) - len, ":%" PRIu32, it->quantity);
    add(a, w, len);
}

size_t order_gate_batch_max(order_gate_op op)
{
    return op == ORDER_GATE_CONFIRM ? ORDER_GATE_CONFIRM_MAX : ORDER_GATE_BATCH_MAX;
}

int order_gate_args_build(order_gate_args *a, order_gate_op op, int64_t now_ms,
                          const order_gate_item *const *items, size_t n)
{
    if (op < 0 || op >= ORDER_GATE_OPS || n == 0 || n > order_gate_batch_max(op))
        return -1;
    uint64_t event_id = items[0]->event_id;
    unsigned seg = items[0]->seg, segs = items[0]->segs;
    for (size_t i = 1; i < n; i++)
        if (items[i]->event_id != event_id || items[i]->seg != seg)
            return -1;
    a->nkeys = a->n = 0;
    switch (op) {
    case ORDER_GATE_RESERVE: {
        add_key(a, event_id, seg, ORDER_KEY_STOCK);
        add_key(a, event_id, seg, ORDER_KEY_BUYERS);
        add_key(a, event_id, seg, ORDER_KEY_META);
        add_key(a, event_id, seg, ORDER_KEY_PENDING);
        add_key(a, event_id, seg, ORDER_KEY_UNITS);
        char *w = a->words[a->n];
        if (segs > 1) /* the K this front knows, which reserve.lua checks */
            add(a, w, (size_t)snprintf(w, sizeof(a->words[0]), "%" PRId64 ":%u", now_ms, segs));
        else /* once per call */
            add(a, w, (size_t)snprintf(w, sizeof(a->words[0]), "%" PRId64, now_ms));
        for (size_t i = 0; i < n; i++) {
            add_u64(a, items[i]->user_id);
            add_order(a, items[i]);
        }
        break;
    }
    case ORDER_GATE_BORROW: {
        add_key(a, event_id, seg, ORDER_KEY_STOCK);
        add_key(a, event_id, seg, ORDER_KEY_PENDING);
        char *w = a->words[a->n];
        add(a, w, (size_t)snprintf(w, sizeof(a->words[0]), "%" PRId64, now_ms));
        for (size_t i = 0; i < n; i++) {
            add_u64(a, items[i]->user_id);
            add_order(a, items[i]);
        }
        break;
    }
    case ORDER_GATE_CANCEL:
        add_key(a, event_id, seg, ORDER_KEY_STOCK);
        add_key(a, event_id, seg, ORDER_KEY_BUYERS);
        add_key(a, event_id, seg, ORDER_KEY_PENDING);
        add_key(a, event_id, seg, ORDER_KEY_UNITS);
        for (size_t i = 0; i < n; i++) {
            add_u64(a, items[i]->order_id);
            add_u64(a, items[i]->user_id);
        }
        break;
    default: /* ORDER_GATE_CONFIRM: docs/design.md's form, the pending hash alone */
        add_key(a, event_id, seg, ORDER_KEY_PENDING);
        for (size_t i = 0; i < n; i++)
            add_u64(a, items[i]->order_id);
        break;
    }
    return 0;
}

static int fail_all(long long *codes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        codes[i] = ORDER_GATE_FAILED;
    return -1;
}

/* reserve.lua's bulk answer of several units: "L<held>:<order>" (7), "S<left>" (8),
 * "Q<limit>" (9), the figure into *num and the order into *order. @returns the code, or
 * -1 for anything else. */
static long long units_answer(const char *s, size_t len, int64_t *num, uint64_t *order)
{
    static const char letters[] = "LSQ";
    const char *l = len > 1 ? strchr(letters, s[0]) : NULL;
    if (!l || !*l)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s + 1, &end, 10);
    if (errno || end == s + 1 || v < 0)
        return -1;
    size_t rest = len - (size_t)(end - s);
    if (s[0] == 'L' && rest > 0 && *end == ':') {
        if (rest > 1 && sk_id_parse(end + 1, rest - 1, order) != 0)
            *order = 0;
    } else if (rest != 0) {
        return -1;
    }
    *num = v;
    return s[0] == 'L' ? ORDER_GATE_LIMIT_REACHED
                       : s[0] == 'S' ? ORDER_GATE_FEWER_LEFT : ORDER_GATE_OVER_LIMIT;
}

int order_gate_codes(order_gate_op op, const redisReply *reply, size_t n, long long *codes,
                     order_gate_held *held)
{
    if (!reply || n == 0)
        return fail_all(codes, n);
    if (op == ORDER_GATE_CONFIRM) {
        if (reply->type != REDIS_REPLY_INTEGER)
            return fail_all(codes, n);
        for (size_t i = 0; i < n; i++)
            codes[i] = 0;
        return 0;
    }
    if (op == ORDER_GATE_CANCEL && n == 1 && reply->type == REDIS_REPLY_INTEGER) {
        codes[0] = reply->integer;
        return 0;
    }
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != n)
        return fail_all(codes, n);
    for (size_t i = 0; i < n; i++) {
        const redisReply *e = reply->element[i];
        if (held)
            held[i] = (order_gate_held){0, 0};
        if (op == ORDER_GATE_RESERVE && e->type == REDIS_REPLY_STRING) {
            order_gate_held h = {0, 0};
            long long c = units_answer(e->str, e->len, &h.n, &h.order_id);
            if (c < 0) { /* a duplicate naming the held order ("" when not known) */
                c = 2;
                h.n = 0;
                if (e->len == 0 || sk_id_parse(e->str, e->len, &h.order_id) != 0)
                    h.order_id = 0;
            }
            if (held)
                held[i] = h;
            codes[i] = c;
            continue;
        }
        if (e->type != REDIS_REPLY_INTEGER)
            return fail_all(codes, n);
        codes[i] = e->integer;
    }
    return 0;
}
