/* consumer_walproto: the replication protocol's frames and pgoutput's messages. See
 * consumer_walproto.h. Layouts: PostgreSQL's "Streaming Replication Protocol" and
 * "Logical Replication Message Formats" (protocol version 1, not streamed: no xid in 'M'). */
#include "consumer_walproto.h"

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

/* Field i (0-based) of a tab-separated line: *f, *fn. @returns 0, -1 when missing. */
static int field(const char *line, size_t len, int i, const char **f, size_t *fn)
{
    size_t at = 0;
    for (int k = 0; k < i; k++) {
        const char *tab = memchr(line + at, '\t', len - at);
        if (!tab)
            return -1;
        at = (size_t)(tab - line) + 1;
    }
    const char *tab = memchr(line + at, '\t', len - at);
    *f = line + at;
    *fn = tab ? (size_t)(tab - (line + at)) : len - at;
    return 0;
}

static int all_of(const char *s, size_t n, const char *set, size_t maxn)
{
    if (n == 0 || n > maxn)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!strchr(set, s[i]) || s[i] == '\0')
            return 0;
    return 1;
}

int consumer_wal_line_json(const char *line, size_t len, char *out, size_t outsz, char key[24])
{
    static const char DIGITS[] = "0123456789";
    static const char LOWER[] = "abcdefghijklmnopqrstuvwxyz";
    const char *f[6];
    size_t fn[6];
    for (int i = 0; i < 5; i++)
        if (field(line, len, i, &f[i], &fn[i]) != 0)
            return -1;
    /* the quantity (issue 31, deploy/sql/011): a sixth field, absent from the lines
     * written before that migration */
    int has_q = field(line, len, 5, &f[5], &fn[5]) == 0;
    if (has_q && (memchr(f[5], '\t', len - (size_t)(f[5] - line)) ||
                  !all_of(f[5], fn[5], DIGITS, 3) || f[5][0] == '0'))
        return -1; /* a seventh field, or not a quantity */
    for (int i = 0; i < 3; i++)
        if (!all_of(f[i], fn[i], DIGITS, 19))
            return -1;
    if (!all_of(f[3], fn[3], LOWER, 16) || !all_of(f[4], fn[4], DIGITS, 15))
        return -1;
    int n = snprintf(out, outsz,
                     "{\"v\":1,\"order_id\":\"%.*s\",\"event_id\":\"%.*s\",\"user_id\":\"%.*s\","
                     "\"status\":\"%.*s\",\"at_ms\":%.*s%s%.*s}",
                     (int)fn[0], f[0], (int)fn[1], f[1], (int)fn[2], f[2], (int)fn[3], f[3],
                     (int)fn[4], f[4], has_q ? ",\"quantity\":" : "", has_q ? (int)fn[5] : 0,
                     has_q ? f[5] : "");
    if (n < 0 || (size_t)n >= outsz)
        return -1;
    memcpy(key, f[0], fn[0]);
    key[fn[0]] = '\0';
    return n;
}

void consumer_wal_lsn_str(uint64_t lsn, char out[24])
{
    snprintf(out, 24, "%X/%X", (unsigned)(lsn >> 32), (unsigned)(lsn & 0xffffffffu));
}
