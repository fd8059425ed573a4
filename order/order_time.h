/* order_time: RFC 3339 timestamps to and from milliseconds since the Unix epoch.
 * Pure functions (no time zone database, no locale), unit-tested. */
#ifndef ORDER_TIME_H
#define ORDER_TIME_H

#include <stddef.h>
#include <stdint.h>

/** @brief Parses "YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)" (len bytes; 't'/'z' and a
 *  space for 'T' accepted), years 1970..9999, fraction truncated to milliseconds.
 *  @returns 0 and *ms, or -1 if malformed or out of range. */
int order_time_parse_rfc3339(const char *s, size_t len, int64_t *ms);

/** @brief Writes ms as "YYYY-MM-DDTHH:MM:SS.mmmZ" (24 chars + NUL) into out (>= 25 bytes).
 *  @returns out. */
char *order_time_format_rfc3339(int64_t ms, char *out, size_t outsz);

/** @brief Wall clock, milliseconds since the Unix epoch. */
int64_t order_time_now_ms(void);

/** @brief Monotonic clock in microseconds (latency, token buckets). */
int64_t order_time_mono_us(void);

#endif
