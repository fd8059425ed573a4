/* sk_pow: the challenge's proof of work. See sk_pow.h. */
#include "sk_pow.h"

/* SHA256_Init/Update/Final: the challenge's blocks are hashed once and the state copied
 * per counter, which EVP cannot do without allocating (as sk_jwt.c). */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

static unsigned leading_zeros(const unsigned char h[SHA256_DIGEST_LENGTH])
{
    unsigned n = 0;
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++) {
        if (h[i] == 0) {
            n += 8;
            continue;
        }
        for (unsigned char b = h[i]; !(b & 0x80); b <<= 1)
            n++;
        break;
    }
    return n;
}

unsigned sk_pow_zero_bits(const char *s, size_t len)
{
    /* SHA256_Init/Update/Final, not SHA256(): OpenSSL 3's one-shot goes through EVP (a
     * fetch, a lock, a malloc and a free), half of what a check costs otherwise. */
    unsigned char h[SHA256_DIGEST_LENGTH];
    SHA256_CTX c;
    SHA256_Init(&c);
    SHA256_Update(&c, s, len);
    SHA256_Final(h, &c);
    return leading_zeros(h);
}

int sk_pow_solve(const char *challenge, size_t len, unsigned bits, uint64_t from,
                 uint64_t max_tries, char *out, size_t outsz, uint64_t *tries)
{
    if (tries)
        *tries = 0;
    if (len + 22 > outsz)
        return -1;
    memcpy(out, challenge, len);
    out[len] = '.';
    SHA256_CTX base;
    SHA256_Init(&base);
    SHA256_Update(&base, out, len + 1);
    unsigned char h[SHA256_DIGEST_LENGTH];
    for (uint64_t i = 0; i < max_tries; i++) {
        char num[24];
        int n = snprintf(num, sizeof(num), "%llu", (unsigned long long)(from + i));
        SHA256_CTX c = base;
        SHA256_Update(&c, num, (size_t)n);
        SHA256_Final(h, &c);
        if (leading_zeros(h) >= bits) {
            if (tries)
                *tries = i + 1;
            memcpy(out + len + 1, num, (size_t)n + 1);
            return (int)len + 1 + n;
        }
    }
    if (tries)
        *tries = max_tries;
    return -1;
}
