/* sk_order_msg: the seckill.orders message. See sk_order_msg.h. */
#include "sk_order_msg.h"
#include "sk_hmac.h"
#include "sk_id.h"
#include "sk_put.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const err_codes[SK_ORDER_MSG__COUNT] = {
    [SK_ORDER_MSG_OK] = "ok",
    [SK_ORDER_MSG_EMPTY] = "empty",
    [SK_ORDER_MSG_TOO_LARGE] = "too_large",
    [SK_ORDER_MSG_NOT_JSON] = "not_json",
    [SK_ORDER_MSG_NOT_OBJECT] = "not_object",
    [SK_ORDER_MSG_BAD_VERSION] = "bad_version",
    [SK_ORDER_MSG_BAD_ORDER_ID] = "bad_order_id",
    [SK_ORDER_MSG_BAD_EVENT_ID] = "bad_event_id",
    [SK_ORDER_MSG_BAD_USER_ID] = "bad_user_id",
    [SK_ORDER_MSG_BAD_TS] = "bad_ts",
    [SK_ORDER_MSG_BAD_QUANTITY] = "bad_quantity",
    [SK_ORDER_MSG_BAD_MAC] = "bad_mac",
};

const char *sk_order_msg_strerror(sk_order_msg_err err)
{
    if ((unsigned)err >= SK_ORDER_MSG__COUNT)
        return "unknown";
    return err_codes[err];
}

static void put_dec(char *out, size_t outsz, size_t *at, uint64_t v)
{
    char d[SK_ID_DEC_MAX];
    sk_put(out, outsz, at, d, sk_id_format(d, v));
}

