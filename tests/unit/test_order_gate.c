/* Unit tests of order_gate's pure part: the arguments of each gate script, held to the
 * KEYS/ARGV contract written at the top of the script in lua/ (read from the embedded
 * text, so a script whose contract changes fails here), the batch bounds, and the
 * decoding of each script's reply into one code per order. No network. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "order_gate.h"
#include "seckill_lua.h"

/* The word after `label` (e.g. "KEYS[2]" or "ARGV[1]") in the script's header comment. */
static void contract_word(const char *script, const char *label, char *out, size_t outsz)
{
    const char *p = strstr(script, label);
    if (!p)
        fail_msg("no %s in the script's contract", label);
    p += strlen(label);
    while (*p == ' ')
        p++;
    size_t n = strcspn(p, " ,\n]");
    assert_true(n > 0 && n < outsz);
    memcpy(out, p, n);
    out[n] = 0;
}

/* "seckill:{e1}:stock" and "...:stock" both end in "stock". */
static const char *suffix(const char *key)
{
    const char *c = strrchr(key, ':');
    return c ? c + 1 : key;
}

static void check_keys(const char *script_name, const order_gate_args *a, int nkeys)
{
    const char *script = seckill_lua_find(script_name);
    assert_non_null(script);
    assert_int_equal(a->nkeys, nkeys);
    for (int i = 0; i < nkeys; i++) {
        char label[24], word[64];
        snprintf(label, sizeof(label), "KEYS[%d]", i + 1);
        contract_word(script, label, word, sizeof(word));
        assert_string_equal(suffix(word), suffix(a->argv[i]));
        assert_memory_equal(a->argv[i], "seckill:{e77}:", 14); /* the event's hash tag */
        assert_int_equal(a->lens[i], strlen(a->argv[i]));
    }
}

static void check_word(const order_gate_args *a, int i, const char *want)
{
    assert_true(i < a->n);
    assert_int_equal(a->lens[i], strlen(want));
    assert_memory_equal(a->argv[i], want, a->lens[i]);
}

static order_gate_item items[ORDER_GATE_ITEMS_MAX + 1];
static const order_gate_item *its[ORDER_GATE_ITEMS_MAX + 1];

static void fill(size_t n, uint64_t event)
{
    for (size_t i = 0; i < n; i++) {
        items[i] = (order_gate_item){NULL, event, 1000 + i, 5000000000000000000ULL + i, 0, 0, 1, 0, 1, 0};
        its[i] = &items[i];
    }
}

static void test_reserve_args(void **state)
{
    (void)state;
    const char *script = seckill_lua_find("reserve");
    char word[64];
    contract_word(script, "ARGV[1]", word, sizeof(word));
    assert_string_equal(word, "now_ms");
    contract_word(script, "ARGV[2k]", word, sizeof(word));
    assert_string_equal(word, "user_id");
    contract_word(script, "ARGV[2k+1]", word, sizeof(word));
    assert_string_equal(word, "order_id");
    fill(3, 77);
    order_gate_args a;
    assert_int_equal(order_gate_args_build(&a, ORDER_GATE_RESERVE, 1795341600123LL, its, 3), 0);
    check_keys("reserve", &a, 5);
    assert_int_equal(a.n, 5 + 1 + 2 * 3);
    check_word(&a, 5, "1795341600123");
    check_word(&a, 6, "1000");
    check_word(&a, 7, "5000000000000000000");
    check_word(&a, 10, "1002");
    check_word(&a, 11, "5000000000000000002");
    /* several units (issue 31): "order_id:q", and a quantity of 1 is the plain id */
    items[0].quantity = 100;
    items[1].quantity = 1;
    assert_int_equal(order_gate_args_build(&a, ORDER_GATE_RESERVE, 1795341600123LL, its, 3), 0);
    check_word(&a, 7, "5000000000000000000:100");
    check_word(&a, 9, "5000000000000000001");
    assert_int_equal(order_gate_args_build(&a, ORDER_GATE_BORROW, 1795341600123LL, its, 3), 0);
    check_word(&a, 4, "5000000000000000000:100");
    assert_int_equal(order_gate_args_build(&a, ORDER_GATE_CANCEL, 0, its, 1), 0);
    check_word(&a, 4, "5000000000000000000"); /* cancel.lua reads q from the pending entry */
}

