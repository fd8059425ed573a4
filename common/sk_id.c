/* sk_id: decimal ids. See sk_id.h. */
#include "sk_id.h"

int sk_id_parse(const char *s, size_t len, uint64_t *out)
{
    /* 19 digits hold every int64; PostgreSQL's bigint is signed, so INT64_MAX is the cap. */
    if (len == 0 || len > 19 || s[0] == '0')
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0'); /* cannot wrap: 19 digits < 2^64 */
    }
    if (v > (uint64_t)INT64_MAX)
        return -1;
    *out = v;
    return 0;
}
