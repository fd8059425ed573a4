/* consumer_walproto: the replication protocol's frames and pgoutput's messages. See
 * consumer_walproto.h. Layouts: PostgreSQL's "Streaming Replication Protocol" and
 * "Logical Replication Message Formats" (protocol version 1, not streamed: no xid in 'M'). */
#include "consumer_walproto.h"

#include "sk_put.h"

#include <stdio.h>
#include <string.h>

/* Microseconds from the Unix epoch to PostgreSQL's (2000-01-01 UTC). */
#define PG_EPOCH_US 946684800000000LL

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

static uint32_t get32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static void put64(char *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (char)(v & 0xff);
}

/* pgoutput's message inside an XLogData frame: p, n past the 25-byte header. */
static int parse_logical(const unsigned char *p, size_t n, consumer_wal_frame *out)
{
    if (n < 1)
        return -1;
    switch (p[0]) {
    case 'B': /* final LSN, commit timestamp, xid */
        if (n < 1 + 8 + 8 + 4)
            return -1;
        out->kind = CONSUMER_WAL_BEGIN;
        out->commit_ts_us = (int64_t)get64(p + 9);
        return 0;
    case 'C': /* flags, commit LSN, end LSN, commit timestamp */
        if (n < 1 + 1 + 8 + 8 + 8)
            return -1;
        out->kind = CONSUMER_WAL_COMMIT;
        out->commit_lsn = get64(p + 2);
        out->end_lsn = get64(p + 10);
        return 0;
    case 'M': { /* flags, LSN, prefix (NUL-terminated), content length, content */
        if (n < 1 + 1 + 8 + 1)
            return -1;
        const unsigned char *prefix = p + 10;
        const unsigned char *nul = memchr(prefix, '\0', n - 10);
        if (!nul)
            return -1;
        size_t at = (size_t)(nul - p) + 1;
        if (n - at < 4)
            return -1;
        uint32_t clen = get32(p + at);
        at += 4;
        if (clen > n - at)
            return -1;
        out->kind = CONSUMER_WAL_MESSAGE;
        out->transactional = p[1] & 1;
        out->prefix = (const char *)prefix;
        out->content = (const char *)p + at;
        out->content_len = clen;
        return 0;
    }
    default: /* relation, type, origin, row changes: none is ours */
        out->kind = CONSUMER_WAL_OTHER;
        return 0;
    }
}

int consumer_wal_parse(const char *buf, size_t len, consumer_wal_frame *out)
{
    const unsigned char *p = (const unsigned char *)buf;
    memset(out, 0, sizeof(*out));
    if (len < 1)
        return -1;
    if (p[0] == 'k') { /* walEnd, sendTime, replyRequested */
        if (len < 1 + 8 + 8 + 1)
            return -1;
        out->kind = CONSUMER_WAL_KEEPALIVE;
        out->wal_end = get64(p + 1);
        out->reply_requested = p[17] != 0;
        return 0;
    }
    if (p[0] == 'w') { /* dataStart, walEnd, sendTime, data */
        if (len < 1 + 8 + 8 + 8)
            return -1;
        out->wal_end = get64(p + 9);
        return parse_logical(p + 25, len - 25, out);
    }
    out->kind = CONSUMER_WAL_OTHER;
    return 0;
}

void consumer_wal_status(char out[CONSUMER_WAL_STATUS_LEN], uint64_t lsn, int64_t now_us)
{
    out[0] = 'r';
    put64(out + 1, lsn);  /* written */
    put64(out + 9, lsn);  /* flushed: what the slot keeps is past this */
    put64(out + 17, lsn); /* applied */
    put64(out + 25, (uint64_t)(now_us - PG_EPOCH_US));
    out[33] = 0; /* no reply requested */
}

int consumer_wal_next_line(const char *content, size_t len, size_t *pos, const char **line,
                           size_t *line_len)
{
    while (*pos < len && content[*pos] == '\n')
        (*pos)++;
    if (*pos >= len)
        return 0;
    const char *start = content + *pos;
    const char *nl = memchr(start, '\n', len - *pos);
    size_t n = nl ? (size_t)(nl - start) : len - *pos;
    *line = start;
    *line_len = n;
    *pos += n + (nl ? 1 : 0);
    return 1;
}

/* n bytes of s, each in [lo, hi], n in [1, maxn]. */
static int all_in(const char *s, size_t n, char lo, char hi, size_t maxn)
{
    if (n == 0 || n > maxn)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < lo || s[i] > hi)
            return 0;
    return 1;
}

/* One pass over the line and memcpy, not a field search per field with a strchr per byte
 * and snprintf: this runs once per published transition, a million per drain (it was 9% of
 * the consumer's CPU, perf 2026-11-27). */
int consumer_wal_line_json(const char *line, size_t len, char *out, size_t outsz, char key[24])
{
    const char *f[6];
    size_t fn[6], nf = 0, start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && line[i] != '\t')
            continue;
        if (nf == 6)
            return -1; /* a seventh field */
        f[nf] = line + start;
        fn[nf++] = i - start;
        start = i + 1;
    }
    /* the quantity (issue 31, deploy/sql/011): a sixth field, absent from the lines
     * written before that migration */
    int has_q = nf == 6;
    if (nf < 5 || (has_q && (!all_in(f[5], fn[5], '0', '9', 3) || f[5][0] == '0')))
        return -1;
    for (int i = 0; i < 3; i++)
        if (!all_in(f[i], fn[i], '0', '9', 19))
            return -1;
    if (!all_in(f[3], fn[3], 'a', 'z', 16) || !all_in(f[4], fn[4], '0', '9', 15))
        return -1;
    size_t at = 0;
    SK_PUT_LIT("{\"v\":1,\"order_id\":\"");
    sk_put(out, outsz, &at, f[0], fn[0]);
    SK_PUT_LIT("\",\"event_id\":\"");
    sk_put(out, outsz, &at, f[1], fn[1]);
    SK_PUT_LIT("\",\"user_id\":\"");
    sk_put(out, outsz, &at, f[2], fn[2]);
    SK_PUT_LIT("\",\"status\":\"");
    sk_put(out, outsz, &at, f[3], fn[3]);
    SK_PUT_LIT("\",\"at_ms\":");
    sk_put(out, outsz, &at, f[4], fn[4]);
    if (has_q) {
        SK_PUT_LIT(",\"quantity\":");
        sk_put(out, outsz, &at, f[5], fn[5]);
    }
    SK_PUT_LIT("}");
    if (at >= outsz)
        return -1;
    memcpy(key, f[0], fn[0]);
    key[fn[0]] = '\0';
    return (int)at;
}

void consumer_wal_lsn_str(uint64_t lsn, char out[24])
{
    snprintf(out, 24, "%X/%X", (unsigned)(lsn >> 32), (unsigned)(lsn & 0xffffffffu));
}
