/* test_order_cluster_keys: every key one of seckill-order's scripts touches lands in one
 * cluster slot (issue 8), so no EVALSHA of the front is ever refused as CROSSSLOT:
 * order_msg's key builders against rcluster's slot function and its key finder, which
 * is what the routing uses before it sends. Pure: no network. */
#include "order_msg.h"
#include "rcluster.h"

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static const uint64_t ids[] = {1, 42, 392089604561305601ULL, UINT64_MAX};

static int slot_of(const char *key)
{
    return rcl_keyslot(key, strlen(key));
}

/* Every kind of event key shares the slot of its tag "e<ID>". */
static void test_event_keys_one_slot(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        char tag[32], key[ORDER_KEY_MAX];
        snprintf(tag, sizeof(tag), "e%" PRIu64, ids[i]);
        int want = slot_of(tag);
        for (int k = 0; k < ORDER_KEY_COUNT; k++) {
            order_key(ids[i], (order_key_kind)k, key, sizeof(key));
            assert_int_equal(slot_of(key), want);
        }
        /* the loader's and the reconciler's per-event lock (librlock keeps a caller's tag) */
        snprintf(key, sizeof(key), "seckill:{e%" PRIu64 "}:lock", ids[i]);
        assert_int_equal(slot_of(key), want);
        order_key_ratelimit(ids[i], key, sizeof(key));
        snprintf(tag, sizeof(tag), "u%" PRIu64, ids[i]);
        assert_int_equal(slot_of(key), slot_of(tag));
    }
}

/* reserve.lua's call as order_http.c builds it (4 keys, then user, order, now): the
 * routing finds four keys, all in one slot. */
static void test_reserve_call_not_crossslot(void **state)
{
    (void)state;
    char keys[4][ORDER_KEY_MAX];
    const order_key_kind kinds[4] = {ORDER_KEY_STOCK, ORDER_KEY_BUYERS, ORDER_KEY_META,
                                     ORDER_KEY_PENDING};
    for (int i = 0; i < 4; i++)
        order_key(392089604561305601ULL, kinds[i], keys[i], sizeof(keys[i]));
    const char *argv[] = {"EVALSHA", "0123456789012345678901234567890123456789", "4",
                          keys[0], keys[1], keys[2], keys[3], "7", "8", "9"};
    int first = -1, n = -1, step = -1;
    assert_int_equal(rcl_command_keys(10, argv, NULL, &first, &n, &step), 0);
    assert_int_equal(first, 3);
    assert_int_equal(n, 4);
    for (int i = 0; i < n; i++)
        assert_int_equal(slot_of(argv[first + i * step]), slot_of(keys[0]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_keys_one_slot),
        cmocka_unit_test(test_reserve_call_not_crossslot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
