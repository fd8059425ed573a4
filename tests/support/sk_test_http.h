/* sk_test_http: sk_http driven over a socketpair in one thread, for the connection
 * layer's unit test (tests/unit/test_sk_http_conn.c) and its split fuzz harness
 * (tests/fuzz/fuzz_http_split.c). No network: the server serves one end of a
 * socketpair(AF_UNIX, SOCK_STREAM) through sk_http_adopt, the test writes and reads
 * the other, and the loop turns only when the test pumps it.
 *
 * The stub handler records every request it sees as text (method, target, headers,
 * framing, body: binary-safe) and answers it, at once or on a later loop turn (the
 * path of an answer that comes from a Redis or Kafka callback): 200 with the request's
 * number and target and its body echoed, 400 for a framing refusal; a target that
 * holds "/close" gets "Connection: close". Nothing here prints or asserts: the
 * callers check what was recorded. */
#ifndef SK_TEST_HTTP_H
#define SK_TEST_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "sk_http.h"

struct event_base;

/* A growing byte buffer. */
typedef struct sk_test_buf {
    char *p;
    size_t len, cap;
} sk_test_buf;

typedef enum {
    SK_TEST_ANSWER_NOW = 0, /* in the handler */
    SK_TEST_ANSWER_ODD,     /* every other request on a later loop turn */
    SK_TEST_ANSWER_LATER,   /* every request on a later loop turn */
} sk_test_answer_mode;

typedef struct sk_test_http {
    struct event_base *base; /* the caller's */
    sk_http *srv;
    int cfd;                  /* the client's end (the test's) */
    sk_test_answer_mode mode;
    size_t pad;               /* bytes of 'p' added to each answer's body */
    sk_test_buf seen;         /* what the handler saw, one record per request */
    int nreq;                 /* requests seen */
    int pending;              /* answers due on a later turn */
    sk_test_buf got;          /* what the client read */
    int reading;              /* the client reads in sk_test_http_turn (1 unless set) */
    int eof;                  /* the client read its end: 1 clean EOF, -errno an error */
    int64_t last_req_ms;      /* sk_test_now_ms() when the handler last ran */
} sk_test_http;

/** @brief A server on `base` with `opts`, serving one end of a new socketpair; the
 *  client's end (non-blocking) in t->cfd. @returns 0 or -1. */
int sk_test_http_start(sk_test_http *t, struct event_base *base, const sk_http_opts *opts,
                       sk_test_answer_mode mode);

/** @brief Frees the server (after sk_test_http_settle: no answer may be pending),
 *  closes the client's end and frees the records. */
void sk_test_http_stop(sk_test_http *t);

/** @brief One turn of the loop without blocking (or, if block_ms > 0, waiting up to
 *  that long for an event), then the client reads what there is if t->reading.
 *  @returns 1 if anything moved (a request seen, bytes read, EOF), else 0. */
int sk_test_http_turn(sk_test_http *t, int block_ms);

/** @brief Turns until nothing moves: no answer pending, every byte the client wrote
 *  taken by the server, and three quiet turns in a row (at most max_turns).
 *  @returns 0 when settled, -1 when max_turns ran out. */
int sk_test_http_settle(sk_test_http *t, int max_turns);

/** @brief Writes p[0..n) from the client, turning the loop whenever the socket is
 *  full. @returns 0, or -1 when the server's end is gone (EPIPE/ECONNRESET). */
int sk_test_http_write(sk_test_http *t, const void *p, size_t n);

/** @brief Bytes the client wrote that the server has not read yet (SIOCOUTQ). */
size_t sk_test_http_unread(const sk_test_http *t);

/** @brief Masks what differs between two runs of the same answers: the Date value
 *  (the 29 bytes after each "\r\nDate: ") and any interim "100 Continue" answer (sent
 *  only when a head came before its body); with mask_connection, every Connection
 *  line too (the server says close, or keep-alive to 1.0, on the request it knows to be
 *  the last, and when the FIN comes with requests buffered that differs with the
 *  reads). Works in place. @returns the new length. */
size_t sk_test_http_normalize(char *p, size_t n, int mask_connection);

#endif
