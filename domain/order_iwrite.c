/* order_iwrite: the order index's write builder. See order_iwrite.h. */
#include "order_iwrite.h"
#include "sk_id.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIELD_MAX 32 /* "<order_id>:s": 20 digits + 2 + NUL */

struct order_iwrite {
    size_t cap, n;
    uint64_t bucket;
    char key[ORDER_KEY_MAX], ttl[24];
    const char *expire[4];
    size_t expire_len[4];
    const char **argv; /* 2 + 2 * cap: HSET, key, then field, value pairs */
    size_t *lens;
    char (*field)[FIELD_MAX];
    char (*value)[ORDER_INDEX_VALUE_MAX];
};

order_iwrite *order_iwrite_new(size_t cap)
{
    order_iwrite *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->cap = cap ? cap : 1;
    w->argv = calloc(2 + 2 * w->cap, sizeof(*w->argv));
    w->lens = calloc(2 + 2 * w->cap, sizeof(*w->lens));
    w->field = calloc(w->cap, sizeof(*w->field));
    w->value = calloc(w->cap, sizeof(*w->value));
    if (!w->argv || !w->lens || !w->field || !w->value) {
        order_iwrite_free(w);
        return NULL;
    }
    return w;
}

void order_iwrite_free(order_iwrite *w)
{
    if (!w)
        return;
    free(w->argv);
    free(w->lens);
    free(w->field);
    free(w->value);
    free(w);
}

void order_iwrite_begin(order_iwrite *w, uint64_t order_id, long long ttl_s)
{
    w->n = 0;
    w->bucket = order_index_bucket(order_id);
    w->argv[0] = "HSET";
    w->lens[0] = 4;
    w->argv[1] = w->key;
    w->lens[1] = order_key_index(order_id, w->key, sizeof(w->key));
    w->expire[0] = "EXPIRE";
    w->expire_len[0] = 6;
    w->expire[1] = w->key;
    w->expire_len[1] = w->lens[1];
    w->expire[2] = w->ttl;
    int t = snprintf(w->ttl, sizeof(w->ttl), "%lld", ttl_s);
    w->expire_len[2] = t > 0 ? (size_t)t : 0;
    /* LT (Redis 7.0): a later write never pushes the expiry out, so the hash goes
     * index_ttl_s after its first write (its orders' creation) whichever writer came
     * last (issue 32: the clean-up; order_read.c trusts the index for that long). */
    w->expire[3] = "LT";
    w->expire_len[3] = 2;
}

int order_iwrite_add(order_iwrite *w, uint64_t order_id, const char *suffix,
                     const order_index_entry *e)
{
    if (w->n == w->cap || order_index_bucket(order_id) != w->bucket)
        return -1;
    size_t i = w->n++;
    /* the id, then the suffix (snprintf was 1.2k instructions per placed order) */
    size_t f = sk_id_format(w->field[i], order_id);
    size_t sl = suffix ? strlen(suffix) : 0;
    if (f + sl >= FIELD_MAX)
        sl = FIELD_MAX - 1 - f;
    memcpy(w->field[i] + f, suffix ? suffix : "", sl);
    w->field[i][f + sl] = '\0';
    w->argv[2 + 2 * i] = w->field[i];
    w->lens[2 + 2 * i] = f + sl;
    w->argv[3 + 2 * i] = w->value[i];
    w->lens[3 + 2 * i] = order_index_encode(e, w->value[i], sizeof(w->value[i]));
    return 0;
}

size_t order_iwrite_count(const order_iwrite *w)
{
    return w->n;
}

int order_iwrite_hset(order_iwrite *w, const char ***argv, const size_t **lens)
{
    *argv = w->argv;
    *lens = w->lens;
    return 2 + 2 * (int)w->n;
}

int order_iwrite_expire(order_iwrite *w, const char ***argv, const size_t **lens)
{
    *argv = w->expire;
    *lens = w->expire_len;
    return 4;
}
