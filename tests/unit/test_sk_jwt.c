/* Unit tests of common/sk_jwt: HS256 tokens minted and verified, and every refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>

#include "sk_jwt.h"

static const unsigned char secret[] = "test-secret-0123456789";
#define SECRET_LEN (sizeof(secret) - 1)
#define NOW 1795000000LL

/* One key for the whole run, as a seckill-order worker keeps one: every check below also
 * proves the key resets between tokens (a failed verify leaves nothing behind). */
static sk_jwt_key *run_key;

/* Verifies with both entry points, which must agree on the status and on the claims. */
static int verify(const char *tok, sk_jwt_claims *c)
{
    sk_jwt_claims kc;
    int rc = sk_jwt_verify(tok, strlen(tok), secret, SECRET_LEN, NOW, c);
    int krc = sk_jwt_key_verify(run_key, tok, strlen(tok), NOW, &kc);
    assert_int_equal(krc, rc);
    if (rc == SK_JWT_OK) {
        assert_true(kc.sub == c->sub);
        assert_int_equal(kc.is_admin, c->is_admin);
        assert_true(kc.exp == c->exp);
    }
    return rc;
}

static int key_setup(void **state)
{
    (void)state;
    run_key = sk_jwt_key_new(secret, SECRET_LEN);
    return run_key ? 0 : -1;
}

static int key_teardown(void **state)
{
    (void)state;
    sk_jwt_key_free(run_key);
    return 0;
}

/* Builds header.body.signature by hand, signed with `key` (NULL: an empty signature). */
static void forge(const char *header, const char *body, const unsigned char *key, char *out)
{
    size_t n = sk_b64url_encode((const unsigned char *)header, strlen(header), out);
    out[n++] = '.';
    n += sk_b64url_encode((const unsigned char *)body, strlen(body), out + n);
    out[n++] = '.';
    out[n] = '\0';
    if (key) {
        unsigned char mac[32];
        unsigned int maclen = 32;
        HMAC(EVP_sha256(), key, (int)SECRET_LEN, (unsigned char *)out, n - 1, mac, &maclen);
        sk_b64url_encode(mac, 32, out + n);
    }
}

static void test_round_trip(void **state)
{
    (void)state;
    char tok[512];
    sk_jwt_claims c;
    assert_true(sk_jwt_mint(secret, SECRET_LEN, 424242, 0, NOW + 60, tok, sizeof(tok)) > 0);
    assert_int_equal(verify(tok, &c), SK_JWT_OK);
    assert_true(c.sub == 424242);
    assert_false(c.is_admin);
    assert_true(c.exp == NOW + 60);
    assert_true(sk_jwt_mint(secret, SECRET_LEN, 7, 1, NOW + 60, tok, sizeof(tok)) > 0);
    assert_int_equal(verify(tok, &c), SK_JWT_OK);
    assert_true(c.is_admin);
    assert_int_equal(sk_jwt_mint(secret, SECRET_LEN, 7, 1, NOW + 60, tok, 20), -1);
}

static void test_expired(void **state)
{
    (void)state;
    char tok[512];
    sk_jwt_claims c;
    sk_jwt_mint(secret, SECRET_LEN, 1, 0, NOW, tok, sizeof(tok)); /* exp == now: expired */
    assert_int_equal(verify(tok, &c), SK_JWT_EXPIRED);
    forge("{\"alg\":\"HS256\"}", "{\"sub\":\"1\"}", secret, tok); /* no exp */
    assert_int_equal(verify(tok, &c), SK_JWT_EXPIRED);
}

static void test_bad_signature(void **state)
{
    (void)state;
    char tok[512];
    sk_jwt_claims c;
    sk_jwt_mint((const unsigned char *)"another-secret-xxxxxxx", SECRET_LEN, 1, 0, NOW + 60, tok,
                sizeof(tok));
    assert_int_equal(verify(tok, &c), SK_JWT_BAD_SIG);
    /* A body changed after signing (user 1 -> admin) must fail. */
    char good[512], evil[512];
    sk_jwt_mint(secret, SECRET_LEN, 1, 0, NOW + 60, good, sizeof(good));
    forge("{\"alg\":\"HS256\",\"typ\":\"JWT\"}", "{\"sub\":\"1\",\"role\":\"admin\",\"exp\":1795000060}",
          NULL, evil);
    strcat(evil, strrchr(good, '.') + 1);
    assert_int_equal(verify(evil, &c), SK_JWT_BAD_SIG);
}

