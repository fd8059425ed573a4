/* test_order_cluster_keys: every key one of seckill-order's scripts touches lands in one
 * cluster slot (issue 8), so no EVALSHA of the front is ever refused as CROSSSLOT:
 * order_msg's key builders against rcluster's slot function and its key finder, which
 * is what the routing uses before it sends. Pure: no network. */
#include "order_gate.h"
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

/* Every gate call as order_gate builds it (reserve, cancel, confirm, a batch of several
 * orders): the routing finds exactly the script's keys, all in one slot. */
static void test_reserve_call_not_crossslot(void **state)
{
    (void)state;
    order_gate_item items[3] = {{NULL, 392089604561305601ULL, 7, 8, 0, 0, 1, 0, 1, 0},
                                {NULL, 392089604561305601ULL, 9, 10, 0, 0, 1, 0, 1, 0},
                                {NULL, 392089604561305601ULL, 11, 12, 0, 0, 1, 0, 1, 0}};
    const order_gate_item *its[3] = {&items[0], &items[1], &items[2]};
    const int nkeys[ORDER_GATE_OPS] = {5, 4, 1, 2};
    /* and once more as segment 2 of 3 (issue 19): its own tag, still one slot per call */
    for (int pass = 0; pass < 2; pass++)
    for (int op = 0; op < ORDER_GATE_OPS; op++) {
        for (int i = 0; i < 3; i++) {
            items[i].seg = pass ? 2 : 0;
            items[i].segs = pass ? 3 : 1;
        }
        order_gate_args a;
        assert_int_equal(order_gate_args_build(&a, (order_gate_op)op, 9, its, 3), 0);
        const char *argv[3 + 16] = {"EVALSHA", "0123456789012345678901234567890123456789", "4"};
        char nk[8];
        snprintf(nk, sizeof(nk), "%d", a.nkeys);
        argv[2] = nk;
        assert_true(a.n <= 16);
        for (int i = 0; i < a.n; i++)
            argv[3 + i] = a.argv[i];
        int first = -1, n = -1, step = -1;
        assert_int_equal(rcl_command_keys(3 + a.n, argv, NULL, &first, &n, &step), 0);
        assert_int_equal(first, 3);
        assert_int_equal(n, nkeys[op]);
        for (int i = 0; i < n; i++)
            assert_int_equal(slot_of(argv[first + i * step]), slot_of(a.argv[0]));
        if (pass)
            assert_non_null(strstr(a.argv[0], "{e392089604561305601.2}"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_keys_one_slot),
        cmocka_unit_test(test_reserve_call_not_crossslot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