static void test_cancel_args(void **state)
{
    (void)state;
    const char *script = seckill_lua_find("cancel");
    char word[64];
    contract_word(script, "ARGV[1]", word, sizeof(word));
    assert_string_equal(word, "order_id");
    contract_word(script, "ARGV[2]", word, sizeof(word));
    assert_string_equal(word, "user_id");
    fill(2, 77);
    order_gate_args a;
    assert_int_equal(order_gate_args_build(&a, ORDER_GATE_CANCEL, 0, its, 2), 0);
    check_keys("cancel", &a, 4);
    assert_int_equal(a.n, 4 + 2 * 2);
    check_word(&a, 4, "5000000000000000000");
    check_word(&a, 5, "1000");
    check_word(&a, 6, "5000000000000000001");
    check_word(&a, 7, "1001");
}

static void test_confirm_args(void **state)
{
    (void)state;
    const char *script = seckill_lua_find("confirm");
    char word[64];
    contract_word(script, "ARGV[1]", word, sizeof(word));
    assert_string_equal(word, "order_id");
    fill(3, 77);
    order_gate_args a;
    assert_int_equal(order_gate_args_build(&a, ORDER_GATE_CONFIRM, 0, its, 3), 0);
    check_keys("confirm", &a, 1); /* docs/design.md's form: the pending hash alone */
    assert_int_equal(a.n, 1 + 3);
    check_word(&a, 1, "5000000000000000000");
    check_word(&a, 3, "5000000000000000002");
}

/* Segmented stock (issue 19): the keys of the item's segment, "now_ms:K" for reserve
 * when K > 1, borrow.lua's contract, and one call per segment. */
static void test_segment_args(void **state)
{
    (void)state;
    fill(2, 77);
    for (int i = 0; i < 2; i++) {
        items[i].seg = 2;
        items[i].segs = 3;
    }
    order_gate_args a;
    assert_int_equal(order_gate_args_build(&a, ORDER_GATE_RESERVE, 1795341600123LL, its, 2), 0);
    assert_int_equal(a.nkeys, 5);
    check_word(&a, 0, "seckill:{e77.2}:stock");
    check_word(&a, 3, "seckill:{e77.2}:pending");
    check_word(&a, 4, "seckill:{e77.2}:units");
    check_word(&a, 5, "1795341600123:3");
    const char *script = seckill_lua_find("borrow");
    char word[64];
    contract_word(script, "KEYS[1]", word, sizeof(word));
    assert_string_equal(suffix(word), "stock");
    contract_word(script, "KEYS[2]", word, sizeof(word));
    assert_string_equal(suffix(word), "pending");
    contract_word(script, "ARGV[1]", word, sizeof(word));
    assert_string_equal(word, "now_ms");
    contract_word(script, "ARGV[2k]", word, sizeof(word));
    assert_string_equal(word, "user_id");
    contract_word(script, "ARGV[2k+1]", word, sizeof(word));
    assert_string_equal(word, "order_id");
    assert_int_equal(order_gate_args_build(&a, ORDER_GATE_BORROW, 1795341600123LL, its, 2), 0);
    assert_int_equal(a.nkeys, 2);
    assert_int_equal(a.n, 2 + 1 + 2 * 2);
    check_word(&a, 0, "seckill:{e77.2}:stock");
    check_word(&a, 1, "seckill:{e77.2}:pending");
    check_word(&a, 2, "1795341600123");
    check_word(&a, 3, "1000");
    check_word(&a, 4, "5000000000000000000");
    assert_int_equal(order_gate_args_build(&a, ORDER_GATE_CONFIRM, 0, its, 2), 0);
    check_word(&a, 0, "seckill:{e77.2}:pending");
    /* one call is one segment's */
    items[1].seg = 0;
    assert_int_equal(order_gate_args_build(&a, ORDER_GATE_RESERVE, 1, its, 2), -1);
    /* K = 1: the event's own keys and a plain now_ms, as before segments */
    fill(1, 77);
    assert_int_equal(order_gate_args_build(&a, ORDER_GATE_RESERVE, 5, its, 1), 0);
    check_word(&a, 0, "seckill:{e77}:stock");
    check_word(&a, 5, "5");
}

