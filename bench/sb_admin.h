/* sb_admin: the one admin call seckill-bench makes: create an event through the front
 * (POST /api/v1/events with an admin token). A blocking request on its own connection,
 * made once before the load starts. */
#ifndef SB_ADMIN_H
#define SB_ADMIN_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "sb_plan.h"

/** @brief Writes t as RFC 3339 UTC ("2026-11-22T12:00:00Z") into out (>= 21 bytes). */
void sb_rfc3339(time_t t, char *out, size_t outsz);

/** @brief Creates event `name` with `stock` on sale from starts_at to ends_at, as the admin
 *  holding `token`. Waits at most timeout_ms for the answer.
 *  @returns 0 with *event_id set, or -1 with a message in errstr (the status and the
 *  server's error code when it answered). */
int sb_admin_create_event(const sb_url *url, const char *token, const char *name, long long stock,
                          time_t starts_at, time_t ends_at, int timeout_ms, uint64_t *event_id,
                          char *errstr, size_t errstr_size);

#endif
