/* idgen_serve_route: the routes of `idgen serve`, pure (no I/O): a request target to a
 * route, a tag and a batch size, or the status that refuses it. Unit-tested without a
 * network (tests/unit/test_idgen_serve_route.c).
 *
 *   GET /api/segment/get/{tag}              one ID, segment mode (Leaf's route)
 *   GET /api/snowflake/get/{tag}            one ID, worker mode (Leaf's snowflake route)
 *   GET /api/{segment|snowflake}/batch/{tag}?count=N   N IDs (1..batch_max)
 *   GET /healthz, GET /metrics
 * A tag is 1..64 of [A-Za-z0-9_-] (it becomes a libidgen prefix). */
#ifndef IDGEN_SERVE_ROUTE_H
#define IDGEN_SERVE_ROUTE_H

#include <stddef.h>

#define IDGEN_TAG_MAX 64

typedef enum {
    IDGEN_ROUTE_HEALTHZ = 0,
    IDGEN_ROUTE_METRICS,
    IDGEN_ROUTE_GET,   /* one ID */
    IDGEN_ROUTE_BATCH, /* `count` IDs */
} idgen_route_kind;

typedef enum {
    IDGEN_ROUTE_SEGMENT = 0,
    IDGEN_ROUTE_SNOWFLAKE = 1,
} idgen_route_mode;

typedef struct idgen_route {
    idgen_route_kind kind;
    idgen_route_mode mode;
    char tag[IDGEN_TAG_MAX + 1];
    long count;      /* BATCH: 1..batch_max; GET: 1 */
    const char *why; /* a refusal's message (static text) */
} idgen_route;

/** @brief Whether tag[0..len) is a valid tag. */
int idgen_serve_tag_ok(const char *tag, size_t len);

/** @brief Routes `uri` (the target as sent). @returns 0 with *out filled, 400 (a bad tag
 *  or count: out->why says which) or 404 (no such route). */
int idgen_serve_route_parse(const char *uri, long batch_max, idgen_route *out);

#endif
