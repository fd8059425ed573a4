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

size_t sk_id_format(char out[SK_ID_DEC_MAX], uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    out[n] = 0;
    return n;
}
