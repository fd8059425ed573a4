/* sk_id: the one rule for a decimal number written as text (URL paths, Kafka messages,
 * token subjects, id files, command lines).
 *
 * The rule: 1 to 19 ASCII digits, no sign, no spaces, no leading zero (so "007" never
 * aliases 7; "0" alone is zero, not a leading zero). Ids are PostgreSQL bigints handed out
 * from 1, so sk_id_parse takes [1, INT64_MAX]; a caller with another range (a count, a
 * Content-Length, idgen's ids from 0) says so with sk_id_parse_range.
 * Pure and thread-safe; its own archive (seckill_id) so that binaries which do not link
 * seckill::common (the idgen CLI) share it. */
#ifndef SK_ID_H
#define SK_ID_H

#include <stddef.h>
#include <stdint.h>

/** @brief Parses len bytes of s (not NUL-terminated) as an id into *out.
 *  @returns 0, or -1 if s breaks the rule above or is outside [1, INT64_MAX] (*out untouched). */
int sk_id_parse(const char *s, size_t len, uint64_t *out);

/** @brief The same rule with the range [lo, hi] (hi at most INT64_MAX).
 *  @returns 0, or -1 (*out untouched). */
int sk_id_parse_range(const char *s, size_t len, uint64_t lo, uint64_t hi, uint64_t *out);

/** @brief sk_id_parse_range on a NUL-terminated string (command-line arguments). */
int sk_id_parse_str(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

#define SK_ID_DEC_MAX 21 /* a uint64 in decimal and its NUL */

/** @brief Writes v in decimal (NUL-terminated) into out: the rule's writer (never a
 *  leading zero). @returns its length (1..20). snprintf costs several times more. */
size_t sk_id_format(char out[SK_ID_DEC_MAX], uint64_t v);

/** @brief Writes at out the decimal of one more than the n digits at prev (as
 *  sk_id_format wrote them; out and prev do not overlap), without a NUL: a run of
 *  consecutive ids is written a copy and a carry each, not a full format.
 *  @returns 1, or 0 when one more needs another digit (all nines; out is then garbage:
 *  format that one with sk_id_format). */
int sk_id_format_succ(char *out, const char *prev, size_t n);

#endif
