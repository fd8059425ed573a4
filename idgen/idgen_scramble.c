/* idgen_scramble: SipHash-2-4 and the Feistel permutation of the unguessable layout.
 * Pure functions; see idgen_scramble.h. Also the public keyed encode and decode. */
#include "idgen_scramble.h"

#include "idgen.h"
#include "idgen_core.h"

#include <string.h>

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = ROTL(v1, 13);                                                                         \
        v1 ^= v0;                                                                                  \
        v0 = ROTL(v0, 32);                                                                         \
        v2 += v3;                                                                                  \
        v3 = ROTL(v3, 16);                                                                         \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = ROTL(v3, 21);                                                                         \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = ROTL(v1, 17);                                                                         \
        v1 ^= v2;                                                                                  \
        v2 = ROTL(v2, 32);                                                                         \
    } while (0)

static inline uint64_t load_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* SipHash's state after the key (v[0..3]), one 8-byte block absorbed with its two
 * compression rounds, and the four finalization rounds: the pieces both the generic
 * function and the one-word round function are made of. */
typedef struct sip_state {
    uint64_t v0, v1, v2, v3;
} sip_state;

static inline sip_state sip_init(uint64_t k0, uint64_t k1)
{
    sip_state s = {k0 ^ UINT64_C(0x736f6d6570736575), k1 ^ UINT64_C(0x646f72616e646f6d),
                   k0 ^ UINT64_C(0x6c7967656e657261), k1 ^ UINT64_C(0x7465646279746573)};
    return s;
}

static inline void sip_block(sip_state *s, uint64_t m)
{
    uint64_t v0 = s->v0, v1 = s->v1, v2 = s->v2, v3 = s->v3;
    v3 ^= m;
    SIPROUND;
    SIPROUND;
    v0 ^= m;
    s->v0 = v0, s->v1 = v1, s->v2 = v2, s->v3 = v3;
}

static inline uint64_t sip_final(sip_state *s)
{
    uint64_t v0 = s->v0, v1 = s->v1, v2 = s->v2 ^ 0xff, v3 = s->v3;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t idgen_siphash(uint64_t k0, uint64_t k1, const void *msg, size_t len)
{
    const unsigned char *p = msg;
    sip_state s = sip_init(k0, k1);
    size_t whole = len - len % 8;
    for (size_t i = 0; i < whole; i += 8)
        sip_block(&s, load_le64(p + i));
    uint64_t b = (uint64_t)len << 56;
    for (size_t i = 0; i < len % 8; i++)
        b |= (uint64_t)p[whole + i] << (8 * i);
    sip_block(&s, b);
    return sip_final(&s);
}

/* SipHash-2-4 of one 8-byte word (its little-endian bytes): the round function's input,
 * without the byte loop of the generic function. */
static inline uint64_t siphash_u64(const idgen_scramble_key *k, uint64_t m)
{
    sip_state s = sip_init(k->k0, k->k1);
    sip_block(&s, m);
    sip_block(&s, (uint64_t)8 << 56);
    return sip_final(&s);
}

int idgen_scramble_key_derive(const void *secret, size_t len, idgen_scramble_key *out)
{
    if (!secret || !out || len < IDGEN_SECRET_MIN || len > IDGEN_SECRET_MAX)
        return -1;
    unsigned char buf[1 + IDGEN_SECRET_MAX];
    const unsigned char *s = secret;
    uint64_t k0 = load_le64(s), k1 = load_le64(s + 8);
    memcpy(buf + 1, s, len);
    /* The whole secret is the message under a key only the secret knows, so bytes past
     * the first 16 count too, and the round key is not the secret itself. */
    buf[0] = 0;
    out->k0 = idgen_siphash(k0, k1, buf, len + 1);
    buf[0] = 1;
    out->k1 = idgen_siphash(k0, k1, buf, len + 1);
    memset(buf, 0, sizeof(buf));
    return 0;
}

/* The round function: 16 bits of SipHash of (second, round, half). The second (31
 * bits) sits above the round (8) and the half (16): every input is a distinct word. */
static inline uint32_t round_f(const idgen_scramble_key *k, uint32_t offset, uint32_t r,
                               uint32_t half)
{
    return (uint32_t)siphash_u64(k, (uint64_t)offset << 24 | (uint64_t)r << 16 | half) & 0xffff;
}

uint32_t idgen_scramble_seq(const idgen_scramble_key *k, uint32_t offset, uint32_t seq)
{
    uint32_t l = seq >> 16, r = seq & 0xffff;
    for (uint32_t i = 0; i < IDGEN_SCRAMBLE_ROUNDS; i++) {
        uint32_t t = l ^ round_f(k, offset, i, r);
        l = r;
        r = t;
    }
    return l << 16 | r;
}

uint32_t idgen_unscramble_seq(const idgen_scramble_key *k, uint32_t offset, uint32_t v)
{
    uint32_t l = v >> 16, r = v & 0xffff;
    for (uint32_t i = IDGEN_SCRAMBLE_ROUNDS; i-- > 0;) {
        uint32_t t = r ^ round_f(k, offset, i, l);
        r = l;
        l = t;
    }
    return l << 16 | r;
}

/* ---- the public keyed API ---- */

int idgen_encode_keyed(int64_t unix_seconds, uint32_t sequence, const void *secret,
                       size_t secret_len, uint64_t *id)
{
    idgen_scramble_key k;
    if (!id || idgen_scramble_key_derive(secret, secret_len, &k) != 0)
        return IDGEN_ERR_ARG;
    if (!idgen_core_time_ok(unix_seconds))
        return IDGEN_ERR_CLOCK;
    uint32_t off = (uint32_t)(unix_seconds - IDGEN_EPOCH_UNIX);
    *id = idgen_core_pack(unix_seconds, idgen_scramble_seq(&k, off, sequence));
    return IDGEN_OK;
}

int idgen_decode_keyed(uint64_t id, const void *secret, size_t secret_len, idgen_parts *out)
{
    idgen_scramble_key k;
    if (!out || (id >> 63) || idgen_scramble_key_derive(secret, secret_len, &k) != 0)
        return IDGEN_ERR_ARG;
    out->unix_seconds = IDGEN_EPOCH_UNIX + (int64_t)(id >> 32);
    out->sequence = idgen_unscramble_seq(&k, (uint32_t)(id >> 32), (uint32_t)id);
    return IDGEN_OK;
}
