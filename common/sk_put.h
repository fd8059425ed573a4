/* sk_put: bounded appends into a caller's buffer, for the short texts written on hot
 * paths (the seckill.orders message, the order events' JSON), where snprintf cost several
 * times more (order/README.md, callgrind; consumer/consumer_walproto.c, perf).
 * Header-only and pure: each piece is a memcpy.
 *
 * The rule: *at is the length written so far, the buffer NUL-terminated after it. A piece
 * that does not fit with its NUL writes nothing and sets *at to outsz, which is never a
 * valid length, and every later piece leaves it so: the caller checks once, at the end,
 * that *at < outsz. */
#ifndef SK_PUT_H
#define SK_PUT_H

#include <stddef.h>
#include <string.h>

/** @brief Appends the n bytes of s at out + *at (see the rule above). */
static inline void sk_put(char *out, size_t outsz, size_t *at, const char *s, size_t n)
{
    if (*at >= outsz || outsz - *at <= n) {
        *at = outsz;
        return;
    }
    memcpy(out + *at, s, n);
    *at += n;
    out[*at] = 0;
}

/* A string literal's bytes, with the caller's `out`, `outsz` and `at` (a size_t). */
#define SK_PUT_LIT(lit) sk_put(out, outsz, &at, (lit), sizeof(lit) - 1)

#endif
