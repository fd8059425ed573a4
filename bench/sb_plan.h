/* sb_plan: who sends request number i, and where requests go.
 *
 * Users are 1..N. Requests are dealt in rounds of N: each round is a permutation of
 * every user (i * A + round * B + C mod N with A coprime to N), so a run of R requests
 * gives every user R/N tries, spread far apart: the first round is the burst of distinct
 * buyers, later rounds are the repeat tries, which come back as "duplicate" for
 * winners and "sold_out" for the others. Deterministic for a seed, pure, thread-safe. */
#ifndef SB_PLAN_H
#define SB_PLAN_H

#include <stddef.h>
#include <stdint.h>

typedef struct sb_plan {
    uint64_t users; /* N >= 1 */
    uint64_t a, b, c;
} sb_plan;

/** @brief Prepares the permutation for `users` users and `seed`. @returns 0, or -1 if users is 0. */
int sb_plan_init(sb_plan *p, uint64_t users, uint64_t seed);

/** @brief The user (1..N) of request number i (0-based). */
uint64_t sb_plan_user(const sb_plan *p, uint64_t i);

/* A base URL: http://host[:port][/prefix]. */
typedef struct sb_url {
    char host[256];
    char port[8];     /* text, for getaddrinfo and the Host header */
    char prefix[256]; /* path before /api/v1, without a trailing '/' ("" for none) */
} sb_url;

/** @brief Parses one base URL. @returns 0, or -1 with a message in errstr. */
int sb_url_parse(const char *s, size_t len, sb_url *out, char *errstr, size_t errstr_size);

/** @brief Parses a comma-separated list of base URLs into out[0..max).
 *  @returns how many (>= 1), or -1 with a message in errstr. */
int sb_url_parse_list(const char *s, sb_url *out, int max, char *errstr, size_t errstr_size);

#endif