static void test_wrong_algorithm(void **state)
{
    (void)state;
    char tok[512];
    sk_jwt_claims c;
    forge("{\"alg\":\"none\"}", "{\"sub\":\"1\",\"exp\":1795000060}", NULL, tok);
    assert_int_equal(verify(tok, &c), SK_JWT_BAD_ALG);
    forge("{\"alg\":\"HS512\"}", "{\"sub\":\"1\",\"exp\":1795000060}", secret, tok);
    assert_int_equal(verify(tok, &c), SK_JWT_BAD_ALG);
    forge("{\"alg\":\"RS256\"}", "{\"sub\":\"1\",\"exp\":1795000060}", secret, tok);
    assert_int_equal(verify(tok, &c), SK_JWT_BAD_ALG);
    forge("{\"typ\":\"JWT\"}", "{\"sub\":\"1\",\"exp\":1795000060}", secret, tok);
    assert_int_equal(verify(tok, &c), SK_JWT_BAD_ALG);
}

static void test_malformed(void **state)
{
    (void)state;
    sk_jwt_claims c;
    const char *bad[] = {"", "abc", "a.b", "a.b.c.d", "!!!.e30.AAAA", "e30", ".."};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_true(verify(bad[i], &c) < 0);
    char tok[512];
    forge("[1,2]", "{}", secret, tok); /* header not an object */
    assert_int_equal(verify(tok, &c), SK_JWT_MALFORMED);
    char big[SK_JWT_MAX_LEN + 10];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(verify(big, &c), SK_JWT_MALFORMED);
}

static void test_bad_sub(void **state)
{
    (void)state;
    char tok[512];
    sk_jwt_claims c;
    const char *bodies[] = {
        "{\"exp\":1795000060}",                               /* missing */
        "{\"sub\":\"12a\",\"exp\":1795000060}",               /* not decimal */
        "{\"sub\":\"0\",\"exp\":1795000060}",                 /* zero */
        "{\"sub\":\"9223372036854775808\",\"exp\":1795000060}", /* over 63 bits */
        "{\"sub\":\"\",\"exp\":1795000060}",                  /* empty */
        "{\"sub\":-5,\"exp\":1795000060}",                    /* negative */
        /* leading zero: refused since the one id rule (sk_id.h); sk_jwt_mint prints %llu,
         * so no token it ever minted carries one */
        "{\"sub\":\"007\",\"exp\":1795000060}",
    };
    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        forge("{\"alg\":\"HS256\"}", bodies[i], secret, tok);
        assert_int_equal(verify(tok, &c), SK_JWT_BAD_SUB);
    }
    forge("{\"alg\":\"HS256\"}", "{\"sub\":9223372036854775807,\"exp\":1795000060}", secret, tok);
    assert_int_equal(verify(tok, &c), SK_JWT_OK);
    assert_true(c.sub == 9223372036854775807ULL);
}

/* The header fast path (the exact bytes sk_jwt_mint writes skip the JSON parse) must not
 * let through what the parse would refuse: the same claims under a header that differs
 * by one space, or that names another alg, behave as before. */
static void test_header_forms(void **state)
{
    (void)state;
    char tok[512];
    sk_jwt_claims c;
    forge("{\"alg\":\"HS256\",\"typ\":\"JWT\"}", "{\"sub\":\"5\",\"exp\":1795000060}", secret, tok);
    char minted[512];
    sk_jwt_mint(secret, SECRET_LEN, 5, 0, 1795000060, minted, sizeof(minted));
    assert_memory_equal(tok, minted, (size_t)(strchr(tok, '.') - tok)); /* the fast form */
    assert_int_equal(verify(tok, &c), SK_JWT_OK);
    forge("{\"alg\": \"HS256\",\"typ\":\"JWT\"}", "{\"sub\":\"5\",\"exp\":1795000060}", secret, tok);
    assert_int_equal(verify(tok, &c), SK_JWT_OK);
    assert_true(c.sub == 5);
    forge("{\"alg\":\"none\",\"typ\":\"JWT\"}", "{\"sub\":\"5\",\"exp\":1795000060}", NULL, tok);
    assert_int_equal(verify(tok, &c), SK_JWT_BAD_ALG);
}