static void test_bounds(void **state)
{
    (void)state;
    order_gate_args a;
    fill(ORDER_GATE_ITEMS_MAX + 1, 77);
    /* two words per item (126), confirm.lua one (257): each fills the call exactly */
    assert_int_equal(order_gate_batch_max(ORDER_GATE_RESERVE), 126);
    assert_int_equal(order_gate_batch_max(ORDER_GATE_CONFIRM), 257);
    for (int op = 0; op < ORDER_GATE_OPS; op++) {
        size_t max = order_gate_batch_max((order_gate_op)op);
        assert_int_equal(order_gate_args_build(&a, (order_gate_op)op, 1, its, 0), -1);
        assert_int_equal(order_gate_args_build(&a, (order_gate_op)op, 1, its, max), 0);
        assert_true(a.n <= ORDER_REDIS_SCRIPT_MAX_ARGS);
        assert_int_equal(order_gate_args_build(&a, (order_gate_op)op, 1, its, max + 1), -1);
    }
    /* a batch is one event's: an item of another event is refused (not silently sent
     * to the first one's keys) */
    items[2].event_id = 78;
    assert_int_equal(order_gate_args_build(&a, ORDER_GATE_RESERVE, 1, its, 3), -1);
    assert_int_equal(order_gate_args_build(&a, ORDER_GATE_RESERVE, 1, its, 2), 0);
}

/* A reply built by hand, as hiredis would hand it over. */
static redisReply ints[8], *elems[8];

static redisReply array_of(const long long *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ints[i] = (redisReply){.type = REDIS_REPLY_INTEGER, .integer = v[i]};
        elems[i] = &ints[i];
    }
    return (redisReply){.type = REDIS_REPLY_ARRAY, .elements = n, .element = elems};
}

