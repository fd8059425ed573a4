/* order_challenge: the proof-of-work challenge an event may put before its orders
 * (issue 31 item 3), signed and checked without any store. Pure (OpenSSL's SHA-256 only).
 *
 * A challenge is issued to one user for one event:
 *     1.<event_id>.<bits>.<expires_ms>.<nonce:16 hex>.<mac:32 hex>
 * where mac is the first 16 bytes of HMAC-SHA256(key, "<user_id>." + everything before
 * ".<mac>"): the user is bound by the MAC without being written in the challenge. The
 * buyer finds a decimal counter such that SHA-256 of
 *     <challenge>.<counter>
 * (the solution, sent whole in the order's Seckill-Challenge header) starts with `bits`
 * zero bits, about 2^bits hashes (common/sk_pow.h: the rule, and a solver); the front checks it with one HMAC and one SHA-256
 * (each two or three compression blocks), and needs neither Redis nor PostgreSQL.
 *
 * Two keys: the current one signs and verifies, the previous one (optional) verifies
 * only, so a key is rotated without refusing the challenges of its last ttl. A key is
 * read-only once made: thread-safe. */
#ifndef ORDER_CHALLENGE_H
#define ORDER_CHALLENGE_H

#include <stddef.h>
#include <stdint.h>

#define ORDER_CHALLENGE_BITS_MIN 1
#define ORDER_CHALLENGE_BITS_MAX 32 /* 2^32 hashes: hours in a browser, the bound's why */
#define ORDER_CHALLENGE_MAX 128     /* a challenge's text, NUL included */
#define ORDER_CHALLENGE_SOLUTION_MAX 160 /* a solution's text (challenge.counter) */
#define ORDER_CHALLENGE_HEADER "Seckill-Challenge"
/* The event's challenge_bits for the other kind, a per-user hidden order path (the seed's
 * form): POST /api/v1/events/{id}/orders/<path token>, the token given out by GET
 * .../order-path once the sale started; HMAC of "p.<user>.<event>", 32 hex digits. */
#define ORDER_CHALLENGE_PATH (-1)
#define ORDER_CHALLENGE_PATH_TOKEN 32

typedef enum {
    ORDER_CHALLENGE_OK = 0,
    ORDER_CHALLENGE_ERR_SHAPE = -1,   /* not a solution's form: 400 */
    ORDER_CHALLENGE_ERR_INVALID = -2, /* another event, user or key, or too few zero bits */
    ORDER_CHALLENGE_ERR_EXPIRED = -3, /* signed, but past its expiry */
} order_challenge_status;

typedef struct order_challenge_key order_challenge_key;

/** @brief Makes a key from the current secret (required, >= 1 byte) and the previous one
 *  (NULL or empty: none). @returns the key (order_challenge_key_free) or NULL on OOM. */
order_challenge_key *order_challenge_key_new(const unsigned char *cur, size_t cur_len,
                                             const unsigned char *prev, size_t prev_len);
/** @brief The key of a configuration: challenge.key (`key`), or when it is empty one
 *  derived from jwt.secret under a label of its own (so a challenge's MAC is never a
 *  token's); `prev` (challenge.key_previous) may be empty. @returns as _key_new. */
order_challenge_key *order_challenge_key_of_config(const char *key, const char *prev,
                                                   const char *jwt_secret);

/** @brief Wipes and frees; NULL is fine. */
void order_challenge_key_free(order_challenge_key *k);

/** @brief Writes the challenge for (user, event, bits) expiring at expires_ms with a
 *  random `nonce` into out (NUL-terminated, ORDER_CHALLENGE_MAX bytes are enough).
 *  @returns its length, or -1 if out is too small. */
int order_challenge_issue(const order_challenge_key *k, uint64_t user_id, uint64_t event_id,
                          unsigned bits, int64_t expires_ms, uint64_t nonce, char *out,
                          size_t outsz);

/** @brief Checks a solution (len bytes, not NUL-terminated) for user and event at now_ms:
 *  its shape, then its MAC (current key, then previous), then its expiry, then that its
 *  bits are at least `min_bits` and its SHA-256 has as many leading zero bits.
 *  @returns an order_challenge_status. */
int order_challenge_verify(const order_challenge_key *k, const char *solution, size_t len,
                           uint64_t user_id, uint64_t event_id, unsigned min_bits, int64_t now_ms);

/** @brief Writes user's hidden order path token for event into out (ORDER_CHALLENGE_PATH_TOKEN
 *  hex digits and a NUL), with the current key. */
void order_challenge_path_token(const order_challenge_key *k, uint64_t user_id, uint64_t event_id,
                                char out[ORDER_CHALLENGE_PATH_TOKEN + 1]);

/** @brief 1 if `tok` (len bytes) is user's path token for event under the current or the
 *  previous key (compared in constant time), else 0. */
int order_challenge_path_ok(const order_challenge_key *k, uint64_t user_id, uint64_t event_id,
                            const char *tok, size_t len);

/** @brief The bits of a challenge text (its third field), or -1 if it is not one. */
int order_challenge_bits_of(const char *challenge, size_t len);

/** @brief A short message for a status (the 400/403 body). */
const char *order_challenge_strerror(int status);

#endif
