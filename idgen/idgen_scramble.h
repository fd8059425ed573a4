/* idgen_scramble: the keyed permutation of the unguessable layout (pure, no I/O).
 *
 * The low 32 bits of an ID (the day's counter) go through a balanced Feistel network of
 * IDGEN_SCRAMBLE_ROUNDS rounds over two 16-bit halves whose round function is SipHash-2-4
 * of (the ID's second, the round, the half) under a key derived from the configured
 * secret. A Feistel network is a bijection whatever its round function, so for each
 * second the 2^32 sequences map to 2^32 distinct values: IDs stay unique, 64-bit and
 * ordered by their second, but consecutive sequences land far apart, and without the key
 * the low bits say nothing about how many IDs were issued. The second is the tweak: the
 * same sequence in two seconds maps to unrelated values. Internal header: not installed. */
#ifndef IDGEN_SCRAMBLE_H
#define IDGEN_SCRAMBLE_H

#include <stddef.h>
#include <stdint.h>

/* Ten rounds, as NIST SP 800-38G's FF1 uses over small domains: with a PRF round
 * function, fewer rounds leave a 16-bit half's birthday bound within reach. */
#define IDGEN_SCRAMBLE_ROUNDS 10
/* The secret is at least a SipHash key's worth of bytes; longer ones all count. */
#define IDGEN_SECRET_MIN 16
#define IDGEN_SECRET_MAX 1024

typedef struct idgen_scramble_key {
    uint64_t k0, k1; /* the SipHash key of the round function, derived from the secret */
} idgen_scramble_key;

/** @brief SipHash-2-4 of msg[0..len-1] under (k0, k1): the reference algorithm. */
uint64_t idgen_siphash(uint64_t k0, uint64_t k1, const void *msg, size_t len);

/** @brief Derives the round key from a secret of IDGEN_SECRET_MIN..IDGEN_SECRET_MAX
 *  bytes: SipHash under the secret's first 16 bytes of the whole secret, once per key
 *  word with a different leading byte. @returns 0, or -1 on a bad length. */
int idgen_scramble_key_derive(const void *secret, size_t len, idgen_scramble_key *out);

/** @brief The permuted sequence of `seq` for the ID second `offset` (seconds since the
 *  layout's epoch). A bijection on 32 bits for each (key, offset). */
uint32_t idgen_scramble_seq(const idgen_scramble_key *k, uint32_t offset, uint32_t seq);

/** @brief The inverse: idgen_unscramble_seq(k, o, idgen_scramble_seq(k, o, s)) == s. */
uint32_t idgen_unscramble_seq(const idgen_scramble_key *k, uint32_t offset, uint32_t v);

#endif
