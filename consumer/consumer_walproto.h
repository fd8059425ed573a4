/* consumer_walproto: the bytes of the order-events publisher (consumer_events.h), no I/O.
 *
 * Three formats meet here, each parsed or written in this one place:
 *   - the streaming replication protocol's CopyData frames: the server's XLogData ('w')
 *     and keepalive ('k'), the client's standby status update ('r');
 *   - pgoutput's logical replication messages inside XLogData (protocol version 1):
 *     Begin ('B'), logical decoding Message ('M'), Commit ('C'); everything else is
 *     skipped (the publication holds no table, so no row change is ever sent);
 *   - the payload deploy/sql/006 emits with pg_logical_emit_message(true, 'seckill', ..):
 *     one transition per line, "order_id\tevent_id\tuser_id\tstatus\tat_ms", which
 *     becomes one seckill.order-events message (docs/design.md, "The transition message").
 * Integers on the wire are big-endian. Every parser checks lengths first: a short or
 * malformed frame is an error, never a read past the buffer. */
#ifndef CONSUMER_WALPROTO_H
#define CONSUMER_WALPROTO_H

#include <stddef.h>
#include <stdint.h>

/* The message prefix our triggers emit under; messages with another prefix are skipped. */
#define CONSUMER_WAL_PREFIX "seckill"

typedef enum {
    CONSUMER_WAL_OTHER = 0, /* a frame or message we do not use: skip it */
    CONSUMER_WAL_KEEPALIVE, /* 'k': wal_end, reply_requested */
    CONSUMER_WAL_BEGIN,     /* 'B' in 'w': commit_ts_us */
    CONSUMER_WAL_MESSAGE,   /* 'M' in 'w': prefix, content, content_len, transactional */
    CONSUMER_WAL_COMMIT,    /* 'C' in 'w': commit_lsn, end_lsn */
} consumer_wal_kind;

typedef struct consumer_wal_frame {
    consumer_wal_kind kind;
    uint64_t wal_end;        /* 'w' and 'k': the server's WAL position sent so far */
    int reply_requested;     /* 'k' */
    int64_t commit_ts_us;    /* 'B': microseconds since 2000-01-01 */
    uint64_t commit_lsn;     /* 'C' */
    uint64_t end_lsn;        /* 'C': what the slot may be confirmed up to */
    int transactional;       /* 'M' */
    const char *prefix;      /* 'M': NUL-terminated, inside the frame */
    const char *content;     /* 'M': content_len bytes inside the frame (not terminated) */
    size_t content_len;
} consumer_wal_frame;

/** @brief Parses one CopyData payload from the server (buf, len as PQgetCopyData gave).
 *  Pointers in *out point into buf. @returns 0, or -1 for a malformed frame. */
int consumer_wal_parse(const char *buf, size_t len, consumer_wal_frame *out);

/* Bytes of a standby status update. */
#define CONSUMER_WAL_STATUS_LEN 34

/** @brief Writes the standby status update confirming `lsn` as written, flushed and
 *  applied (the slot's confirmed_flush_lsn becomes lsn), at now_us (microseconds since
 *  the Unix epoch), into out[CONSUMER_WAL_STATUS_LEN]. */
void consumer_wal_status(char out[CONSUMER_WAL_STATUS_LEN], uint64_t lsn, int64_t now_us);

/** @brief Cuts the next line off a message's content: *line and *line_len give the line
 *  (without its '\n'); *pos advances past it. @returns 1 when a line was cut, 0 at the end. */
int consumer_wal_next_line(const char *content, size_t len, size_t *pos, const char **line,
                           size_t *line_len);

/** @brief Turns one payload line into the transition's Kafka value (JSON) in out and
 *  its key (the order id, decimal) in key[24]. Ids must be 1 to 19 digits, the status
 *  lowercase letters, at_ms digits; an optional sixth field is the order's quantity
 *  (1 to 3 digits, no leading zero; deploy/sql/011), written as "quantity".
 *  @returns the value's length, or -1 for a malformed line (out too small included). */
int consumer_wal_line_json(const char *line, size_t len, char *out, size_t outsz, char key[24]);

/** @brief The "0/16B3748" (hi/lo hex) form of an LSN, as PostgreSQL prints it, into out[24]. */
void consumer_wal_lsn_str(uint64_t lsn, char out[24]);

#endif
