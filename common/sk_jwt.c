/* sk_jwt: HS256 JWT mint and verify. See sk_jwt.h. */
#include "sk_jwt.h"
#include "sk_hmac.h"
#include "sk_id.h"

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t sk_b64url_encode(const unsigned char *in, size_t len, char *out)
{
    size_t o = 0, i = 0;
    for (; i + 2 < len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = b64url[v >> 18 & 63];
        out[o++] = b64url[v >> 12 & 63];
        out[o++] = b64url[v >> 6 & 63];
        out[o++] = b64url[v & 63];
    }
    if (len - i == 1) {
        uint32_t v = (uint32_t)in[i] << 16;
        out[o++] = b64url[v >> 18 & 63];
        out[o++] = b64url[v >> 12 & 63];
    } else if (len - i == 2) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
        out[o++] = b64url[v >> 18 & 63];
        out[o++] = b64url[v >> 12 & 63];
        out[o++] = b64url[v >> 6 & 63];
    }
    out[o] = '\0';
    return o;
}

/* Each byte's 6-bit value plus one, 0 outside the alphabet: a table, not five range
 * tests per character (the decode was about 5% of the service's user time per order). */
static const unsigned char b64url_vals[256] = {
    ['A'] = 1, ['B'] = 2, ['C'] = 3, ['D'] = 4, ['E'] = 5, ['F'] = 6, ['G'] = 7,
    ['H'] = 8, ['I'] = 9, ['J'] = 10, ['K'] = 11, ['L'] = 12, ['M'] = 13, ['N'] = 14,
    ['O'] = 15, ['P'] = 16, ['Q'] = 17, ['R'] = 18, ['S'] = 19, ['T'] = 20, ['U'] = 21,
    ['V'] = 22, ['W'] = 23, ['X'] = 24, ['Y'] = 25, ['Z'] = 26, ['a'] = 27, ['b'] = 28,
    ['c'] = 29, ['d'] = 30, ['e'] = 31, ['f'] = 32, ['g'] = 33, ['h'] = 34, ['i'] = 35,
    ['j'] = 36, ['k'] = 37, ['l'] = 38, ['m'] = 39, ['n'] = 40, ['o'] = 41, ['p'] = 42,
    ['q'] = 43, ['r'] = 44, ['s'] = 45, ['t'] = 46, ['u'] = 47, ['v'] = 48, ['w'] = 49,
    ['x'] = 50, ['y'] = 51, ['z'] = 52, ['0'] = 53, ['1'] = 54, ['2'] = 55, ['3'] = 56,
    ['4'] = 57, ['5'] = 58, ['6'] = 59, ['7'] = 60, ['8'] = 61, ['9'] = 62, ['-'] = 63,
    ['_'] = 64,
};

long sk_b64url_decode(const char *in, size_t len, unsigned char *out, size_t outsz)
{
    if (len % 4 == 1)
        return -1; /* no valid encoding has this length */
    size_t need = len / 4 * 3 + (len % 4 ? len % 4 - 1 : 0);
    if (need > outsz)
        return -1;
    const unsigned char *p = (const unsigned char *)in;
    size_t o = 0, i = 0;
    /* Four characters to three bytes at a time; a character outside the alphabet reads
     * as 0xffffffff (its table entry 0, minus one), so one test covers the four. */
    for (; i + 4 <= len; i += 4) {
        uint32_t a = b64url_vals[p[i]] - 1u, b = b64url_vals[p[i + 1]] - 1u,
                 c = b64url_vals[p[i + 2]] - 1u, d = b64url_vals[p[i + 3]] - 1u;
        if ((a | b | c | d) > 63)
            return -1;
        uint32_t v = a << 18 | b << 12 | c << 6 | d;
        out[o++] = (unsigned char)(v >> 16);
        out[o++] = (unsigned char)(v >> 8 & 0xff);
        out[o++] = (unsigned char)(v & 0xff);
    }
    if (i == len)
        return (long)o;
    /* 2 or 3 characters left: 12 or 18 bits, of which the last 4 or 2 carry nothing.
     * Set, they would give one token several spellings that all verify. */
    uint32_t a = b64url_vals[p[i]] - 1u, b = b64url_vals[p[i + 1]] - 1u;
    uint32_t c = len - i == 3 ? b64url_vals[p[i + 2]] - 1u : 0;
    if ((a | b | c) > 63)
        return -1;
    if (len - i == 2) {
        if (b & 0xf)
            return -1;
        out[o++] = (unsigned char)(a << 2 | b >> 4);
    } else {
        if (c & 0x3)
            return -1;
        uint32_t v = a << 12 | b << 6 | c;
        out[o++] = (unsigned char)(v >> 10);
        out[o++] = (unsigned char)(v >> 2 & 0xff);
    }
    return (long)o;
}