/* A key made from an empty secret signs as HMAC() with an empty key does. */
static void test_key_empty_secret(void **state)
{
    (void)state;
    char tok[512];
    sk_jwt_claims c;
    sk_jwt_key *k = sk_jwt_key_new((const unsigned char *)"", 0);
    assert_non_null(k);
    assert_true(sk_jwt_mint((const unsigned char *)"", 0, 9, 0, NOW + 60, tok, sizeof(tok)) > 0);
    assert_int_equal(sk_jwt_key_verify(k, tok, strlen(tok), NOW, &c), SK_JWT_OK);
    assert_true(c.sub == 9);
    assert_int_equal(sk_jwt_key_verify(run_key, tok, strlen(tok), NOW, &c), SK_JWT_BAD_SIG);
    sk_jwt_key_free(k);
    sk_jwt_key_free(NULL); /* a no-op, like free() */
}

/* The prepared key computes HMAC-SHA256 itself (the padded key's SHA-256 states): for
 * secrets shorter than, equal to and longer than SHA-256's 64-byte block (a longer one
 * is hashed first, RFC 2104), a token signed by HMAC() verifies, and the same secret
 * with its last byte changed does not; tokens of one to several blocks. */
static void test_key_secret_lengths(void **state)
{
    (void)state;
    static const size_t lens[] = {1, 31, 32, 55, 63, 64, 65, 127, 128, 200};
    unsigned char sec[200];
    for (size_t i = 0; i < sizeof(sec); i++)
        sec[i] = (unsigned char)(i * 37 + 11);
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        size_t len = lens[i];
        char tok[512];
        sk_jwt_claims c;
        sk_jwt_key *k = sk_jwt_key_new(sec, len);
        assert_non_null(k);
        for (int admin = 0; admin <= 1; admin++) {
            uint64_t sub = admin ? UINT64_C(9223372036854775807) : 7;
            assert_true(sk_jwt_mint(sec, len, sub, admin, NOW + 60, tok, sizeof(tok)) > 0);
            if (sk_jwt_key_verify(k, tok, strlen(tok), NOW, &c) != SK_JWT_OK || c.sub != sub ||
                c.is_admin != admin)
                fail_msg("secret of %zu bytes: a minted token does not verify", len);
        }
        sec[len - 1] ^= 1;
        sk_jwt_key *other = sk_jwt_key_new(sec, len);
        sec[len - 1] ^= 1;
        assert_non_null(other);
        if (sk_jwt_key_verify(other, tok, strlen(tok), NOW, &c) != SK_JWT_BAD_SIG)
            fail_msg("secret of %zu bytes: another secret verifies", len);
        sk_jwt_key_free(other);
        sk_jwt_key_free(k);
    }
}

/* nbf and iat in the future are refused beyond the leeway (default 60 s); at or within
 * it they pass; a non-integer is malformed. The key's leeway is configurable. */
static void test_not_yet(void **state)
{
    (void)state;
    char tok[512], body[160];
    sk_jwt_claims c;
    const char *claims[] = {"nbf", "iat"};
    for (int i = 0; i < 2; i++) {
        snprintf(body, sizeof(body), "{\"sub\":\"5\",\"exp\":%lld,\"%s\":%lld}", NOW + 3600,
                 claims[i], NOW + 3000);
        forge("{\"alg\":\"HS256\"}", body, secret, tok);
        assert_int_equal(verify(tok, &c), SK_JWT_NOT_YET);
        snprintf(body, sizeof(body), "{\"sub\":\"5\",\"exp\":%lld,\"%s\":%lld}", NOW + 3600,
                 claims[i], NOW + SK_JWT_DEFAULT_LEEWAY_S + 1);
        forge("{\"alg\":\"HS256\"}", body, secret, tok);
        assert_int_equal(verify(tok, &c), SK_JWT_NOT_YET);
        snprintf(body, sizeof(body), "{\"sub\":\"5\",\"exp\":%lld,\"%s\":%lld}", NOW + 3600,
                 claims[i], NOW + SK_JWT_DEFAULT_LEEWAY_S);
        forge("{\"alg\":\"HS256\"}", body, secret, tok);
        assert_int_equal(verify(tok, &c), SK_JWT_OK);
        /* A key with no leeway refuses the same token; one second more passes it again. */
        sk_jwt_key_set_leeway(run_key, 0);
        assert_int_equal(sk_jwt_key_verify(run_key, tok, strlen(tok), NOW, &c), SK_JWT_NOT_YET);
        assert_int_equal(sk_jwt_key_verify(run_key, tok, strlen(tok), NOW + SK_JWT_DEFAULT_LEEWAY_S, &c),
                         SK_JWT_OK);
        sk_jwt_key_set_leeway(run_key, SK_JWT_DEFAULT_LEEWAY_S);
        snprintf(body, sizeof(body), "{\"sub\":\"5\",\"exp\":%lld,\"%s\":%lld}", NOW + 3600,
                 claims[i], NOW - 100);
        forge("{\"alg\":\"HS256\"}", body, secret, tok);
        assert_int_equal(verify(tok, &c), SK_JWT_OK);
        snprintf(body, sizeof(body), "{\"sub\":\"5\",\"exp\":%lld,\"%s\":\"%lld\"}", NOW + 3600,
                 claims[i], NOW - 100);
        forge("{\"alg\":\"HS256\"}", body, secret, tok);
        assert_int_equal(verify(tok, &c), SK_JWT_NOT_YET);
    }
}

