/* Unit test of `seckill-order token`: it mints what the service verifies (sk_jwt with
 * jwt.secret) and refuses to run without a secret or with a bad user id. The checks a
 * request's token goes through (good, expired, bad signature, wrong algorithm, alg none,
 * missing sub) are sk_jwt's and are tested once, in test_sk_jwt.c. */
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

#include "sk_jwt.h"

#define SECRET "unit-test-secret-0123456789abcdef" /* 32 bytes or more: HS256 */

static int verify(const char *tok, int64_t now, sk_jwt_claims *c)
{
    return sk_jwt_verify(tok, strlen(tok), (const unsigned char *)SECRET, strlen(SECRET), now, c);
}

static void test_token_subcommand(void **state)
{
    (void)state;
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
    snprintf(cmd, sizeof(cmd), "SECKILL_JWT_SECRET=" SECRET " %s/seckill-order token --sub 0 >/dev/null 2>&1",
             bin ? bin : "./bin");
    st = system(cmd);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_subcommand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