static void hs256(const unsigned char *key, size_t keylen, const char *data, size_t len,
                  unsigned char mac[32])
{
    unsigned int maclen = 32;
    HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)data, len, mac, &maclen);
}

/* The header sk_jwt_mint writes, {"alg":"HS256","typ":"JWT"}, base64url-encoded: a token
 * that carries exactly these bytes needs no JSON parse to know its alg is HS256. Any
 * other header (other key order, spaces, "none", ...) takes the full parse below. */
static const char canonical_hdr[] = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9";

/* The MAC step of a verify: one-shot HMAC() for sk_jwt_verify, the key's prepared
 * SHA-256 states for sk_jwt_key_verify. Fills mac; returns 0, or -1 on an OpenSSL
 * failure (treated as a bad signature: never a pass). */
typedef int (*mac_fn)(void *arg, const char *data, size_t len, unsigned char mac[32]);

struct oneshot_key {
    const unsigned char *secret;
    size_t len;
};

static int mac_oneshot(void *arg, const char *data, size_t len, unsigned char mac[32])
{
    const struct oneshot_key *k = arg;
    hs256(k->secret, k->len, data, len, mac);
    return 0;
}

/* Parses one base64url JSON part into a jansson object (caller decrefs), or NULL. */
static json_t *part_json(const char *p, size_t len)
{
    unsigned char buf[SK_JWT_MAX_LEN];
    long n = sk_b64url_decode(p, len, buf, sizeof(buf));
    if (n <= 0)
        return NULL;
    json_t *j = json_loadb((const char *)buf, (size_t)n, JSON_REJECT_DUPLICATES, NULL);
    if (j && !json_is_object(j)) {
        json_decref(j);
        return NULL;
    }
    return j;
}

static int parse_sub(json_t *sub, uint64_t *out)
{
    if (json_is_integer(sub)) {
        json_int_t v = json_integer_value(sub);
        if (v <= 0)
            return -1;
        *out = (uint64_t)v;
        return 0;
    }
    if (!json_is_string(sub))
        return -1;
    /* The one id rule (sk_id.h). sk_jwt_mint has always printed sub with %llu, so no
     * token it minted carries a leading zero; a "007" from elsewhere is now refused. */
    return sk_id_parse(json_string_value(sub), json_string_length(sub), out);
}

/* nbf / iat: absent, or an integer no later than now + leeway. */
static int not_before_ok(json_t *v, int64_t now, int64_t leeway)
{
    return !v || (json_is_integer(v) && json_integer_value(v) <= now + leeway);
}

/* Reads n decimal digits at p (1 to max, no leading zero) into *out. @returns the count
 * read, or 0 when they are not there in that form. */
static size_t digits(const char *p, size_t n, size_t max, uint64_t *out)
{
    size_t i = 0;
    uint64_t v = 0;
    while (i < n && i < max + 1 && p[i] >= '0' && p[i] <= '9')
        v = v * 10 + (uint64_t)(p[i++] - '0');
    if (i == 0 || i > max || (i > 1 && p[0] == '0'))
        return 0;
    *out = v;
    return i;
}

#define CLAIMS_NOT_CANONICAL (-1000)

/* The claims exactly as sk_jwt_mint writes them, {"sub":"<id>",["role":"admin",]
 * "exp":<int>}, read without a JSON parser: that was 9k of the 75k instructions a
 * placed order costs (issue 16). Only this one spelling is taken (no spaces, no other
 * key, no leading zero, ids of at most 19 digits and up to 2^63-1, exp of at most 18
 * digits); for it the result is by construction the parser's (no duplicate key, no
 * nbf/iat). Anything else returns CLAIMS_NOT_CANONICAL and goes through jansson.
 * @returns SK_JWT_OK, SK_JWT_EXPIRED, SK_JWT_BAD_SUB or CLAIMS_NOT_CANONICAL. */