/* One spelling per token: flipping the unused low bits of the signature's last
 * character (43 chars = 32 bytes + 2 spare bits) gives a different string that decodes
 * to the same bytes; it must be refused. */
static void test_b64url_canonical(void **state)
{
    (void)state;
    char tok[512];
    sk_jwt_claims c;
    assert_true(sk_jwt_mint(secret, SECRET_LEN, 5, 0, NOW + 60, tok, sizeof(tok)) > 0);
    assert_int_equal(verify(tok, &c), SK_JWT_OK);
    size_t n = strlen(tok);
    static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    int v = (int)(strchr(alpha, tok[n - 1]) - alpha);
    for (int low = 1; low < 4; low++) {
        tok[n - 1] = alpha[(v & ~3) | low];
        assert_int_equal(verify(tok, &c), SK_JWT_BAD_SIG);
    }
    tok[n - 1] = alpha[v];
    assert_int_equal(verify(tok, &c), SK_JWT_OK);
    unsigned char out[8];
    assert_int_equal(sk_b64url_decode("QQ", 2, out, sizeof(out)), 1);  /* "A" */
    assert_int_equal(sk_b64url_decode("QR", 2, out, sizeof(out)), -1); /* 4 spare bits set */
    assert_int_equal(sk_b64url_decode("QUI", 3, out, sizeof(out)), 2); /* "AB" */
    assert_int_equal(sk_b64url_decode("QUJ", 3, out, sizeof(out)), -1); /* 2 spare bits set */
}

static void test_b64url(void **state)
{
    (void)state;
    unsigned char in[64], back[64];
    char enc[128];
    for (size_t len = 0; len < 40; len++) {
        for (size_t i = 0; i < len; i++)
            in[i] = (unsigned char)(i * 37 + len);
        size_t n = sk_b64url_encode(in, len, enc);
        assert_null(strchr(enc, '='));
        assert_int_equal(sk_b64url_decode(enc, n, back, sizeof(back)), (long)len);
        assert_memory_equal(in, back, len);
    }
    assert_int_equal(sk_b64url_decode("abcde", 5, back, sizeof(back)), -1);
    assert_int_equal(sk_b64url_decode("ab+/", 4, back, sizeof(back)), -1);
    /* every byte value: only the 64 of the alphabet decode, each to its own value */
    static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (int c = 0; c < 256; c++) {
        char q[4] = {'A', 'A', 'A', (char)c};
        const char *at = c ? memchr(alpha, c, 64) : NULL;
        long rc = sk_b64url_decode(q, 4, back, sizeof(back));
        if (!at) {
            if (rc != -1)
                fail_msg("byte %d decoded", c);
            continue;
        }
        assert_int_equal(rc, 3);
        assert_int_equal(back[2], (unsigned char)(at - alpha));
    }
    /* the same in a 3-character tail (its last 2 bits must be zero) and first in a
     * 2-character one */
    for (int c = 0; c < 256; c++) {
        char q[3] = {'A', 'A', (char)c}, r[2] = {(char)c, 'A'};
        const char *at = c ? memchr(alpha, c, 64) : NULL;
        long v = at ? (long)(at - alpha) : -1;
        long rc = sk_b64url_decode(q, 3, back, sizeof(back));
        if (v < 0 || (v & 3)) {
            if (rc != -1)
                fail_msg("tail byte %d decoded", c);
        } else {
            assert_int_equal(rc, 2);
            assert_int_equal(back[1], (unsigned char)(v >> 2));
        }
        rc = sk_b64url_decode(r, 2, back, sizeof(back));
        if (v < 0) {
            if (rc != -1)
                fail_msg("first tail byte %d decoded", c);
        } else {
            assert_int_equal(rc, 1);
            assert_int_equal(back[0], (unsigned char)(v << 2));
        }
    }
}

