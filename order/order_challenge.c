/* order_challenge: proof-of-work challenges, signed and checked. See order_challenge.h.
 *
 * The HMAC is done as sk_jwt.c's prepared key: the SHA-256 states after (K ^ ipad) and
 * (K ^ opad) are kept, so a MAC costs its message's blocks plus one, two struct copies
 * and no allocation (EVP would allocate per call). */
#include "order_challenge.h"
#include "sk_id.h"
#include "sk_pow.h"

/* SHA256_Init/Update/Final for the prepared key, as sk_jwt.c (EVP cannot copy a digest
 * state without allocating). */
#define OPENSSL_SUPPRESS_DEPRECATED

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAC_BYTES 16 /* 128 bits of the HMAC: forging one is 2^128 tries */

typedef struct {
    SHA256_CTX inner, outer;
} hmac_key;

struct order_challenge_key {
    hmac_key cur, prev;
    int has_prev;
};

static int hmac_prepare(hmac_key *h, const unsigned char *secret, size_t len)
{
    unsigned char block[SHA256_CBLOCK] = {0}, pad[SHA256_CBLOCK];
    if (len > SHA256_CBLOCK)
        SHA256(secret, len, block); /* a long key is its digest (RFC 2104) */
    else
        memcpy(block, secret, len);
    int ok = 1;
    for (size_t i = 0; i < SHA256_CBLOCK; i++)
        pad[i] = block[i] ^ 0x36;
    ok &= SHA256_Init(&h->inner) && SHA256_Update(&h->inner, pad, sizeof(pad));
    for (size_t i = 0; i < SHA256_CBLOCK; i++)
        pad[i] = block[i] ^ 0x5c;
    ok &= SHA256_Init(&h->outer) && SHA256_Update(&h->outer, pad, sizeof(pad));
    OPENSSL_cleanse(block, sizeof(block));
    OPENSSL_cleanse(pad, sizeof(pad));
    return ok ? 0 : -1;
}

order_challenge_key *order_challenge_key_new(const unsigned char *cur, size_t cur_len,
                                             const unsigned char *prev, size_t prev_len)
{
    if (!cur || cur_len == 0)
        return NULL;
    order_challenge_key *k = calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    int rc = hmac_prepare(&k->cur, cur, cur_len);
    if (rc == 0 && prev && prev_len > 0) {
        rc = hmac_prepare(&k->prev, prev, prev_len);
        k->has_prev = 1;
    }
    if (rc != 0) {
        order_challenge_key_free(k);
        return NULL;
    }
    return k;
}

order_challenge_key *order_challenge_key_of_config(const char *key, const char *prev,
                                                   const char *jwt_secret)
{
    unsigned char derived[SHA256_DIGEST_LENGTH];
    const unsigned char *cur = (const unsigned char *)key;
    size_t cur_len = strlen(key);
    if (cur_len == 0) {
        SHA256_CTX c;
        SHA256_Init(&c);
        SHA256_Update(&c, "seckill challenge key\n", 22);
        SHA256_Update(&c, jwt_secret, strlen(jwt_secret));
        SHA256_Final(derived, &c);
        cur = derived;
        cur_len = sizeof(derived);
    }
    order_challenge_key *k =
        order_challenge_key_new(cur, cur_len, (const unsigned char *)prev, strlen(prev));
    OPENSSL_cleanse(derived, sizeof(derived));
    return k;
}

void order_challenge_key_free(order_challenge_key *k)
{
    if (!k)
        return;
    OPENSSL_cleanse(k, sizeof(*k)); /* the states stand for the secrets */
    free(k);
}

/* HMAC(user "." signed) truncated to MAC_BYTES, as lowercase hex into hex (2*MAC_BYTES). */
static void mac_hex(const hmac_key *h, uint64_t user_id, const char *signed_part, size_t len,
                    char hex[2 * MAC_BYTES])
{
    static const char digits[] = "0123456789abcdef";
    char u[24];
    int ulen = 0; /* "<user_id>.", written backwards: snprintf is a tenth of a check */
    u[sizeof(u) - 1] = '.';
    do
        u[sizeof(u) - 2 - ulen++] = (char)('0' + user_id % 10);
    while ((user_id /= 10) != 0);
    const char *up = u + sizeof(u) - 1 - ulen;
    ulen++;
    unsigned char ih[SHA256_DIGEST_LENGTH], mac[SHA256_DIGEST_LENGTH];
    SHA256_CTX c = h->inner;
    SHA256_Update(&c, up, (size_t)ulen);
    SHA256_Update(&c, signed_part, len);
    SHA256_Final(ih, &c);
    c = h->outer;
    SHA256_Update(&c, ih, sizeof(ih));
    SHA256_Final(mac, &c);
    for (int i = 0; i < MAC_BYTES; i++) {
        hex[2 * i] = digits[mac[i] >> 4];
        hex[2 * i + 1] = digits[mac[i] & 15];
    }
}

int order_challenge_issue(const order_challenge_key *k, uint64_t user_id, uint64_t event_id,
                          unsigned bits, int64_t expires_ms, uint64_t nonce, char *out,
                          size_t outsz)
{
    int n = snprintf(out, outsz, "1.%llu.%u.%lld.%016llx.", (unsigned long long)event_id, bits,
                     (long long)expires_ms, (unsigned long long)nonce);
    if (n < 0 || (size_t)n + 2 * MAC_BYTES + 1 > outsz)
        return -1;
    mac_hex(&k->cur, user_id, out, (size_t)n - 1, out + n);
    out[n + 2 * MAC_BYTES] = '\0';
    return n + 2 * MAC_BYTES;
}

/* The signed part of a path token: "p.<event>" (a challenge's starts with "1.": the two
 * MACs never sign the same text). */
