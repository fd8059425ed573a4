/* fuzz_util: what every harness shares: a check that aborts with a message (so that
 * libFuzzer records the input as a crash when a parser breaks its own contract, not
 * only when it touches bad memory), and reference parsers written the slow, obvious way
 * to compare the fast ones against. Header-only: each harness is one translation unit. */
#ifndef FUZZ_UTIL_H
#define FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A broken contract is a finding like a crash: print what broke, then abort() so that
 * libFuzzer writes the input to its artifact prefix. */
#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FUZZ_CHECK failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__);        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* A NUL-terminated heap copy of n bytes (ASan then sees reads past the end). */
static inline char *fuzz_strndup(const uint8_t *p, size_t n)
{
    char *s = malloc(n + 1);
    if (!s)
        abort();
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

/* The reference for "a decimal id": digits only, 1 to `maxdigits` of them, optionally no
 * leading zero, value in [1, INT64_MAX]. Accumulates in unsigned __int128 so that it
 * cannot wrap whatever the length. @returns 0 and *out, or -1. */
static inline int fuzz_ref_id(const char *s, size_t len, size_t maxdigits, int no_leading_zero,
                              uint64_t *out)
{
    if (len == 0 || len > maxdigits || (no_leading_zero && s[0] == '0'))
        return -1;
    unsigned __int128 v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v == 0 || v > (unsigned __int128)INT64_MAX)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

#endif
