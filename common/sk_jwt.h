/* sk_jwt: JSON Web Tokens signed with HS256 (HMAC-SHA256), minted and verified.
 *
 * Shared by seckill-order (verifies every request's bearer token) and the load
 * generator and token tools (mint). Only HS256 is accepted: a token whose header
 * names any other algorithm, "none" included, is refused before any signature work
 * (the classic alg-confusion attacks). `sub` is the user id (a decimal string, or a
 * JSON integer), `role` is optional ("admin" grants admin calls), `exp` is required;
 * `nbf` and `iat`, when present, must be integers no later than now plus a small clock
 * leeway (a token from the future is refused). base64url parts must be canonical: the
 * unused low bits of the last character are zero, so each token has one spelling.
 * sk_jwt_verify and sk_jwt_mint are pure and thread-safe; sk_jwt_key is per thread. */
#ifndef SK_JWT_H
#define SK_JWT_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    SK_JWT_OK = 0,
    SK_JWT_MALFORMED = -1, /* not three base64url parts of JSON, or a claim of the wrong type */
    SK_JWT_BAD_ALG = -2,   /* header alg is not HS256 (none, RS256, ...) */
    SK_JWT_BAD_SIG = -3,   /* signature does not match */
    SK_JWT_EXPIRED = -4,   /* exp is in the past (or missing) */
    SK_JWT_BAD_SUB = -5,   /* sub missing, not a decimal user id, 0, or over 63 bits */
    SK_JWT_NOT_YET = -6,   /* nbf or iat later than now + leeway */
} sk_jwt_status;
#define SK_JWT_STATUS_LAST SK_JWT_NOT_YET /* the lowest status value */

/* Clock leeway (seconds) for nbf/iat by default: issuers' clocks drift a little. */
#define SK_JWT_DEFAULT_LEEWAY_S 60

typedef struct sk_jwt_claims {
    uint64_t sub;    /* the user id */
    int is_admin;    /* role == "admin" */
    int64_t exp;     /* seconds since the Unix epoch */
} sk_jwt_claims;

/* Longest token sk_jwt_verify looks at; longer is SK_JWT_MALFORMED. */
#define SK_JWT_MAX_LEN 2048

/** @brief Verifies `token` (len bytes, not NUL-terminated) with `secret` at time `now`
 *  (seconds since the Unix epoch) and fills *claims. @returns SK_JWT_OK or a negative
 *  sk_jwt_status; *claims is only valid on SK_JWT_OK. */
int sk_jwt_verify(const char *token, size_t len, const unsigned char *secret, size_t secret_len,
                  int64_t now, sk_jwt_claims *claims);

/* A secret made ready for many verifies: the HMAC key schedule is done once, so a verify
 * costs the token's SHA-256 blocks and its JSON (about a quarter of sk_jwt_verify here).
 * NOT thread-safe: one key per thread (seckill-order keeps one per worker). The key
 * copies what it needs of the secret; the caller may free the secret afterwards. */
typedef struct sk_jwt_key sk_jwt_key;

/** @returns a new key (free with sk_jwt_key_free, which wipes it), or NULL when
 *  memory ran out or OpenSSL's SHA-256 failed. */
sk_jwt_key *sk_jwt_key_new(const unsigned char *secret, size_t secret_len);
void sk_jwt_key_free(sk_jwt_key *key);

/** @brief Sets the nbf/iat leeway of this key (seconds, >= 0; default
 *  SK_JWT_DEFAULT_LEEWAY_S). */
void sk_jwt_key_set_leeway(sk_jwt_key *key, int64_t seconds);

/** @brief sk_jwt_verify with a prepared key: same checks, same results (with the key's
 *  leeway; sk_jwt_verify uses SK_JWT_DEFAULT_LEEWAY_S). */
int sk_jwt_key_verify(sk_jwt_key *key, const char *token, size_t len, int64_t now,
                      sk_jwt_claims *claims);

/** @brief Writes an HS256 token for `sub` (with role "admin" if is_admin) expiring at `exp`
 *  into out (NUL-terminated). @returns the token length, or -1 if out is too small. */
int sk_jwt_mint(const unsigned char *secret, size_t secret_len, uint64_t sub, int is_admin,
                int64_t exp, char *out, size_t outsz);

/** @brief A static, short description of an sk_jwt_status. */
const char *sk_jwt_strerror(int status);

/* base64url without padding (RFC 4648 section 5), exposed for tests and tools. */
size_t sk_b64url_encode(const unsigned char *in, size_t len, char *out);
/** @returns the decoded length, or -1 on a character outside the alphabet, a bad length,
 *  or a last character whose unused low bits are not zero (a non-canonical spelling). */
long sk_b64url_decode(const char *in, size_t len, unsigned char *out, size_t outsz);

#endif
