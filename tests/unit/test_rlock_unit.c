/* Unit tests of librlock's pure parts: script digests, key naming, Redlock validity,
 * jitter bounds, error strings. No network. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "rlock_int.h"
#include "rlock_lua.h"

static void test_sha1_vectors(void **state)
{
    (void)state;
    char out[41];
    rlock_sha1_hex("", 0, out);
    assert_string_equal(out, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    rlock_sha1_hex("abc", 3, out);
    assert_string_equal(out, "a9993e364706816aba3e25717850c26c9cd0d89d");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes: two blocks */
    rlock_sha1_hex(two, strlen(two), out);
    assert_string_equal(out, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    char mil[1000];
    memset(mil, 'a', sizeof(mil));
    rlock_sha1_hex(mil, sizeof(mil), out); /* 1000 x 'a' */
    assert_string_equal(out, "291e9a6c66994949b57ba5e650361e98fc36b1ba");
}

static void test_script_table(void **state)
{
    (void)state;
    for (int i = 0; i < RLOCK_S__COUNT; i++) {
        const char *t = rlock_script_text(i);
        assert_non_null(t);
        assert_true(strncmp(t, "-- rlock", 8) == 0);
        assert_int_equal(strlen(rlock_script_sha(i)), 40);
    }
    /* a lock script goes out with the fence prelude (lua/rlock_fence.lua) before it */
    const char *t = rlock_script_text(RLOCK_S_SIMPLE_LOCK);
    assert_int_equal(strncmp(t, rlock_lua_fence, strlen(rlock_lua_fence)), 0);
    assert_string_equal(t + strlen(rlock_lua_fence), rlock_lua_simple_lock);
    assert_string_equal(rlock_script_text(RLOCK_S_SIMPLE_UNLOCK), rlock_lua_simple_unlock);
    assert_null(rlock_script_text(RLOCK_S__COUNT));
    assert_string_not_equal(rlock_script_sha(0), rlock_script_sha(1));
}

static void test_key_build(void **state)
{
    (void)state;
    char k[128];
    assert_int_equal(rlock_key_build(k, sizeof(k), "stock-load", ""), (int)strlen("rlock:{stock-load}"));
    assert_string_equal(k, "rlock:{stock-load}");
    rlock_key_build(k, sizeof(k), "stock-load", ":fence");
    assert_string_equal(k, "rlock:{stock-load}:fence");
    /* a name with its own hash tag stays in its slot */
    rlock_key_build(k, sizeof(k), "seckill:{e42}:lock", ":fence");
    assert_string_equal(k, "seckill:{e42}:lock:fence");
    assert_int_equal(rlock_key_build(k, sizeof(k), "", ""), -1);
    assert_int_equal(rlock_key_build(k, sizeof(k), "bad{", ""), -1);
    assert_int_equal(rlock_key_build(k, sizeof(k), "bad{}", ""), -1);
    assert_int_equal(rlock_key_build(k, sizeof(k), "bad}", ""), -1);
    assert_int_equal(rlock_key_build(k, sizeof(k), NULL, ""), -1);
    /* the size is reported even when the buffer is short, like snprintf */
    assert_int_equal(rlock_key_build(NULL, 0, "abc", ":queue"), (int)strlen("rlock:{abc}:queue"));
}

static void test_redlock_validity(void **state)
{
    (void)state;
    assert_int_equal(rlock_redlock_validity(10000, 0), 10000 - 102);
    assert_int_equal(rlock_redlock_validity(10000, 500), 10000 - 500 - 102);
    assert_true(rlock_redlock_validity(100, 99) <= 0);
}

static void test_jitter(void **state)
{
    (void)state;
    unsigned seed = 7;
    int64_t lo = INT64_MAX, hi = 0;
    for (int i = 0; i < 10000; i++) {
        int64_t v = rlock_jitter_ms(100, &seed);
        assert_true(v >= 50 && v < 150);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    assert_true(hi - lo > 80); /* it does spread */
    assert_int_equal(rlock_jitter_ms(0, &seed), 1);
    assert_int_equal(rlock_jitter_ms(1, &seed), 1);
}

static void test_random_and_errors(void **state)
{
    (void)state;
    char a[33], b[33];
    assert_int_equal(rlock_random_hex32(a), 0);
    assert_int_equal(rlock_random_hex32(b), 0);
    assert_int_equal(strlen(a), 32);
    assert_string_not_equal(a, b);
    assert_string_equal(rlock_strerror(RLOCK_ERR_NOT_HELD), "not held by this owner");
    assert_string_equal(rlock_strerror(12345), "unknown error");
    assert_true(rlock_err_retriable(RLOCK_ERR_IO));
    assert_true(rlock_err_retriable(RLOCK_ERR_TIMEOUT));
    assert_false(rlock_err_retriable(RLOCK_ERR_NOT_HELD));
    assert_false(rlock_err_retriable(RLOCK_ERR_REDIS));
}

static void test_client_bad_url(void **state)
{
    (void)state;
    char err[256] = "";
    assert_null(rlock_client_new("http://nope", NULL, err, sizeof(err)));
    assert_true(err[0] != '\0');
    /* a refused connection fails in the constructor, not at the first lock */
    err[0] = '\0';
    assert_null(rlock_client_new("redis://127.0.0.1:1", NULL, err, sizeof(err)));
    assert_true(err[0] != '\0');
    rlock_client_free(NULL);
    rlock_free(NULL);
    rlock_sem_free(NULL);
    rlock_latch_free(NULL);
    rlock_redlock_free(NULL);
}

/* Redisson's names (RedissonObject.prefixName / suffixName) and its id's form. */
static void test_redisson_names(void **state)
{
    (void)state;
    char k[128];
    rlock_rs_prefix_name(k, sizeof(k), "redisson_lock__channel", "order:42");
    assert_string_equal(k, "redisson_lock__channel:{order:42}");
    rlock_rs_prefix_name(k, sizeof(k), "redisson_sc", "a{b}c");
    assert_string_equal(k, "redisson_sc:a{b}c");
    rlock_rs_suffix_name(k, sizeof(k), "rw", "u:1:rwlock_timeout");
    assert_string_equal(k, "{rw}:u:1:rwlock_timeout");
    rlock_rs_suffix_name(k, sizeof(k), "x{t}", "rlock_fence");
    assert_string_equal(k, "x{t}:rlock_fence");
    assert_int_equal(rlock_rs_prefix_name(k, sizeof(k), "p", ""), -1);
    char *d = rlock_rs_name_dup(NULL, "n", "f");
    assert_string_equal(d, "{n}:f");
    free(d);
    char u1[37], u2[37];
    assert_int_equal(rlock_uuid4(u1), 0);
    assert_int_equal(rlock_uuid4(u2), 0);
    assert_int_equal(strlen(u1), 36);
    assert_true(u1[8] == '-' && u1[13] == '-' && u1[18] == '-' && u1[23] == '-');
    assert_int_equal(u1[14], '4');
    assert_non_null(strchr("89ab", u1[19]));
    assert_string_not_equal(u1, u2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha1_vectors),   cmocka_unit_test(test_script_table),
        cmocka_unit_test(test_key_build),      cmocka_unit_test(test_redlock_validity),
        cmocka_unit_test(test_jitter),         cmocka_unit_test(test_random_and_errors),
        cmocka_unit_test(test_client_bad_url), cmocka_unit_test(test_redisson_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