static int claims_fast(const char *b64, size_t b64len, int64_t now, sk_jwt_claims *claims)
{
    char buf[160];
    if (b64len > (sizeof(buf) / 3) * 4)
        return CLAIMS_NOT_CANONICAL;
    long n = sk_b64url_decode(b64, b64len, (unsigned char *)buf, sizeof(buf));
    static const char sub_k[] = "{\"sub\":\"", role_k[] = "\",\"role\":\"admin\",\"exp\":",
                      exp_k[] = "\",\"exp\":";
    if (n <= 0 || (size_t)n < sizeof(sub_k) || memcmp(buf, sub_k, sizeof(sub_k) - 1) != 0)
        return CLAIMS_NOT_CANONICAL;
    size_t at = sizeof(sub_k) - 1, len = (size_t)n;
    uint64_t sub, exp;
    size_t k = digits(buf + at, len - at, 19, &sub);
    if (k == 0 || sk_id_parse(buf + at, k, &sub) != 0)
        return CLAIMS_NOT_CANONICAL; /* the parser path says BAD_SUB, by the same rule */
    at += k;
    int admin = 0;
    if (len - at >= sizeof(role_k) - 1 && memcmp(buf + at, role_k, sizeof(role_k) - 1) == 0) {
        admin = 1;
        at += sizeof(role_k) - 1;
    } else if (len - at >= sizeof(exp_k) - 1 && memcmp(buf + at, exp_k, sizeof(exp_k) - 1) == 0) {
        at += sizeof(exp_k) - 1;
    } else {
        return CLAIMS_NOT_CANONICAL;
    }
    k = digits(buf + at, len - at, 18, &exp);
    if (k == 0 || at + k + 1 != len || buf[at + k] != '}')
        return CLAIMS_NOT_CANONICAL;
    memset(claims, 0, sizeof(*claims));
    if ((int64_t)exp <= now)
        return SK_JWT_EXPIRED;
    claims->sub = sub;
    claims->exp = (int64_t)exp;
    claims->is_admin = admin;
    return SK_JWT_OK;
}

static int verify(const char *token, size_t len, mac_fn mac_of, void *mac_arg, int64_t now,
                  int64_t leeway, sk_jwt_claims *claims)
{
    if (len == 0 || len > SK_JWT_MAX_LEN)
        return SK_JWT_MALFORMED;
    const char *dot1 = memchr(token, '.', len);
    if (!dot1)
        return SK_JWT_MALFORMED;
    const char *dot2 = memchr(dot1 + 1, '.', len - (size_t)(dot1 + 1 - token));
    if (!dot2 || memchr(dot2 + 1, '.', len - (size_t)(dot2 + 1 - token)))
        return SK_JWT_MALFORMED;

    /* The header first: refuse any alg but HS256 before touching the signature. */
    size_t hdrlen = (size_t)(dot1 - token);
    if (hdrlen != sizeof(canonical_hdr) - 1 || memcmp(token, canonical_hdr, hdrlen) != 0) {
        json_t *hdr = part_json(token, hdrlen);
        if (!hdr)
            return SK_JWT_MALFORMED;
        json_t *alg = json_object_get(hdr, "alg");
        int alg_ok = json_is_string(alg) && strcmp(json_string_value(alg), "HS256") == 0;
        json_decref(hdr);
        if (!alg_ok)
            return SK_JWT_BAD_ALG;
    }

    unsigned char sig[64], mac[32];
    long siglen = sk_b64url_decode(dot2 + 1, len - (size_t)(dot2 + 1 - token), sig, sizeof(sig));
    if (siglen != 32)
        return SK_JWT_BAD_SIG;
    if (mac_of(mac_arg, token, (size_t)(dot2 - token), mac) != 0 || CRYPTO_memcmp(mac, sig, 32) != 0)
        return SK_JWT_BAD_SIG;

    int fast = claims_fast(dot1 + 1, (size_t)(dot2 - dot1 - 1), now, claims);
    if (fast != CLAIMS_NOT_CANONICAL)
        return fast;
    json_t *body = part_json(dot1 + 1, (size_t)(dot2 - dot1 - 1));
    if (!body)
        return SK_JWT_MALFORMED;
    int rc = SK_JWT_OK;
    json_t *exp = json_object_get(body, "exp"), *role = json_object_get(body, "role");
    memset(claims, 0, sizeof(*claims));
    if (!json_is_integer(exp) || json_integer_value(exp) <= now)
        rc = SK_JWT_EXPIRED;
    else if (parse_sub(json_object_get(body, "sub"), &claims->sub) != 0)
        rc = SK_JWT_BAD_SUB;
    else if (role && !json_is_string(role))
        rc = SK_JWT_MALFORMED;
    else if (!not_before_ok(json_object_get(body, "nbf"), now, leeway) ||
             !not_before_ok(json_object_get(body, "iat"), now, leeway))
        rc = SK_JWT_NOT_YET;
    else {
        claims->exp = json_integer_value(exp);
        claims->is_admin = role && strcmp(json_string_value(role), "admin") == 0;
    }
    json_decref(body);
    return rc;
}