static void put_signed(char *out, size_t outsz, size_t *at, int64_t v)
{
    if (v < 0)
        sk_put(out, outsz, at, "-", 1);
    put_dec(out, outsz, at, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

size_t sk_order_msg_encode(const sk_order_msg *m, char *out, size_t outsz)
{
    size_t at = 0;
    SK_PUT_LIT("{\"v\":1,\"order_id\":\"");
    put_dec(out, outsz, &at, m->order_id);
    SK_PUT_LIT("\",\"event_id\":\"");
    put_dec(out, outsz, &at, m->event_id);
    SK_PUT_LIT("\",\"user_id\":\"");
    put_dec(out, outsz, &at, m->user_id);
    SK_PUT_LIT("\",\"ts_ms\":");
    put_signed(out, outsz, &at, m->ts_ms);
    if (m->quantity > 1) { /* one unit: the value of before */
        SK_PUT_LIT(",\"quantity\":");
        put_dec(out, outsz, &at, m->quantity);
    }
    if (m->mac[0]) { /* the MAC: its own member, last */
        SK_PUT_LIT(",\"mac\":\"");
        sk_put(out, outsz, &at, m->mac, strnlen(m->mac, SK_ORDER_MSG_MAC_HEX));
        SK_PUT_LIT("\"");
    }
    SK_PUT_LIT("}");
    return at < outsz ? at : 0;
}

static int get_id(json_t *obj, const char *name, uint64_t *out)
{
    json_t *v = json_object_get(obj, name);
    if (!json_is_string(v))
        return -1;
    return sk_id_parse(json_string_value(v), json_string_length(v), out);
}

/* "mac", when present: exactly SK_ORDER_MSG_MAC_HEX lowercase hex digits, copied to
 * mac; absent: mac "". @returns 0, or -1 when present and malformed. */
static int get_mac(json_t *obj, char mac[SK_ORDER_MSG_MAC_HEX + 1])
{
    json_t *v = json_object_get(obj, "mac");
    mac[0] = 0;
    if (!v)
        return 0;
    if (!json_is_string(v) || json_string_length(v) != SK_ORDER_MSG_MAC_HEX)
        return -1;
    const char *s = json_string_value(v);
    for (int i = 0; i < SK_ORDER_MSG_MAC_HEX; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return -1;
    memcpy(mac, s, SK_ORDER_MSG_MAC_HEX + 1);
    return 0;
}

/* ---- the fast path: the encoder's own layout ----
 * Every message a front writes has sk_order_msg_encode's layout, byte for byte: no
 * whitespace, the members in its order, ids as plain digits. The consumer decodes a
 * million of them per drain, and jansson's tree (a malloc per member, a hash of the keys)
 * was 46% of the consumer's CPU (perf, 2026-11-27: 2.4 us of 5.3 per order). So the
 * decoder first reads that layout by hand; anything else at all (whitespace, another
 * order, an escape, a leading zero, a value out of range, an unknown member) goes to
 * jansson, which decides. The layout is valid JSON without duplicate members, and each
 * value it accepts is one jansson reads the same, so a message decodes to the same
 * result either way (tests/unit/test_sk_order_msg.c compares the two on mutations). */

/* Consumes the n bytes of s at *p (before end). */
static int lit(const char **p, const char *end, const char *s, size_t n)
{
    if ((size_t)(end - *p) < n || memcmp(*p, s, n) != 0)
        return -1;
    *p += n;
    return 0;
}
#define LIT(p, end, s) lit((p), (end), (s), sizeof(s) - 1)

/* Digits at *p up to the first non-digit: their start and count. */
static size_t digits(const char **p, const char *end, const char **start)
{
    *start = *p;
    while (*p < end && **p >= '0' && **p <= '9')
        (*p)++;
    return (size_t)(*p - *start);
}

/* "<id>" under sk_id_parse's rule. */
static int fast_id(const char **p, const char *end, uint64_t *out)
{
    const char *d;
    if (LIT(p, end, "\"") != 0)
        return -1;
    size_t n = digits(p, end, &d);
    return sk_id_parse(d, n, out) == 0 && LIT(p, end, "\"") == 0 ? 0 : -1;
}

/* A JSON integer in [lo, hi] written as jansson would accept it: "0" or no leading
 * zero, no sign (lo >= 0 here), at most 15 digits (every bound below is shorter). */
static int fast_int(const char **p, const char *end, uint64_t lo, uint64_t hi, uint64_t *out)
{
    const char *d;
    size_t n = digits(p, end, &d);
    if (n == 0 || n > 15 || (d[0] == '0' && n > 1))
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (uint64_t)(d[i] - '0');
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* @returns 0 with *out filled when value is exactly the encoder's layout and valid,
 * -1 otherwise (the caller then decodes with jansson; *out may be half-written). */
static int decode_fast(const char *p, size_t len, sk_order_msg *out)
{
    const char *end = p + len;
    uint64_t ts, q = 1;
    if (LIT(&p, end, "{\"v\":1,\"order_id\":") != 0 || fast_id(&p, end, &out->order_id) != 0 ||
        LIT(&p, end, ",\"event_id\":") != 0 || fast_id(&p, end, &out->event_id) != 0 ||
        LIT(&p, end, ",\"user_id\":") != 0 || fast_id(&p, end, &out->user_id) != 0 ||
        LIT(&p, end, ",\"ts_ms\":") != 0 ||
        fast_int(&p, end, 0, (uint64_t)SK_ORDER_MSG_MAX_TS_MS, &ts) != 0)
        return -1;
    if (LIT(&p, end, ",\"quantity\":") == 0 &&
        fast_int(&p, end, 1, SK_ORDER_MSG_MAX_QUANTITY, &q) != 0)
        return -1;
    out->mac[0] = 0;
    if (LIT(&p, end, ",\"mac\":\"") == 0) {
        if (end - p < SK_ORDER_MSG_MAC_HEX + 1)
            return -1;
        for (int i = 0; i < SK_ORDER_MSG_MAC_HEX; i++)
            if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
                return -1;
        memcpy(out->mac, p, SK_ORDER_MSG_MAC_HEX);
        out->mac[SK_ORDER_MSG_MAC_HEX] = 0;
        p += SK_ORDER_MSG_MAC_HEX;
        if (LIT(&p, end, "\"") != 0)
            return -1;
    }
    if (LIT(&p, end, "}") != 0 || p != end)
        return -1;
    out->ts_ms = (int64_t)ts;
    out->quantity = (uint32_t)q;
    return 0;
}

sk_order_msg_err sk_order_msg_decode(const void *value, size_t len, sk_order_msg *out)
{
    if (!value || len == 0)
        return SK_ORDER_MSG_EMPTY;
    if (len > SK_ORDER_MSG_MAX_BYTES)
        return SK_ORDER_MSG_TOO_LARGE;
    if (decode_fast(value, len, out) == 0)
        return SK_ORDER_MSG_OK;
    return sk_order_msg_decode_json(value, len, out);
}

sk_order_msg_err sk_order_msg_decode_json(const void *value, size_t len, sk_order_msg *out)
{
    if (!value || len == 0)
        return SK_ORDER_MSG_EMPTY;
    if (len > SK_ORDER_MSG_MAX_BYTES)
        return SK_ORDER_MSG_TOO_LARGE;
    json_error_t jerr;
    /* Duplicate members are ambiguous (which order_id is meant?): refused. */
    json_t *root = json_loadb(value, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!root)
        return SK_ORDER_MSG_NOT_JSON;
    sk_order_msg_err rc = SK_ORDER_MSG_OK;
    json_t *v, *ts, *q;
    if (!json_is_object(root))
        rc = SK_ORDER_MSG_NOT_OBJECT;
    else if (!json_is_integer(v = json_object_get(root, "v")) || json_integer_value(v) != 1)
        rc = SK_ORDER_MSG_BAD_VERSION;
    else if (get_id(root, "order_id", &out->order_id) != 0)
        rc = SK_ORDER_MSG_BAD_ORDER_ID;
    else if (get_id(root, "event_id", &out->event_id) != 0)
        rc = SK_ORDER_MSG_BAD_EVENT_ID;
    else if (get_id(root, "user_id", &out->user_id) != 0)
        rc = SK_ORDER_MSG_BAD_USER_ID;
    else if (!json_is_integer(ts = json_object_get(root, "ts_ms")) || json_integer_value(ts) < 0 ||
             json_integer_value(ts) > SK_ORDER_MSG_MAX_TS_MS)
        rc = SK_ORDER_MSG_BAD_TS;
    else if ((q = json_object_get(root, "quantity")) &&
             (!json_is_integer(q) || json_integer_value(q) < 1 ||
              json_integer_value(q) > SK_ORDER_MSG_MAX_QUANTITY))
        rc = SK_ORDER_MSG_BAD_QUANTITY;
    else {
        out->ts_ms = (int64_t)json_integer_value(ts);
        out->quantity = q ? (uint32_t)json_integer_value(q) : 1; /* absent: one unit */
    }
    if (rc == SK_ORDER_MSG_OK && get_mac(root, out->mac) != 0)
        rc = SK_ORDER_MSG_BAD_MAC;
    json_decref(root);
    return rc;
}

/* ---- the MAC ---- */

#define MAC_BYTES (SK_ORDER_MSG_MAC_HEX / 2)

struct sk_order_msg_keys {
    sk_hmac_key *key[2]; /* [0] signs; [0] and [1] verify */
    int n;
};

sk_order_msg_keys *sk_order_msg_keys_new(const char *spec, char *err, size_t errsz)
{
    sk_order_msg_keys *k = calloc(1, sizeof(*k));
    if (!k) {
        snprintf(err, errsz, "out of memory");
        return NULL;
    }
    const char *p = spec ? spec : "";
    for (;;) {
        size_t n = strcspn(p, ",");
        if (k->n == 2) {
            snprintf(err, errsz, "more than two keys (the signing one, then the previous)");
            break;
        }
        if (n < SK_ORDER_MSG_KEY_MIN) {
            snprintf(err, errsz, "key %d is %zu bytes: at least %d", k->n + 1, n,
                     SK_ORDER_MSG_KEY_MIN);
            break;
        }
        if (!(k->key[k->n++] = sk_hmac_key_new(p, n))) {
            snprintf(err, errsz, "no HMAC-SHA256 key (OpenSSL failure or out of memory)");
            break;
        }
        if (!p[n])
            return k;
        p += n + 1;
    }
    sk_order_msg_keys_free(k);
    return NULL;
}

void sk_order_msg_keys_free(sk_order_msg_keys *k)
{
    if (!k)
        return;
    sk_hmac_key_free(k->key[0]);
    sk_hmac_key_free(k->key[1]);
    free(k);
}

int sk_order_msg_keys_count(const sk_order_msg_keys *k)
{
    return k->n;
}

size_t sk_order_msg_canonical(const sk_order_msg *m, char *out, size_t outsz)
{
    size_t at = 0;
    SK_PUT_LIT("seckill.orders/1|");
    put_dec(out, outsz, &at, m->order_id);
    SK_PUT_LIT("|");
    put_dec(out, outsz, &at, m->event_id);
    SK_PUT_LIT("|");
    put_dec(out, outsz, &at, m->user_id);
    SK_PUT_LIT("|");
    put_signed(out, outsz, &at, m->ts_ms);
    /* the units too (issue 31): a MAC that left them out would let a relay turn one unit
     * into a hundred; 0 is written as the 1 it encodes as */
    SK_PUT_LIT("|");
    put_dec(out, outsz, &at, m->quantity > 1 ? m->quantity : 1);
    return at < outsz ? at : 0;
}

/* The truncated MAC of m's fields under key. @returns 0 or -1. */
static int mac_of(const sk_hmac_key *key, const sk_order_msg *m, unsigned char mac[MAC_BYTES])
{
    char data[SK_ORDER_MSG_MAX];
    unsigned char full[SK_HMAC_LEN];
    size_t n = sk_order_msg_canonical(m, data, sizeof(data));
    if (n == 0 || sk_hmac_sha256(key, data, n, full) != 0)
        return -1;
    memcpy(mac, full, MAC_BYTES);
    return 0;
}

int sk_order_msg_sign(const sk_order_msg_keys *k, sk_order_msg *m)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char mac[MAC_BYTES];
    m->mac[0] = 0;
    if (mac_of(k->key[0], m, mac) != 0)
        return -1;
    for (int i = 0; i < MAC_BYTES; i++) {
        m->mac[2 * i] = hex[mac[i] >> 4];
        m->mac[2 * i + 1] = hex[mac[i] & 15];
    }
    m->mac[SK_ORDER_MSG_MAC_HEX] = 0;
    return 0;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

sk_order_msg_err sk_order_msg_verify(const sk_order_msg_keys *k, const sk_order_msg *m)
{
    unsigned char got[MAC_BYTES], want[MAC_BYTES];
    if (strnlen(m->mac, SK_ORDER_MSG_MAC_HEX + 1) != SK_ORDER_MSG_MAC_HEX)
        return SK_ORDER_MSG_BAD_MAC;
    for (int i = 0; i < MAC_BYTES; i++) {
        int hi = hexval(m->mac[2 * i]), lo = hexval(m->mac[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return SK_ORDER_MSG_BAD_MAC;
        got[i] = (unsigned char)(hi << 4 | lo);
    }
    int ok = 0;
    for (int i = 0; i < k->n; i++) /* every key tried: no early exit tells which */
        ok |= mac_of(k->key[i], m, want) == 0 && sk_hmac_equal(got, want, MAC_BYTES);
    return ok ? SK_ORDER_MSG_OK : SK_ORDER_MSG_BAD_MAC;
}
