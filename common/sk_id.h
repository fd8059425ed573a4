/* sk_id: the one rule for a decimal id written as text (URL paths, Kafka messages).
 *
 * Ids are PostgreSQL bigints handed out from 1: an id is 1 to 19 ASCII digits, no sign,
 * no spaces, no leading zero (so "007" never aliases 7), value in [1, INT64_MAX].
 * Pure and thread-safe. */
#ifndef SK_ID_H
#define SK_ID_H

#include <stddef.h>
#include <stdint.h>

/** @brief Parses len bytes of s (not NUL-terminated) into *out.
 *  @returns 0, or -1 if s breaks the rule above (*out untouched). */
int sk_id_parse(const char *s, size_t len, uint64_t *out);

#endif