static void test_codes(void **state)
{
    (void)state;
    long long codes[8];
    const long long mixed[4] = {0, 2, 1, 3};
    redisReply arr = array_of(mixed, 4);
    assert_int_equal(order_gate_codes(ORDER_GATE_RESERVE, &arr, 4, codes, NULL), 0);
    assert_memory_equal(codes, mixed, sizeof(mixed));
    /* the wrong count, no reply, an error, an integer where an array is due: every
     * order fails (503), none gets another order's code */
    assert_int_equal(order_gate_codes(ORDER_GATE_RESERVE, &arr, 3, codes, NULL), -1);
    for (int i = 0; i < 3; i++)
        assert_int_equal(codes[i], ORDER_GATE_FAILED);
    assert_int_equal(order_gate_codes(ORDER_GATE_RESERVE, NULL, 4, codes, NULL), -1);
    assert_int_equal(codes[3], ORDER_GATE_FAILED);
    redisReply err = {.type = REDIS_REPLY_ERROR, .str = "NOSCRIPT", .len = 8};
    assert_int_equal(order_gate_codes(ORDER_GATE_RESERVE, &err, 4, codes, NULL), -1);
    redisReply one = {.type = REDIS_REPLY_INTEGER, .integer = 0};
    assert_int_equal(order_gate_codes(ORDER_GATE_RESERVE, &one, 1, codes, NULL), -1);
    /* a duplicate names the held order (issue 31): a bulk string is code 2 and its id;
     * an empty one (a reload that did not know it) or a non-id is code 2 and id 0 */
    order_gate_held held[8];
    arr = array_of(mixed, 4);
    ints[1] = (redisReply){.type = REDIS_REPLY_STRING, .str = "1234567890123", .len = 13};
    ints[3] = (redisReply){.type = REDIS_REPLY_STRING, .str = "", .len = 0};
    assert_int_equal(order_gate_codes(ORDER_GATE_RESERVE, &arr, 4, codes, held), 0);
    assert_int_equal(codes[1], 2);
    assert_int_equal(held[1].order_id, 1234567890123ULL);
    assert_int_equal(codes[3], 2);
    assert_int_equal(held[3].order_id, 0);
    assert_int_equal(held[0].order_id, 0);
    ints[3] = (redisReply){.type = REDIS_REPLY_STRING, .str = "12x", .len = 3};
    assert_int_equal(order_gate_codes(ORDER_GATE_RESERVE, &arr, 4, codes, held), 0);
    assert_int_equal(held[3].order_id, 0);
    /* several units (issue 31): L<held>:<order> 7, S<left> 8, Q<limit> 9; a malformed
     * one is a duplicate with no id, as any other string */
    ints[0] = (redisReply){.type = REDIS_REPLY_STRING, .str = "L3:42", .len = 5};
    ints[1] = (redisReply){.type = REDIS_REPLY_STRING, .str = "S17", .len = 3};
    ints[2] = (redisReply){.type = REDIS_REPLY_STRING, .str = "Q100", .len = 4};
    ints[3] = (redisReply){.type = REDIS_REPLY_STRING, .str = "S1x", .len = 3};
    assert_int_equal(order_gate_codes(ORDER_GATE_RESERVE, &arr, 4, codes, held), 0);
    assert_int_equal(codes[0], ORDER_GATE_LIMIT_REACHED);
    assert_int_equal(held[0].n, 3);
    assert_int_equal(held[0].order_id, 42);
    assert_int_equal(codes[1], ORDER_GATE_FEWER_LEFT);
    assert_int_equal(held[1].n, 17);
    assert_int_equal(codes[2], ORDER_GATE_OVER_LIMIT);
    assert_int_equal(held[2].n, 100);
    assert_int_equal(codes[3], 2);
    assert_int_equal(held[3].order_id, 0);
    ints[0] = (redisReply){.type = REDIS_REPLY_STRING, .str = "L2:", .len = 3};
    assert_int_equal(order_gate_codes(ORDER_GATE_RESERVE, &arr, 4, codes, held), 0);
    assert_int_equal(codes[0], ORDER_GATE_LIMIT_REACHED);
    assert_int_equal(held[0].order_id, 0);
    /* a string is a duplicate only in reserve's answer */
    assert_int_equal(order_gate_codes(ORDER_GATE_BORROW, &arr, 4, codes, held), -1);
    arr = array_of(mixed, 4);
    ints[1].type = REDIS_REPLY_NIL;
    assert_int_equal(order_gate_codes(ORDER_GATE_RESERVE, &arr, 4, codes, NULL), -1);
    assert_int_equal(codes[0], ORDER_GATE_FAILED);

    /* cancel: an integer for one order (docs/design.md's form), an array for several */
    redisReply minus = {.type = REDIS_REPLY_INTEGER, .integer = -1};
    assert_int_equal(order_gate_codes(ORDER_GATE_CANCEL, &minus, 1, codes, NULL), 0);
    assert_int_equal(codes[0], -1);
    const long long c3[3] = {1, -1, 0};
    arr = array_of(c3, 3);
    assert_int_equal(order_gate_codes(ORDER_GATE_CANCEL, &arr, 3, codes, NULL), 0);
    assert_memory_equal(codes, c3, sizeof(c3));
    assert_int_equal(order_gate_codes(ORDER_GATE_CANCEL, &minus, 2, codes, NULL), -1);

    /* confirm: how many were pending; each order is done either way */
    redisReply count = {.type = REDIS_REPLY_INTEGER, .integer = 1};
    assert_int_equal(order_gate_codes(ORDER_GATE_CONFIRM, &count, 3, codes, NULL), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(codes[i], 0);
    assert_int_equal(order_gate_codes(ORDER_GATE_CONFIRM, &err, 3, codes, NULL), -1);
    assert_int_equal(codes[2], ORDER_GATE_FAILED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve_args), cmocka_unit_test(test_cancel_args),
        cmocka_unit_test(test_confirm_args), cmocka_unit_test(test_segment_args), cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
