/* sk_id: decimal ids. See sk_id.h. */
#include "sk_id.h"

#include <string.h>

int sk_id_parse_range(const char *s, size_t len, uint64_t lo, uint64_t hi, uint64_t *out)
{
    /* 19 digits hold every int64; PostgreSQL's bigint is signed, so INT64_MAX is the cap. */
    if (len == 0 || len > 19 || (s[0] == '0' && len > 1))
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0'); /* cannot wrap: 19 digits < 2^64 */
    }
    if (v < lo || v > hi || v > (uint64_t)INT64_MAX)
        return -1;
    *out = v;
    return 0;
}

int sk_id_parse(const char *s, size_t len, uint64_t *out)
{
    return sk_id_parse_range(s, len, 1, (uint64_t)INT64_MAX, out);
}

int sk_id_parse_str(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    return s ? sk_id_parse_range(s, strlen(s), lo, hi, out) : -1;
}

/* Written from the end once the length is known (from the bit length, not by
 * dividing), eight digits per 64-bit division and two per table lookup: a placed order
 * formats ids about ten times, and the digit-at-a-time loop with its reversal was 4.6k
 * instructions of it (issue 16). */
static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324"
                                     "25262728293031323334353637383940414243444546474849"
                                     "50515253545556575859606162636465666768697071727374"
                                     "75767778798081828384858687888990919293949596979899";

size_t sk_id_format(char out[SK_ID_DEC_MAX], uint64_t v)
{
    /* The length from the bit length (log10(2) ~ 1233/4096), then one comparison. */
    static const uint64_t pow10[20] = {1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL,
                                       1000000ULL, 10000000ULL, 100000000ULL, 1000000000ULL,
                                       10000000000ULL, 100000000000ULL, 1000000000000ULL,
                                       10000000000000ULL, 100000000000000ULL,
                                       1000000000000000ULL, 10000000000000000ULL,
                                       100000000000000000ULL, 1000000000000000000ULL,
                                       10000000000000000000ULL};
    unsigned bits = v ? 64u - (unsigned)__builtin_clzll(v) : 1u;
    size_t n = (size_t)((bits * 1233u) >> 12); /* v has n or n + 1 digits (n <= 19)... */
    n += n < 20 && v >= pow10[n];             /* ...and one comparison says which */
    if (n == 0)
        n = 1;
    out[n] = 0;
    char *p = out + n;
    /* Eight digits at a time in 32-bit arithmetic (one 64-bit division per eight
     * digits instead of one per two), then pairs. */
    while (v >= 100000000) {
        uint32_t lo = (uint32_t)(v % 100000000);
        v /= 100000000;
        uint32_t a = lo / 10000, b = lo % 10000;
        memcpy(p - 2, digit_pairs + (b % 100) * 2, 2);
        memcpy(p - 4, digit_pairs + (b / 100) * 2, 2);
        memcpy(p - 6, digit_pairs + (a % 100) * 2, 2);
        memcpy(p - 8, digit_pairs + (a / 100) * 2, 2);
        p -= 8;
    }
    uint32_t w = (uint32_t)v;
    while (w >= 100) {
        memcpy(p - 2, digit_pairs + (w % 100) * 2, 2);
        w /= 100;
        p -= 2;
    }
    if (w >= 10) {
        memcpy(p - 2, digit_pairs + w * 2, 2);
    } else {
        *--p = (char)('0' + w);
    }
    return n;
}

int sk_id_format_succ(char *out, const char *prev, size_t n)
{
    memcpy(out, prev, n);
    for (size_t i = n; i-- > 0;) {
        if (out[i] != '9') {
            out[i]++;
            return 1;
        }
        out[i] = '0';
    }
    return 0;
}