static size_t path_signed(uint64_t event_id, char *buf, size_t bufsz)
{
    int n = snprintf(buf, bufsz, "p.%llu", (unsigned long long)event_id);
    return n > 0 && (size_t)n < bufsz ? (size_t)n : 0;
}

void order_challenge_path_token(const order_challenge_key *k, uint64_t user_id, uint64_t event_id,
                                char out[ORDER_CHALLENGE_PATH_TOKEN + 1])
{
    char buf[32];
    mac_hex(&k->cur, user_id, buf, path_signed(event_id, buf, sizeof(buf)), out);
    out[ORDER_CHALLENGE_PATH_TOKEN] = '\0';
}

int order_challenge_path_ok(const order_challenge_key *k, uint64_t user_id, uint64_t event_id,
                            const char *tok, size_t len)
{
    if (len != ORDER_CHALLENGE_PATH_TOKEN)
        return 0;
    char buf[32], want[2 * MAC_BYTES];
    size_t n = path_signed(event_id, buf, sizeof(buf));
    mac_hex(&k->cur, user_id, buf, n, want);
    if (CRYPTO_memcmp(want, tok, sizeof(want)) == 0)
        return 1;
    if (!k->has_prev)
        return 0;
    mac_hex(&k->prev, user_id, buf, n, want);
    return CRYPTO_memcmp(want, tok, sizeof(want)) == 0;
}

/* The fields of a solution or a challenge, split at '.': pointers into the text. */
typedef struct {
    const char *f[7];
    size_t n[7];
    int count;
} fields;

static int split(const char *s, size_t len, fields *out)
{
    out->count = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != '.')
            continue;
        if (out->count == 7)
            return -1;
        out->f[out->count] = s + start;
        out->n[out->count++] = i - start;
        start = i + 1;
    }
    return 0;
}

enum { DEC, HEX }; /* digits, or lowercase hex digits */

static int all_of(const char *s, size_t n, int set, size_t min, size_t max)
{
    if (n < min || n > max)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (set == HEX && s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

/* The challenge's six fields well formed; bits and expiry into *bits and *exp. */
static int challenge_shape(const fields *f, uint64_t *event, unsigned *bits, int64_t *exp)
{
    if (f->count < 6 || f->n[0] != 1 || f->f[0][0] != '1' ||
        sk_id_parse(f->f[1], f->n[1], event) != 0 || !all_of(f->f[2], f->n[2], DEC, 1, 2) ||
        !all_of(f->f[3], f->n[3], DEC, 1, 15) || !all_of(f->f[4], f->n[4], HEX, 16, 16) ||
        !all_of(f->f[5], f->n[5], HEX, 2 * MAC_BYTES, 2 * MAC_BYTES))
        return -1;
    *bits = (unsigned)strtoul(f->f[2], NULL, 10);
    *exp = strtoll(f->f[3], NULL, 10);
    return *bits >= ORDER_CHALLENGE_BITS_MIN && *bits <= ORDER_CHALLENGE_BITS_MAX ? 0 : -1;
}

int order_challenge_bits_of(const char *challenge, size_t len)
{
    fields f;
    uint64_t ev;
    unsigned bits;
    int64_t exp;
    if (len >= ORDER_CHALLENGE_MAX || split(challenge, len, &f) != 0 || f.count != 6 ||
        challenge_shape(&f, &ev, &bits, &exp) != 0)
        return -1;
    return (int)bits;
}

int order_challenge_verify(const order_challenge_key *k, const char *s, size_t len,
                           uint64_t user_id, uint64_t event_id, unsigned min_bits, int64_t now_ms)
{
    fields f;
    uint64_t ev;
    unsigned bits;
    int64_t exp;
    if (len >= ORDER_CHALLENGE_SOLUTION_MAX || split(s, len, &f) != 0 || f.count != 7 ||
        challenge_shape(&f, &ev, &bits, &exp) != 0 || !all_of(f.f[6], f.n[6], DEC, 1, 20))
        return ORDER_CHALLENGE_ERR_SHAPE;
    if (ev != event_id || bits < min_bits)
        return ORDER_CHALLENGE_ERR_INVALID;
    size_t signed_len = (size_t)(f.f[5] - s) - 1; /* up to the '.' before the MAC */
    char want[2 * MAC_BYTES];
    mac_hex(&k->cur, user_id, s, signed_len, want);
    /* CRYPTO_memcmp: constant time, so a MAC is not guessed byte by byte. */
    if (CRYPTO_memcmp(want, f.f[5], sizeof(want)) != 0) {
        if (!k->has_prev)
            return ORDER_CHALLENGE_ERR_INVALID;
        mac_hex(&k->prev, user_id, s, signed_len, want);
        if (CRYPTO_memcmp(want, f.f[5], sizeof(want)) != 0)
            return ORDER_CHALLENGE_ERR_INVALID;
    }
    if (now_ms >= exp)
        return ORDER_CHALLENGE_ERR_EXPIRED;
    return sk_pow_zero_bits(s, len) >= bits ? ORDER_CHALLENGE_OK
                                                     : ORDER_CHALLENGE_ERR_INVALID;
}

const char *order_challenge_strerror(int status)
{
    switch (status) {
    case ORDER_CHALLENGE_OK:
        return "ok";
    case ORDER_CHALLENGE_ERR_SHAPE:
        return ORDER_CHALLENGE_HEADER ": not <challenge>.<counter> as GET "
                                      "/api/v1/events/{id}/challenge gives it";
    case ORDER_CHALLENGE_ERR_INVALID:
        return "the challenge is not this user's and this event's, or its solution has "
               "too few leading zero bits";
    case ORDER_CHALLENGE_ERR_EXPIRED:
        return "the challenge has expired: get a new one";
    default:
        return "unknown";
    }
}
