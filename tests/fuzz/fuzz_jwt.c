/* fuzz_jwt: the bearer token check of seckill-order (sk_jwt_verify) and its helpers
 * (base64url, sk_jwt_mint).
 *
 * A fuzzer cannot forge HMAC-SHA256, so feeding raw tokens alone would never get past
 * the signature to the claims parser. Byte 0 therefore picks how the input is used:
 *   0  the rest is the token, verified as received (header and framing checks);
 *   1  the rest is "header.payload"; the harness signs it with the secret and appends
 *      the signature (the claims parser sees whatever base64url the fuzzer wrote);
 *   2  the rest is the payload JSON itself; the harness adds an HS256 header, encodes
 *      and signs (claims parser on arbitrary JSON);
 *   3  the rest is a header JSON with a fixed valid payload (alg checks);
 *   4+ mint/verify and base64url round trips from the bytes.
 * Besides memory errors, the checks are the header's contract: a known status, and on
 * SK_JWT_OK a sub in [1, INT64_MAX] and an exp after now. */
#include "fuzz_util.h"
#include "sk_jwt.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

static const unsigned char SECRET[] = "fuzz-secret-0123456789";
#define SECRET_LEN (sizeof(SECRET) - 1)
static const int64_t NOW = 1800000000; /* 2027-01-15: a fixed clock keeps runs repeatable */

static void check_verify(const char *tok, size_t len)
{
    /* An exact-size heap copy: sk_jwt_verify must never read tok[len]. */
    char *copy = malloc(len ? len : 1);
    if (!copy)
        abort();
    memcpy(copy, tok, len);
    sk_jwt_claims c;
    int rc = sk_jwt_verify(copy, len, SECRET, SECRET_LEN, NOW, &c);
    FUZZ_CHECK(rc <= 0 && rc >= SK_JWT_STATUS_LAST);
    FUZZ_CHECK(sk_jwt_strerror(rc) != NULL);
    if (rc == SK_JWT_OK) {
        FUZZ_CHECK(c.sub >= 1 && c.sub <= (uint64_t)INT64_MAX);
        FUZZ_CHECK(c.exp > NOW);
        FUZZ_CHECK(c.is_admin == 0 || c.is_admin == 1);
        FUZZ_CHECK(len <= SK_JWT_MAX_LEN);
    }
    free(copy);
}

/* Appends ".<base64url(HMAC(secret, signing_input))>" to buf[0..n); buf has room. */
static size_t sign(char *buf, size_t n)
{
    unsigned char mac[32];
    unsigned int maclen = sizeof(mac);
    HMAC(EVP_sha256(), SECRET, (int)SECRET_LEN, (const unsigned char *)buf, n, mac, &maclen);
    buf[n++] = '.';
    return n + sk_b64url_encode(mac, 32, buf + n);
}

static void check_b64_roundtrip(const uint8_t *p, size_t n)
{
    char *enc = malloc(n / 3 * 4 + 4 + 1);
    unsigned char *dec = malloc(n ? n : 1);
    if (!enc || !dec)
        abort();
    size_t elen = sk_b64url_encode(p, n, enc);
    FUZZ_CHECK(elen == n / 3 * 4 + (n % 3 ? n % 3 + 1 : 0));
    FUZZ_CHECK(enc[elen] == '\0');
    long dlen = sk_b64url_decode(enc, elen, dec, n); /* exactly the room it needs */
    FUZZ_CHECK(dlen == (long)n);
    FUZZ_CHECK(n == 0 || memcmp(dec, p, n) == 0);
    if (n > 0) /* one byte short must be refused, not overflowed */
        FUZZ_CHECK(sk_b64url_decode(enc, elen, dec, n - 1) == -1);
    /* One spelling per value: whatever decodes re-encodes to exactly the same text. */
    unsigned char *raw = malloc(n ? n : 1);
    char *again = malloc(n / 3 * 4 + 4 + 1);
    if (!raw || !again)
        abort();
    long rl = sk_b64url_decode((const char *)p, n, raw, n ? n : 1);
    if (rl >= 0) {
        size_t al = sk_b64url_encode(raw, (size_t)rl, again);
        FUZZ_CHECK(al == n && memcmp(again, p, n) == 0);
    }
    free(raw);
    free(again);
    free(enc);
    free(dec);
}

static void check_mint(const uint8_t *p, size_t n)
{
    uint64_t sub = 0;
    int64_t exp = 0;
    memcpy(&sub, p, n < 8 ? n : 8);
    if (n > 8)
        memcpy(&exp, p + 8, n - 8 < 8 ? n - 8 : 8);
    int admin = n > 16 ? p[16] & 1 : 0;
    char tok[512];
    int len = sk_jwt_mint(SECRET, SECRET_LEN, sub, admin, exp, tok, sizeof(tok));
    FUZZ_CHECK(len > 0 && (size_t)len < sizeof(tok) && tok[len] == '\0');
    sk_jwt_claims c;
    int rc = sk_jwt_verify(tok, (size_t)len, SECRET, SECRET_LEN, NOW, &c);
    if (exp <= NOW) {
        FUZZ_CHECK(rc == SK_JWT_EXPIRED);
    } else if (sub == 0 || sub > (uint64_t)INT64_MAX) {
        FUZZ_CHECK(rc == SK_JWT_BAD_SUB);
    } else {
        FUZZ_CHECK(rc == SK_JWT_OK);
        FUZZ_CHECK(c.sub == sub && c.exp == exp && c.is_admin == admin);
    }
    /* The same token under another secret must fail on the signature. */
    static const unsigned char other[] = "fuzz-secret-0123456788";
    FUZZ_CHECK(sk_jwt_verify(tok, (size_t)len, other, sizeof(other) - 1, NOW, &c) ==
               SK_JWT_BAD_SIG);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    /* Room for the input as text, its base64url form, a header and a signature. */
    size_t cap = n / 3 * 4 + 4 + 128 + 64;
    char *buf = malloc(cap);
    if (!buf)
        abort();
    size_t len = 0;
    static const char hs256_hdr[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
    static const char payload[] = "{\"sub\":\"42\",\"exp\":1900000000}";
    switch (data[0]) {
    case 0:
        check_verify((const char *)p, n);
        break;
    case 1:
        memcpy(buf, p, n);
        len = sign(buf, n);
        check_verify(buf, len);
        break;
    case 2:
        len = sk_b64url_encode((const unsigned char *)hs256_hdr, sizeof(hs256_hdr) - 1, buf);
        buf[len++] = '.';
        len += sk_b64url_encode(p, n, buf + len);
        len = sign(buf, len);
        check_verify(buf, len);
        break;
    case 3:
        len = sk_b64url_encode(p, n, buf);
        buf[len++] = '.';
        len += sk_b64url_encode((const unsigned char *)payload, sizeof(payload) - 1, buf + len);
        len = sign(buf, len);
        check_verify(buf, len);
        break;
    default:
        check_mint(p, n);
        check_b64_roundtrip(p, n);
        break;
    }
    free(buf);
    return 0;
}
