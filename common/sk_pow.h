/* sk_pow: the proof of work of the order challenge (issue 31), the rule every party
 * shares: a solution is "<challenge>.<counter>" (counter: 1 to 20 decimal digits) whose
 * SHA-256 starts with at least `bits` zero bits. seckill-order checks it
 * (order/order_challenge.c, which also signs the challenge), seckill-bench and the tests
 * solve with it; the console solves the same rule in JavaScript (order/console/).
 * Pure, thread-safe. */
#ifndef SK_POW_H
#define SK_POW_H

#include <stddef.h>
#include <stdint.h>

/** @brief The leading zero bits of SHA-256(s, len). */
unsigned sk_pow_zero_bits(const char *s, size_t len);

/** @brief Solves: writes "<challenge>.<counter>" into out (NUL-terminated) with the first
 *  counter from `from` whose SHA-256 has `bits` leading zero bits, trying at most
 *  `max_tries`. @returns the solution's length, or -1 (none found, or out too small:
 *  it needs len + 22 bytes); *tries (may be NULL) gets the hashes computed. */
int sk_pow_solve(const char *challenge, size_t len, unsigned bits, uint64_t from,
                 uint64_t max_tries, char *out, size_t outsz, uint64_t *tries);

#endif
