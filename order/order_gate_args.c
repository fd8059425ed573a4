/* order_gate_args: the gate scripts' arguments and reply codes (pure). See order_gate.h. */
#include "order_gate.h"
#include "sk_id.h"

#include <inttypes.h>
#include <stdio.h>

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
        char *w = a->words[a->n];
        if (segs > 1) /* the K this front knows, which reserve.lua checks */
            add(a, w, (size_t)snprintf(w, sizeof(a->words[0]), "%" PRId64 ":%u", now_ms, segs));
        else /* once per call */
            add(a, w, (size_t)snprintf(w, sizeof(a->words[0]), "%" PRId64, now_ms));
        for (size_t i = 0; i < n; i++) {
            add_u64(a, items[i]->user_id);
            add_u64(a, items[i]->order_id);
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
            add_u64(a, items[i]->order_id);
        }
        break;
    }
    case ORDER_GATE_CANCEL:
        add_key(a, event_id, seg, ORDER_KEY_STOCK);
        add_key(a, event_id, seg, ORDER_KEY_BUYERS);
        add_key(a, event_id, seg, ORDER_KEY_PENDING);
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

int order_gate_codes(order_gate_op op, const redisReply *reply, size_t n, long long *codes,
                     uint64_t *held)
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
            held[i] = 0;
        if (op == ORDER_GATE_RESERVE && e->type == REDIS_REPLY_STRING) {
            uint64_t id = 0; /* a duplicate naming the held order ("" when not known) */
            if (held && e->len > 0 && sk_id_parse(e->str, e->len, &id) == 0)
                held[i] = id;
            codes[i] = 2;
            continue;
        }
        if (e->type != REDIS_REPLY_INTEGER)
            return fail_all(codes, n);
        codes[i] = e->integer;
    }
    return 0;
}
