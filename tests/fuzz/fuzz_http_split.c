/* fuzz_http_split: sk_http's connection layer (common/sk_http.c) fed the same bytes
 * twice over a socketpair: once in one write, once cut into pieces, the loop settling
 * after each piece (so each piece is a read of its own, or several when the server had
 * paused). The handler must see the same requests (method, target, every header,
 * framing, body) and the client the same answers (their Date and a 100 Continue, which
 * only a head that came before its body gets, masked), and after the client's FIN the
 * server must close once everything is answered. The driver and the stub handler are
 * the unit test's (tests/support/sk_test_http.h).
 *
 * Input: byte 0 = flags: bits 0-1 the bounds (below), bits 2-3 when the handler answers
 * (at once, every other on a later turn, all later), bit 4 a large answer body (past
 * the socket's buffer: the answer waits for EV_WRITE), bit 5 the FIN at once after the
 * last piece, the loop not settled first (it may find requests still buffered, and the
 * answers' Connection lines are then masked: which request the server knows to be the
 * last differs with the reads). Byte 1: how many split bytes
 * follow (mod 33); each is a piece's length minus one, used in turn; none: one byte a
 * piece. The rest: the client's bytes. */
#include "fuzz_util.h"
#include "sk_http.h"
#include "sk_test_http.h"

#include <event2/event.h>
#include <sys/socket.h>

#define TURNS 100000 /* a settle's bound: a run that needs more is a finding (a stall) */

static const sk_http_opts opts_of[4] = {
    {.max_header_bytes = 8192, .max_body_bytes = 6000, .allow = "GET, POST"}, /* grows */
    {.max_header_bytes = 64, .max_body_bytes = 16, .allow = "GET"},          /* tight */
    {.max_header_bytes = 512, .max_body_bytes = -1, .allow = "GET, HEAD"},    /* no body */
    {.max_header_bytes = 300, .max_body_bytes = 300, .allow = NULL},
};

typedef struct run {
    sk_test_buf seen, got;
    int nreq;
} run;

static struct event_base *base;

/* 1 if a and b hold the same bytes (an empty buffer's pointer is NULL). */
static int same(const sk_test_buf *a, const sk_test_buf *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

/* Feeds data[0..n) in pieces (lens NULL: one piece), then the FIN; keeps what the
 * handler saw and the client read in *out. */
static void feed(const uint8_t *data, size_t n, const uint8_t *lens, size_t nlens, int flags,
                 run *out)
{
    sk_test_http t;
    FUZZ_CHECK(sk_test_http_start(&t, base, &opts_of[flags & 3],
                                  (sk_test_answer_mode)((flags >> 2 & 3) % 3)) == 0);
    t.pad = flags & 16 ? 240000 : 0;
    size_t at = 0;
    for (size_t k = 0; at < n; k++) {
        size_t piece = !lens ? n : nlens ? (size_t)lens[k % nlens] + 1 : 1;
        if (piece > n - at)
            piece = n - at;
        if (sk_test_http_write(&t, data + at, piece) != 0)
            break; /* the server's end is gone: the rest is never read either way */
        at += piece;
        if (at < n || !(flags & 32))
            FUZZ_CHECK(sk_test_http_settle(&t, TURNS) == 0);
    }
    shutdown(t.cfd, SHUT_WR);
    for (int i = 0; i < TURNS && !t.eof; i++)
        sk_test_http_turn(&t, 0);
    FUZZ_CHECK(t.eof != 0); /* closed once every request is answered */
    FUZZ_CHECK(sk_test_http_settle(&t, TURNS) == 0);
    out->seen = t.seen;
    out->got = t.got;
    out->got.len = sk_test_http_normalize(t.got.p, t.got.len, flags & 32);
    out->nreq = t.nreq;
    t.seen = (sk_test_buf){0};
    t.got = (sk_test_buf){0};
    sk_test_http_stop(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    if (!base && !(base = event_base_new()))
        abort();
    int flags = data[0];
    size_t nlens = data[1] % 33;
    if (size < 2 + nlens)
        return 0;
    const uint8_t *lens = data + 2, *bytes = data + 2 + nlens;
    size_t n = size - 2 - nlens;

    run one, split;
    feed(bytes, n, NULL, 0, flags, &one);
    feed(bytes, n, lens, nlens, flags, &split);
    if (one.nreq != split.nreq || !same(&one.seen, &split.seen)) {
        fprintf(stderr, "one read: %d requests\n%.*s\nsplit: %d requests\n%.*s\n", one.nreq,
                (int)one.seen.len, one.seen.p, split.nreq, (int)split.seen.len, split.seen.p);
        FUZZ_CHECK(!"the handler saw other requests");
    }
    if (!same(&one.got, &split.got)) {
        fprintf(stderr, "one read:\n%.*s\nsplit:\n%.*s\n", (int)one.got.len, one.got.p,
                (int)split.got.len, split.got.p);
        FUZZ_CHECK(!"the client read other answers");
    }
    free(one.seen.p);
    free(one.got.p);
    free(split.seen.p);
    free(split.got.p);
    return 0;
}
