/* fuzz_consumer_msg: the seckill.orders message (domain/sk_order_msg, the one decoder)
 * as seckill-consumer takes it (consumer_msg_parse), and the id rule (sk_id_parse). The
 * input is the Kafka message value.
 *
 * Besides memory errors, the checks are consumer_msg.h's contract: a known code, never
 * UNKNOWN_EVENT (only the database step sets it), TOO_LARGE past the size bound, and on
 * OK ids in [1, INT64_MAX] and ts_ms in [0, MAX_TS]. Across the two services: an
 * accepted order re-encoded by the encoder seckill-order uses (sk_order_msg_encode)
 * parses back to the same order; any order the front can produce (ids in [1, INT64_MAX],
 * ts_ms in [0, MAX_TS], taken from the input's first 32 bytes) is accepted by the
 * consumer with the same values. The quantity (issue 31): any the encoder writes
 * decodes back (sk_order_msg_decode) and the consumer takes it with its units
 * (1..SK_ORDER_MSG_MAX_QUANTITY; a quantity past that is BAD_QUANTITY). sk_id_parse agrees
 * with a reference, and with order_parse_id (the ids the front takes in paths).
 * The MAC (issue 33): what the front signs verifies under its key and under a rotation
 * that holds it, and fails once any field changes; whatever the input, verifying never
 * fails but as OK or BAD_MAC, and with no keys it is OK (the old behaviour). */
#include "consumer_msg.h"
#include "fuzz_util.h"
#include "order_msg.h"
#include "order_route.h"

static void check_parse_id(const char *s, size_t len)
{
    uint64_t got = 0, want = 0, front = 0;
    int rc = sk_id_parse(s, len, &got);
    int ref = fuzz_ref_id(s, len, 19, 1, &want);
    FUZZ_CHECK(rc == ref);
    if (rc == 0)
        FUZZ_CHECK(got == want);
    /* Both services take exactly the same ids (one rule: common/sk_id). */
    int frc = order_parse_id(s, len, &front);
    FUZZ_CHECK(frc == rc);
    if (rc == 0)
        FUZZ_CHECK(front == got);
}

/* sk_order_msg_encode into an exact-size buffer, then consumer_msg_parse: the same order. */
static sk_order_msg_keys *keys, *rotation;

static void check_producer(const sk_order_msg *m)
{
    char tmp[SK_ORDER_MSG_MAX_SIGNED];
    size_t n = sk_order_msg_encode(m, tmp, sizeof(tmp));
    FUZZ_CHECK(n > 0 && n < sizeof(tmp));
    char *exact = malloc(n);
    if (!exact)
        abort();
    memcpy(exact, tmp, n);
    sk_order_msg d;
    FUZZ_CHECK(sk_order_msg_decode(exact, n, &d) == SK_ORDER_MSG_OK);
    FUZZ_CHECK(d.order_id == m->order_id && d.event_id == m->event_id &&
               d.user_id == m->user_id && d.ts_ms == m->ts_ms &&
               d.quantity == (m->quantity ? m->quantity : 1));
    /* Every quantity the encoder writes (1..SK_ORDER_MSG_MAX_QUANTITY) is taken (issue 31:
     * the consumer counts units). */
    consumer_order o;
    consumer_msg_err rc = consumer_msg_parse(exact, n, &o);
    FUZZ_CHECK(rc == CONSUMER_MSG_OK);
    FUZZ_CHECK((uint64_t)o.order_id == m->order_id && (uint64_t)o.event_id == m->event_id &&
               (uint64_t)o.user_id == m->user_id && o.ts_ms == m->ts_ms &&
               (uint32_t)o.quantity == d.quantity);
    FUZZ_CHECK(strcmp(o.mac, m->mac) == 0);
    free(exact);
}

/* Signed by the front's key: verifies under it and under a rotation that holds it as
 * the previous key; a changed field does not. */
static void check_signed(sk_order_msg m)
{
    if (!keys) {
        char err[128];
        keys = sk_order_msg_keys_new("fuzz-key-0123456789abcdef", err, sizeof(err));
        rotation = sk_order_msg_keys_new("fuzz-next-0123456789abcde,fuzz-key-0123456789abcdef",
                                         err, sizeof(err));
        if (!keys || !rotation)
            abort();
    }
    FUZZ_CHECK(sk_order_msg_sign(keys, &m) == 0);
    check_producer(&m);
    /* the MAC covers the quantity: the consumer's copy carries it, 0 read as 1 */
    consumer_order o = {(int64_t)m.order_id, (int64_t)m.event_id, (int64_t)m.user_id, m.ts_ms,
                        m.quantity > 1 ? (int32_t)m.quantity : 1, ""};
    memcpy(o.mac, m.mac, sizeof(o.mac));
    FUZZ_CHECK(consumer_msg_verify(keys, &o) == CONSUMER_MSG_OK);
    FUZZ_CHECK(consumer_msg_verify(rotation, &o) == CONSUMER_MSG_OK);
    o.user_id = o.user_id == 1 ? 2 : o.user_id - 1;
    FUZZ_CHECK(consumer_msg_verify(keys, &o) == CONSUMER_MSG_BAD_MAC);
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
        /* Re-encoded by the producer's encoder: must give back the same order. */
        FUZZ_CHECK(o.quantity >= 1 && o.quantity <= SK_ORDER_MSG_MAX_QUANTITY);
        sk_order_msg m = {.order_id = (uint64_t)o.order_id, .event_id = (uint64_t)o.event_id,
                          .user_id = (uint64_t)o.user_id, .ts_ms = o.ts_ms,
                          .quantity = (uint32_t)o.quantity};
        memcpy(m.mac, o.mac, sizeof(m.mac));
        check_producer(&m);
        FUZZ_CHECK(consumer_msg_verify(NULL, &o) == CONSUMER_MSG_OK);
        if (keys) {
            consumer_msg_err v = consumer_msg_verify(keys, &o);
            FUZZ_CHECK(v == CONSUMER_MSG_OK || v == CONSUMER_MSG_BAD_MAC);
        }
    }
    if (size >= 32) {
        /* Whatever the front may produce must be accepted downstream (one unit), and
         * any quantity the encoder writes must decode back (byte 32, when there is one). */
        sk_order_msg m;
        memset(&m, 0, sizeof(m));
        m.quantity = size > 32 ? (uint32_t)(data[32] % (SK_ORDER_MSG_MAX_QUANTITY + 1)) : 1;
        memcpy(&m.order_id, data, 8);
        memcpy(&m.event_id, data + 8, 8);
        memcpy(&m.user_id, data + 16, 8);
        memcpy(&m.ts_ms, data + 24, 8);
        m.order_id = m.order_id % (uint64_t)INT64_MAX + 1;
        m.event_id = m.event_id % (uint64_t)INT64_MAX + 1;
        m.user_id = m.user_id % (uint64_t)INT64_MAX + 1;
        m.ts_ms = (int64_t)((uint64_t)m.ts_ms % (uint64_t)(CONSUMER_MSG_MAX_TS_MS + 1));
        check_producer(&m);
        check_signed(m);
    }
    if (size <= 24)
        check_parse_id(value ? value : "", size);
    free(value);
    return 0;
}
