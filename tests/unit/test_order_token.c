/* Unit tests of the tokens seckill-order accepts: `seckill-order token` mints what the
 * service verifies (sk_jwt with jwt.secret), and the checks a request goes through:
 * good, expired, bad signature, wrong algorithm, alg none, missing sub. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "sk_jwt.h"

#define SECRET "unit-test-secret"

static int verify(const char *tok, int64_t now, sk_jwt_claims *c)
{
    return sk_jwt_verify(tok, strlen(tok), (const unsigned char *)SECRET, strlen(SECRET), now, c);
}

/* Builds header.payload.signature by hand, signed with HS256 over SECRET (or unsigned). */
static void forge(const char *header, const char *payload, int sign, char *out, size_t outsz)
{
    /* Sized so that header.payload. plus a 43-character signature always fits the
     * callers' 1024-byte token buffers (and the compiler can see it does). */
    char h[384], p[384];
    assert_true(strlen(header) < 280 && strlen(payload) < 280);
    h[sk_b64url_encode((const unsigned char *)header, strlen(header), h)] = '\0';
    p[sk_b64url_encode((const unsigned char *)payload, strlen(payload), p)] = '\0';
    int n = snprintf(out, outsz, "%s.%s.", h, p);
    assert_true(n > 0 && (size_t)n + 44 <= outsz);
    if (sign) {
        unsigned char mac[32];
        unsigned int len = 0;
        HMAC(EVP_sha256(), SECRET, (int)strlen(SECRET), (const unsigned char *)out,
             (size_t)n - 1, mac, &len);
        out[n + (int)sk_b64url_encode(mac, len, out + n)] = '\0';
    }
}

static void test_checks(void **state)
{
    int64_t now = (int64_t)time(NULL);
    char tok[1024], payload[256];
    sk_jwt_claims c;
    /* good */
    assert_true(sk_jwt_mint((const unsigned char *)SECRET, strlen(SECRET), 77, 0, now + 60, tok, sizeof(tok)) > 0);
    assert_int_equal(verify(tok, now, &c), SK_JWT_OK);
    assert_int_equal(c.sub, 77);
    assert_int_equal(c.is_admin, 0);
    /* expired */
    assert_int_equal(verify(tok, now + 61, &c), SK_JWT_EXPIRED);
    /* bad signature: one character of the signature changed */
    size_t len = strlen(tok);
    tok[len - 2] = tok[len - 2] == 'A' ? 'B' : 'A';
    assert_int_equal(verify(tok, now, &c), SK_JWT_BAD_SIG);
    /* another secret */
    sk_jwt_mint((const unsigned char *)"other", 5, 77, 0, now + 60, tok, sizeof(tok));
    assert_int_equal(verify(tok, now, &c), SK_JWT_BAD_SIG);
    snprintf(payload, sizeof(payload), "{\"sub\":\"77\",\"exp\":%lld}", (long long)now + 60);
    /* wrong algorithm, even with a valid HS256 MAC */
    forge("{\"alg\":\"RS256\",\"typ\":\"JWT\"}", payload, 1, tok, sizeof(tok));
    assert_int_equal(verify(tok, now, &c), SK_JWT_BAD_ALG);
    forge("{\"alg\":\"HS512\",\"typ\":\"JWT\"}", payload, 1, tok, sizeof(tok));
    assert_int_equal(verify(tok, now, &c), SK_JWT_BAD_ALG);
    /* alg none, unsigned */
    forge("{\"alg\":\"none\",\"typ\":\"JWT\"}", payload, 0, tok, sizeof(tok));
    assert_int_equal(verify(tok, now, &c), SK_JWT_BAD_ALG);
    /* a forged HS256 token is accepted only when its claims are complete */
    forge("{\"alg\":\"HS256\",\"typ\":\"JWT\"}", payload, 1, tok, sizeof(tok));
    assert_int_equal(verify(tok, now, &c), SK_JWT_OK);
    snprintf(payload, sizeof(payload), "{\"exp\":%lld}", (long long)now + 60);
    forge("{\"alg\":\"HS256\",\"typ\":\"JWT\"}", payload, 1, tok, sizeof(tok));
    assert_int_equal(verify(tok, now, &c), SK_JWT_BAD_SUB);
    assert_int_not_equal(verify("a.b", now, &c), SK_JWT_OK);
    assert_int_not_equal(verify("", now, &c), SK_JWT_OK);
}

static void test_token_subcommand(void **state)
{
    const char *bin = getenv("SECKILL_BIN_DIR");
    char cmd[512];
    snprintf(cmd, sizeof(cmd),
             "env -u SECKILL_JWT_SECRET SECKILL_JWT_SECRET=%s %s/seckill-order token --sub 5 --admin "
             "--ttl 120 --count 3",
             SECRET, bin ? bin : "./bin");
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[2048];
    int64_t now = (int64_t)time(NULL);
    uint64_t want = 5;
    while (fgets(line, sizeof(line), p)) {
        line[strcspn(line, "\n")] = '\0';
        sk_jwt_claims c;
        assert_int_equal(verify(line, now, &c), SK_JWT_OK);
        assert_int_equal(c.sub, want);
        assert_int_equal(c.is_admin, 1);
        assert_true(c.exp >= now + 119 && c.exp <= now + 121);
        want++;
    }
    assert_int_equal(pclose(p), 0);
    assert_int_equal(want, 8);
    /* no secret configured: exit 2 */
    snprintf(cmd, sizeof(cmd), "env -u SECKILL_JWT_SECRET %s/seckill-order token --sub 5 >/dev/null 2>&1",
             bin ? bin : "./bin");
    int st = system(cmd);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    snprintf(cmd, sizeof(cmd), "SECKILL_JWT_SECRET=x %s/seckill-order token --sub 0 >/dev/null 2>&1",
             bin ? bin : "./bin");
    st = system(cmd);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checks),
        cmocka_unit_test(test_token_subcommand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
