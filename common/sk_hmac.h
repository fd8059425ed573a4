/* sk_hmac: HMAC-SHA256 (RFC 2104) with the key prepared once, for MACs computed on a
 * hot path (the seckill.orders message's, domain/sk_order_msg.h). The key's two padded
 * blocks are absorbed at _new: a MAC then costs its own blocks plus one, two struct
 * copies and no allocation (sk_jwt.c's reasoning, issue 16).
 *
 * Threads: a key is read-only after _new; any thread may MAC with it at once. */
#ifndef SK_HMAC_H
#define SK_HMAC_H

#include <stddef.h>

#define SK_HMAC_LEN 32 /* bytes of an HMAC-SHA256 */

typedef struct sk_hmac_key sk_hmac_key;

/** @brief A key made from secret[0..len) (a long one is its digest, RFC 2104).
 *  @returns the key (free with sk_hmac_key_free), or NULL (OOM, OpenSSL failure). */
sk_hmac_key *sk_hmac_key_new(const void *secret, size_t len);

/** @brief Wipes and frees k. NULL is fine. */
void sk_hmac_key_free(sk_hmac_key *k);

/** @brief out = HMAC-SHA256(k, data[0..len)). @returns 0, or -1 on an OpenSSL failure
 *  (out then means nothing: never count it as a match). */
int sk_hmac_sha256(const sk_hmac_key *k, const void *data, size_t len,
                   unsigned char out[SK_HMAC_LEN]);

/** @brief 1 if a[0..n) equals b[0..n), in time that depends on n only. */
int sk_hmac_equal(const void *a, const void *b, size_t n);

#endif
