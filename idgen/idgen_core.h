/* idgen_core: the pure part of libidgen (no I/O, no threads, no clock of its own).
 *
 * Bit layout, UTC day numbers and day-key names, the effective clock that never goes
 * back, the checks on a leased range (reset, exhaustion) and the adaptive segment size.
 * Everything here is a function of its arguments, so the unit tests drive it with
 * made-up times and counters. Internal header: not installed. */
#ifndef IDGEN_CORE_H
#define IDGEN_CORE_H

#include <stddef.h>
#include <stdint.h>

/* 2024-01-01T00:00:00Z in Unix seconds: second 0 of the layout. */
#define IDGEN_EPOCH_UNIX 1704067200LL
/* The last second the 31-bit field can hold. */
#define IDGEN_MAX_OFFSET 0x7FFFFFFFLL
#define IDGEN_SEQ_MAX    0xFFFFFFFFULL
#define IDGEN_DAY_SECS   86400LL

/* Longest day key: "icr:" + prefix + ":" + 8 digits + NUL. */
#define IDGEN_PREFIX_MAX 200
#define IDGEN_KEY_MAX    (4 + IDGEN_PREFIX_MAX + 1 + 8 + 1)

/** @brief Whether unix_seconds fits the layout (epoch .. epoch + 2^31 - 1). */
static inline int idgen_core_time_ok(int64_t unix_seconds)
{
    return unix_seconds >= IDGEN_EPOCH_UNIX && unix_seconds - IDGEN_EPOCH_UNIX <= IDGEN_MAX_OFFSET;
}

/** @brief The ID for a time that idgen_core_time_ok accepted. No checks: the hot path. */
static inline uint64_t idgen_core_pack(int64_t unix_seconds, uint32_t seq)
{
    return ((uint64_t)(unix_seconds - IDGEN_EPOCH_UNIX) << 32) | seq;
}

/** @brief The UTC day number (days since 1970-01-01) of a Unix time; floors for
 *  negative times. */
static inline int64_t idgen_core_day(int64_t unix_seconds)
{
    int64_t d = unix_seconds / IDGEN_DAY_SECS;
    return (unix_seconds % IDGEN_DAY_SECS < 0) ? d - 1 : d;
}

/** @brief Splits a UTC day number into a civil date (proleptic Gregorian). */
void idgen_core_civil(int64_t day, int *year, int *month, int *mday);

/** @brief Writes "icr:<prefix>:<yyyymmdd>" for `day` into buf.
 *  @returns the length, or -1 if it does not fit bufsize. */
int idgen_core_day_key(const char *prefix, int64_t day, char *buf, size_t bufsize);

/** @brief Whether a prefix is usable in a key: 1..IDGEN_PREFIX_MAX printable bytes, no
 *  space, no ':' (so a key names exactly one prefix and one day). */
int idgen_core_prefix_ok(const char *prefix);

/** @brief The second to stamp: the clock, but never before `high_water`, the latest
 *  second this generator already stamped. A clock that steps back keeps stamping
 *  high_water until it catches up, so a day never comes back once left. */
static inline int64_t idgen_core_stamp(int64_t now_s, int64_t high_water)
{
    return now_s > high_water ? now_s : high_water;
}

/** @brief Seconds the day key should live from `now_s`: to the end of `day` plus
 *  ttl_days. Relative (EXPIRE, not EXPIREAT) so that a Redis clock that disagrees with
 *  ours can never expire a key still in use. Always > 0. */
int64_t idgen_core_key_ttl(int64_t day, int64_t now_s, int ttl_days);

/* What a leased range [first, last] means for a day whose highest number this
 * generator has already seen is `seen` (0: none). */
typedef enum {
    IDGEN_LEASE_OK = 0,        /* all of it is new and fits 32 bits */
    IDGEN_LEASE_PARTIAL = 1,   /* new, but only [first, 2^32-1] fits: the rest is lost */
    IDGEN_LEASE_EXHAUSTED = 2, /* first is past 2^32-1: the day has run out */
    IDGEN_LEASE_RESET = 3,     /* first <= seen: the counter went back; use none of it */
} idgen_lease_verdict;

/** @brief Classifies a leased range. A reset wins over exhaustion: it must be reported. */
idgen_lease_verdict idgen_core_lease_check(uint64_t first, uint64_t last, uint64_t seen);

/** @brief The next segment size from the current one and how long the current one
 *  lasted (projected to its whole length): grows towards cur * target / lasted (at most
 *  8x a step) when it lasted under half of target_ms, halves over twice target_ms,
 *  stays put in between (hysteresis), and always lies in [min, max]. */
uint32_t idgen_core_next_size(uint32_t cur, int64_t lasted_ms, int64_t target_ms, uint32_t min,
                              uint32_t max);

/* The highest value seen per UTC day, in two slots by day parity: days only move
 * forward, and two threads may straddle midnight. Pure: the caller locks. */
typedef struct idgen_day_mark {
    int64_t day[2];
    uint64_t v[2];
} idgen_day_mark;

/** @brief Empties m (no day has a mark). */
void idgen_day_mark_init(idgen_day_mark *m);

/** @brief The mark of `day`, 0 when it has none. */
uint64_t idgen_day_mark_get(const idgen_day_mark *m, int64_t day);

/** @brief Raises the mark of `day` to v (never lowers it); a later day replaces the
 *  earlier one of its parity, an earlier day is ignored. */
void idgen_day_mark_raise(idgen_day_mark *m, int64_t day, uint64_t v);

/** @brief Formats the UTC time of unix_seconds as "2026-11-22T07:00:00Z" into buf
 *  (at least 21 bytes). */
void idgen_core_format_utc(int64_t unix_seconds, char *buf, size_t bufsize);

#endif