/* The claims as sk_jwt_mint spells them are read without the JSON parser; each case here
 * is verified in that spelling and in one the fast path must leave to jansson (a space
 * after every colon), and both must give the same status and claims. The cases cover
 * the edges of the fast reader: leading zeros, 19 and 20 digits, 2^63, zero, a past exp,
 * the admin role, another role, another key, and trailing bytes. */
static void test_claims_fast_path(void **state)
{
    (void)state;
    static const struct {
        const char *sub, *role;
        const char *exp;
        const char *extra; /* appended inside the object, or NULL */
    } cases[] = {
        {"\"42\"", NULL, "1795000600", NULL},
        {"\"42\"", "admin", "1795000600", NULL},
        {"\"42\"", "buyer", "1795000600", NULL},
        {"\"007\"", NULL, "1795000600", NULL},
        {"\"0\"", NULL, "1795000600", NULL},
        {"\"9223372036854775807\"", NULL, "1795000600", NULL},
        {"\"9223372036854775808\"", NULL, "1795000600", NULL},
        {"\"99999999999999999999\"", NULL, "1795000600", NULL},
        {"\"42\"", NULL, "1794999999", NULL},
        {"\"42\"", NULL, "0", NULL},
        {"\"42\"", NULL, "1795000000", NULL},
        {"\"42\"", NULL, "999999999999999999", NULL},
        {"\"42\"", NULL, "1795000600", ",\"nbf\":1796000000"},
        {"\"42\"", "admin", "1795000600", ",\"x\":1"},
        {"42", NULL, "1795000600", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char canon[256], spaced[256], t1[600], t2[600];
        const char *r = cases[i].role, *x = cases[i].extra ? cases[i].extra : "";
        if (r) {
            snprintf(canon, sizeof(canon), "{\"sub\":%s,\"role\":\"%s\",\"exp\":%s%s}", cases[i].sub, r,
                     cases[i].exp, x);
            snprintf(spaced, sizeof(spaced), "{\"sub\": %s,\"role\": \"%s\",\"exp\": %s%s}",
                     cases[i].sub, r, cases[i].exp, x);
        } else {
            snprintf(canon, sizeof(canon), "{\"sub\":%s,\"exp\":%s%s}", cases[i].sub, cases[i].exp, x);
            snprintf(spaced, sizeof(spaced), "{\"sub\": %s,\"exp\": %s%s}", cases[i].sub, cases[i].exp, x);
        }
        forge("{\"alg\":\"HS256\",\"typ\":\"JWT\"}", canon, secret, t1);
        forge("{\"alg\":\"HS256\",\"typ\":\"JWT\"}", spaced, secret, t2);
        sk_jwt_claims c1, c2;
        int rc1 = verify(t1, &c1), rc2 = verify(t2, &c2);
        if (rc1 != rc2)
            fail_msg("case %zu (%s): %d fast, %d parsed", i, canon, rc1, rc2);
        if (rc1 == SK_JWT_OK) {
            assert_true(c1.sub == c2.sub);
            assert_true(c1.exp == c2.exp);
            assert_int_equal(c1.is_admin, c2.is_admin);
        }
    }
    /* What sk_jwt_mint writes is read the same way. */
    char tok[512];
    sk_jwt_claims c;
    assert_true(sk_jwt_mint(secret, SECRET_LEN, 77, 1, NOW + 60, tok, sizeof(tok)) > 0);
    assert_int_equal(verify(tok, &c), SK_JWT_OK);
    assert_true(c.sub == 77 && c.is_admin == 1 && c.exp == NOW + 60);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),     cmocka_unit_test(test_expired),
        cmocka_unit_test(test_bad_signature),  cmocka_unit_test(test_wrong_algorithm),
        cmocka_unit_test(test_malformed),      cmocka_unit_test(test_bad_sub),
        cmocka_unit_test(test_header_forms),   cmocka_unit_test(test_key_empty_secret),
        cmocka_unit_test(test_b64url),         cmocka_unit_test(test_not_yet),
        cmocka_unit_test(test_b64url_canonical), cmocka_unit_test(test_claims_fast_path),
        cmocka_unit_test(test_key_secret_lengths),
    };
    return cmocka_run_group_tests(tests, key_setup, key_teardown);
}
