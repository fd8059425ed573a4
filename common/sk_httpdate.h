/* sk_httpdate: the HTTP Date header's value (RFC 9110 IMF-fixdate, "Sun, 06 Nov 1994
 * 08:49:37 GMT"), formatted once per second and reused. evhttp formats it for every
 * answer that has none (gmtime and snprintf: 3.4k instructions per placed order, issue
 * 16); an answer that carries this one skips that. Pure: the caller gives the time.
 * Not thread-safe: one sk_httpdate per thread (seckill-order: per worker loop). */
#ifndef SK_HTTPDATE_H
#define SK_HTTPDATE_H

#include <stdint.h>

typedef struct sk_httpdate {
    int64_t sec;   /* the second text[] was made for; -1 (sk_httpdate_init) when none yet */
    char text[32]; /* NUL-terminated, 29 characters */
} sk_httpdate;

/** @brief Starts empty: the first sk_httpdate_get formats. (A zeroed struct works too,
 *  then the epoch's second is formatted on first use as any other.) */
void sk_httpdate_init(sk_httpdate *d);

/** @brief The Date value for `now_s` (seconds since the Unix epoch, UTC), formatted
 *  only when the second changed. @returns d->text, valid until the next call on d. */
const char *sk_httpdate_get(sk_httpdate *d, int64_t now_s);

#endif