int sk_jwt_verify(const char *token, size_t len, const unsigned char *secret, size_t secret_len,
                  int64_t now, sk_jwt_claims *claims)
{
    struct oneshot_key k = {secret, secret_len};
    return verify(token, len, mac_oneshot, &k, now, SK_JWT_DEFAULT_LEEWAY_S, claims);
}

/* HMAC-SHA256 with the key's two padded blocks absorbed once (common/sk_hmac: a token
 * costs its own blocks plus one, two struct copies and no allocation). EVP_MAC_init(NULL
 * key) did the same work through the provider layer: a context dup, a malloc and a free
 * per token and 8.3k instructions per placed order (issue 16). */
struct sk_jwt_key {
    sk_hmac_key *mac;
    int64_t leeway; /* seconds allowed for nbf/iat ahead of now */
};

sk_jwt_key *sk_jwt_key_new(const unsigned char *secret, size_t secret_len)
{
    sk_jwt_key *k = calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    if (!(k->mac = sk_hmac_key_new(secret, secret_len))) {
        free(k);
        return NULL;
    }
    k->leeway = SK_JWT_DEFAULT_LEEWAY_S;
    return k;
}

void sk_jwt_key_free(sk_jwt_key *k)
{
    if (!k)
        return;
    sk_hmac_key_free(k->mac); /* wipes the states, which stand for the secret */
    free(k);
}

static int mac_keyed(void *arg, const char *data, size_t len, unsigned char mac[32])
{
    const sk_jwt_key *k = arg;
    return sk_hmac_sha256(k->mac, data, len, mac);
}

int sk_jwt_key_verify(sk_jwt_key *key, const char *token, size_t len, int64_t now,
                      sk_jwt_claims *claims)
{
    return verify(token, len, mac_keyed, key, now, key->leeway, claims);
}

void sk_jwt_key_set_leeway(sk_jwt_key *key, int64_t seconds)
{
    key->leeway = seconds < 0 ? 0 : seconds;
}

int sk_jwt_mint(const unsigned char *secret, size_t secret_len, uint64_t sub, int is_admin,
                int64_t exp, char *out, size_t outsz)
{
    static const char header[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
    char body[160];
    int blen = snprintf(body, sizeof(body), "{\"sub\":\"%llu\",%s\"exp\":%lld}",
                        (unsigned long long)sub, is_admin ? "\"role\":\"admin\"," : "",
                        (long long)exp);
    /* header (27 bytes -> 36 chars) + body (<= 160 -> 214) + sig (32 -> 43) + dots + NUL */
    if (blen < 0 || outsz < 36 + 214 + 43 + 3)
        return -1;
    size_t n = sk_b64url_encode((const unsigned char *)header, sizeof(header) - 1, out);
    out[n++] = '.';
    n += sk_b64url_encode((const unsigned char *)body, (size_t)blen, out + n);
    unsigned char mac[32];
    hs256(secret, secret_len, out, n, mac);
    out[n++] = '.';
    n += sk_b64url_encode(mac, 32, out + n);
    return (int)n;
}

const char *sk_jwt_strerror(int status)
{
    switch (status) {
    case SK_JWT_OK:
        return "ok";
    case SK_JWT_MALFORMED:
        return "malformed token";
    case SK_JWT_BAD_ALG:
        return "token algorithm is not HS256";
    case SK_JWT_BAD_SIG:
        return "bad token signature";
    case SK_JWT_EXPIRED:
        return "token expired or without exp";
    case SK_JWT_BAD_SUB:
        return "token sub is not a user id";
    case SK_JWT_NOT_YET:
        return "token not valid yet (nbf or iat in the future)";
    }
    return "unknown token error";
}
