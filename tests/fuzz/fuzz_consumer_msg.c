/* fuzz_consumer_msg: seckill-consumer's parser of seckill.orders values
 * (consumer_msg_parse, consumer_msg_parse_id). The input is the Kafka message value.
 *
 * Besides memory errors, the checks are consumer_msg.h's contract: a known code, never
 * UNKNOWN_EVENT (only the database step sets it), TOO_LARGE past the size bound, and on
 * OK ids in [1, INT64_MAX] and ts_ms in [0, MAX_TS]; an accepted order re-encoded the
 * way seckill-order writes it parses back to the same order; consumer_msg_parse_id
 * agrees with a reference, and with order_parse_id (the ids the front takes in paths)
 * wherever both rules apply. */
#include "consumer_msg.h"
#include "fuzz_util.h"
#include "order_route.h"

#include <inttypes.h>

static void check_parse_id(const char *s, size_t len)
{
    int64_t got = 0;
    uint64_t want = 0, front = 0;
    int rc = consumer_msg_parse_id(s, len, &got);
    int ref = fuzz_ref_id(s, len, 19, 1, &want);
    FUZZ_CHECK(rc == ref);
    if (rc == 0)
        FUZZ_CHECK((uint64_t)got == want);
    /* Without a leading zero both services must take the same ids. */
    if (len > 0 && s[0] != '0') {
        int frc = order_parse_id(s, len, &front);
        FUZZ_CHECK(frc == rc);
        if (rc == 0)
            FUZZ_CHECK(front == (uint64_t)got);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size heap copy; a zero-length value arrives as NULL, as from a tombstone. */
    char *value = NULL;
    if (size > 0) {
        value = malloc(size);
        if (!value)
            abort();
        memcpy(value, data, size);
    }
    consumer_order o;
    consumer_msg_err rc = consumer_msg_parse(value, size, &o);
    FUZZ_CHECK((unsigned)rc < CONSUMER_MSG__COUNT);
    FUZZ_CHECK(rc != CONSUMER_MSG_UNKNOWN_EVENT);
    const char *code = consumer_msg_strerror(rc);
    FUZZ_CHECK(code != NULL && strcmp(code, "unknown") != 0);
    if (size == 0)
        FUZZ_CHECK(rc == CONSUMER_MSG_EMPTY);
    if (size > CONSUMER_MSG_MAX_BYTES)
        FUZZ_CHECK(rc == CONSUMER_MSG_TOO_LARGE);
    if (rc == CONSUMER_MSG_OK) {
        FUZZ_CHECK(o.order_id > 0 && o.event_id > 0 && o.user_id > 0);
        FUZZ_CHECK(o.ts_ms >= 0 && o.ts_ms <= CONSUMER_MSG_MAX_TS_MS);
        /* Re-encoded as DESIGN.md's producer writes it: must give back the same order. */
        char again[256];
        int n = snprintf(again, sizeof(again),
                         "{\"v\":1,\"order_id\":\"%" PRId64 "\",\"event_id\":\"%" PRId64
                         "\",\"user_id\":\"%" PRId64 "\",\"ts_ms\":%" PRId64 "}",
                         o.order_id, o.event_id, o.user_id, o.ts_ms);
        FUZZ_CHECK(n > 0 && (size_t)n < sizeof(again));
        consumer_order o2;
        FUZZ_CHECK(consumer_msg_parse(again, (size_t)n, &o2) == CONSUMER_MSG_OK);
        FUZZ_CHECK(o2.order_id == o.order_id && o2.event_id == o.event_id &&
                   o2.user_id == o.user_id && o2.ts_ms == o.ts_ms);
    }
    if (size <= 24)
        check_parse_id(value ? value : "", size);
    free(value);
    return 0;
}
