/* sb_challenge: seckill-bench as a buyer facing an event's proof-of-work challenge
 * (issue 31): before the timed part, each user gets its challenge from the front
 * (GET /api/v1/events/{id}/challenge with its token, one keep-alive connection) and solves
 * it on this thread (common/sk_pow.h), the way a bot with many tokens would; the solution
 * rides in the user's order requests as the Seckill-Challenge header. What the solving
 * cost is reported: it is what a bot pays per order on one core. */
#ifndef SB_CHALLENGE_H
#define SB_CHALLENGE_H

#include <stdint.h>

#include "sb_load.h"
#include "sb_plan.h"

/** @brief For users 1..tk->n: fetches and solves each one's challenge, then rewrites tk so
 *  that each token is followed by "\r\nSeckill-Challenge: <solution>" (sb_load writes a
 *  token as the rest of its Authorization line, so the header follows it unchanged).
 *  *solve_cpu_s gets the CPU seconds spent solving, *hashes the hashes computed.
 *  @returns 0, or -1 with errstr (tk unchanged). */
int sb_challenge_prepare(const sb_url *url, uint64_t event_id, sb_tokens *tk, int timeout_ms,
                         double *solve_cpu_s, uint64_t *hashes, char *errstr, size_t errstr_size);

#endif
