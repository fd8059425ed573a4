/* sb_admin: the one admin call seckill-bench makes: create an event through the front
 * (POST /api/v1/events with an admin token). A blocking request on its own connection,
 * made once before the load starts. Its connection helper serves sb_challenge too. */
#ifndef SB_ADMIN_H
#define SB_ADMIN_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "sb_plan.h"

/** @brief Writes t as RFC 3339 UTC ("2026-11-22T12:00:00Z") into out (>= 21 bytes). */
void sb_rfc3339(time_t t, char *out, size_t outsz);

/** @brief A blocking TCP connection to url with send and receive timeouts of timeout_ms.
 *  @returns the socket, or -1 with errstr. */
int sb_admin_connect(const sb_url *url, int timeout_ms, char *errstr, size_t errstr_size);

/** @brief Creates event `name` with `stock` on sale from starts_at to ends_at, as the admin
 *  holding `token`, with a proof-of-work challenge of challenge_bits when > 0 (issue 31)
 *  and per_user_limit (units per user; 1, the default, is not sent).
 *  Waits at most timeout_ms for the answer.
 *  @returns 0 with *event_id set, or -1 with a message in errstr (the status and the
 *  server's error code when it answered). */
int sb_admin_create_event(const sb_url *url, const char *token, const char *name, long long stock,
                          time_t starts_at, time_t ends_at, int challenge_bits,
                          int per_user_limit, int timeout_ms,
                          uint64_t *event_id, char *errstr, size_t errstr_size);

#endif
