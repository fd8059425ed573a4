/* consumer_batch: see consumer_batch.h. */
#include "consumer_batch.h"

#include <stdlib.h>
#include <string.h>

struct consumer_batch {
    consumer_batch_msg *msgs;
    size_t count, cap;
    char *arena;
    size_t arena_len, arena_cap;
    consumer_batch_pos *pos;
    size_t npos, pos_cap;
};

consumer_batch *consumer_batch_new(void)
{
    return calloc(1, sizeof(consumer_batch));
}

void consumer_batch_free(consumer_batch *b)
{
    if (!b)
        return;
    free(b->msgs);
    free(b->arena);
    free(b->pos);
    free(b);
}

void consumer_batch_clear(consumer_batch *b)
{
    b->count = 0;
    b->arena_len = 0;
    b->npos = 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

int consumer_batch_add(consumer_batch *b, int32_t partition, int64_t offset, const void *key,
                       size_t key_len, const void *value, size_t value_len)
{
    size_t klen = key ? key_len : 0;
    if (grow((void **)&b->msgs, &b->cap, b->count + 1, sizeof(*b->msgs)) != 0 ||
        grow((void **)&b->arena, &b->arena_cap, b->arena_len + klen + value_len + 1, 1) != 0)
        return -1;
    size_t i;
    for (i = 0; i < b->npos && b->pos[i].partition != partition; i++)
        ;
    if (i == b->npos) {
        if (grow((void **)&b->pos, &b->pos_cap, b->npos + 1, sizeof(*b->pos)) != 0)
            return -1;
        b->pos[b->npos++] = (consumer_batch_pos){.partition = partition, .next_offset = offset + 1};
    } else if (offset + 1 > b->pos[i].next_offset) {
        b->pos[i].next_offset = offset + 1;
    }
    consumer_batch_msg *m = &b->msgs[b->count++];
    memset(m, 0, sizeof(*m));
    m->partition = partition;
    m->offset = offset;
    m->key_off = b->arena_len;
    m->key_len = key ? key_len : CONSUMER_BATCH_NO_KEY;
    if (klen)
        memcpy(b->arena + b->arena_len, key, klen);
    b->arena_len += klen;
    m->val_off = b->arena_len;
    m->val_len = value ? value_len : 0;
    if (m->val_len)
        memcpy(b->arena + b->arena_len, value, m->val_len);
    b->arena_len += m->val_len;
    m->err = consumer_msg_parse(m->val_len ? b->arena + m->val_off : NULL, m->val_len, &m->order);
    return 0;
}

size_t consumer_batch_count(const consumer_batch *b)
{
    return b->count;
}

consumer_batch_msg *consumer_batch_msg_at(consumer_batch *b, size_t i)
{
    return i < b->count ? &b->msgs[i] : NULL;
}

const void *consumer_batch_key(const consumer_batch *b, const consumer_batch_msg *m)
{
    return m->key_len == CONSUMER_BATCH_NO_KEY ? NULL : b->arena + m->key_off;
}

const void *consumer_batch_value(const consumer_batch *b, const consumer_batch_msg *m)
{
    return m->val_len ? b->arena + m->val_off : NULL;
}

size_t consumer_batch_positions(const consumer_batch *b, const consumer_batch_pos **out)
{
    *out = b->pos;
    return b->npos;
}

/* Open addressing over 64-bit keys; 0 marks an empty slot (ids are > 0, and the pair
 * hash is forced non-zero). */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* @returns 1 if `k` was already in the set, 0 if it was inserted. */
static int set_insert(uint64_t *slots, size_t mask, uint64_t k, uint64_t *k2slots, uint64_t k2)
{
    size_t i = (size_t)mix(k ^ (k2 * 0x9e3779b97f4a7c15ULL)) & mask;
    for (;;) {
        if (slots[i] == 0) {
            slots[i] = k;
            if (k2slots)
                k2slots[i] = k2;
            return 0;
        }
        if (slots[i] == k && (!k2slots || k2slots[i] == k2))
            return 1;
        i = (i + 1) & mask;
    }
}

long consumer_batch_dedup(consumer_batch *b)
{
    size_t size = 16;
    while (size < b->count * 2)
        size *= 2;
    /* orders: order_id; pairs: (event_id, user_id) as two parallel slot arrays. */
    uint64_t *orders = calloc(size, sizeof(uint64_t));
    uint64_t *pair_e = calloc(size, sizeof(uint64_t));
    uint64_t *pair_u = calloc(size, sizeof(uint64_t));
    if (!orders || !pair_e || !pair_u) {
        free(orders);
        free(pair_e);
        free(pair_u);
        return -1;
    }
    long dups = 0;
    for (size_t i = 0; i < b->count; i++) {
        consumer_batch_msg *m = &b->msgs[i];
        m->dup = 0;
        if (m->err != CONSUMER_MSG_OK)
            continue;
        int seen_order = set_insert(orders, size - 1, (uint64_t)m->order.order_id, NULL, 0);
        int seen_pair = set_insert(pair_e, size - 1, (uint64_t)m->order.event_id, pair_u,
                                   (uint64_t)m->order.user_id);
        if (seen_order || seen_pair) {
            m->dup = seen_order ? 1 : 2;
            dups++;
        }
    }
    free(orders);
    free(pair_e);
    free(pair_u);
    return dups;
}
