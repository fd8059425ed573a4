/* sb_plan: who sends request number i, and where requests go.
 *
 * Users are 1..N; a run plans R requests (R a multiple of N: every user tries exactly
 * R/N times). Request i goes to user perm(i) mod N + 1, where perm is a pseudo-random
 * permutation of [0, R) (a 4-round Feistel network on the next even power of two,
 * walking the cycle back into range). So each user's tries land at random moments of
 * the run: some winners retry while stock lasts ("duplicate"), most retries come after
 * it is gone ("sold_out"), as with real buyers pressing the button again. Requests past
 * R (a run by duration) start the plan over. Deterministic for a seed, pure,
 * thread-safe. */
#ifndef SB_PLAN_H
#define SB_PLAN_H

#include <stddef.h>
#include <stdint.h>

typedef struct sb_plan {
    uint64_t users; /* N >= 1 */
    uint64_t span;  /* R: a multiple of N */
    int half_bits;  /* the Feistel domain is 2^(2 * half_bits) >= R */
    uint64_t keys[4];
} sb_plan;

/** @brief Prepares the plan of `requests` requests (0: a run by duration, 16 tries a
 *  user) for `users` users and `seed`; R is requests rounded up to a multiple of users.
 *  @returns 0, or -1 if users is 0 or R would pass 2^62. */
int sb_plan_init(sb_plan *p, uint64_t users, uint64_t requests, uint64_t seed);

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
