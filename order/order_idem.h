/* order_idem: Idempotency-Key on POST .../orders, .../pay and .../cancel (issue 31; the
 * IETF httpapi draft "The Idempotency-Key HTTP Header Field").
 *
 * A client that did not read an answer (a socket cut on a train) sends the same request
 * again with the same key and gets the first answer again, not a second order. Per user
 * and key, Redis holds "seckill:idem:{u<user>}:<key>":
 *   "p <fp>"                  while the first request is being decided (ORDER_IDEM_CLAIM_TTL_S),
 *   "d <fp> <status> <body>"  its answer, kept ORDER_IDEM_TTL_S,
 * where <fp> is the request's fingerprint (route, path id and body), so that a key used
 * again for another request is told apart. The answers chosen (order/README.md): the
 * same request while the first is being decided, 409 in_progress (the draft's choice; a
 * wait would hold a connection per impatient retry); the same key for another request,
 * 422 key_reused (the draft's). Answers of 5xx and 429 are not kept: the key is freed,
 * and the retry runs anew (nothing was decided for it).
 *
 * This file is pure (order_core): the key's check, the fingerprint, the stored values.
 * order_idem_http.c does the Redis calls and the capture of answers. */
#ifndef ORDER_IDEM_H
#define ORDER_IDEM_H

#include <stddef.h>
#include <stdint.h>

/* The longest key taken (the draft leaves it to the server). */
#define ORDER_IDEM_KEY_MAX 255

/* How long an answer is kept for its key (the draft suggests 24 hours). */
#define ORDER_IDEM_TTL_S 86400

/* How long a key claimed by a request still being decided holds: past every deadline of
 * the routes (Kafka's message timeout, the PostgreSQL pool's), so that a front that died
 * mid-request frees the key for the retry within a minute. */
#define ORDER_IDEM_CLAIM_TTL_S 60

/* Room for "seckill:idem:{u<20 digits>}:" and the key. */
#define ORDER_IDEM_RKEY_MAX (40 + ORDER_IDEM_KEY_MAX)

/** @brief Checks a header value of len bytes: 1 to ORDER_IDEM_KEY_MAX visible ASCII
 *  characters or spaces (no control character, no byte over 0x7e). @returns 0, or -1
 *  with a message naming the header in msg. */
int order_idem_key_check(const char *key, size_t len, char *msg, size_t msgsz);

/** @brief The fingerprint of a request: FNV-1a 64 over the route, the id in its path and
 *  its body. */
uint64_t order_idem_fingerprint(int route, uint64_t path_id, const char *body, size_t len);

/** @brief "seckill:idem:{u<user>}:<key>" into out (>= ORDER_IDEM_RKEY_MAX). @returns the
 *  length. */
size_t order_idem_redis_key(uint64_t user, const char *key, size_t klen, char *out, size_t outsz);

/** @brief "p <fp>" into out (>= 24). @returns the length. */
size_t order_idem_encode_claim(uint64_t fp, char *out, size_t outsz);

/** @brief "d <fp> <status> <body>", malloc'd (the caller frees it) with its length in
 *  *len. @returns it, or NULL when memory is short. */
char *order_idem_encode_answer(uint64_t fp, int status, const char *body, size_t blen, size_t *len);

/* What a stored value says about a request of fingerprint fp. */
typedef enum {
    ORDER_IDEM_REPLAY = 0,  /* its answer: status and body */
    ORDER_IDEM_IN_PROGRESS, /* the same request, still being decided */
    ORDER_IDEM_MISMATCH,    /* another request used this key */
    ORDER_IDEM_CORRUPT      /* not a value of ours */
} order_idem_verdict;

/** @brief Decodes a stored value v (len bytes) against fp. For a replay, *status and
 *  *body, *blen (pointing into v) are set. */
order_idem_verdict order_idem_decide(const char *v, size_t len, uint64_t fp, int *status,
                                     const char **body, size_t *blen);

/** @brief Whether an answer of this status is kept for its key (not a 5xx, not a 429). */
int order_idem_keeps(int status);

#endif
