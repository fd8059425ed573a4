/* sc_dlq_match: see sc_dlq_match.h. */
#include "sc_dlq_match.h"

#include <string.h>

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int sc_dlq_matches(const void *key, size_t key_len, const void *payload, size_t len,
                   const char *event_id)
{
    size_t idl = strlen(event_id);
    if (key && key_len == idl && memcmp(key, event_id, idl) == 0)
        return 1;
    if (!payload)
        return 0;
    const char *p = payload, *end = p + len;
    static const char field[] = "\"event_id\"";
    size_t fl = sizeof(field) - 1;
    while (p < end) {
        const char *q = memmem(p, (size_t)(end - p), field, fl);
        if (!q)
            return 0;
        const char *v = q + fl;
        while (v < end && is_space(*v))
            v++;
        if (v < end && *v == ':') {
            v++;
            while (v < end && is_space(*v))
                v++;
            int quoted = v < end && *v == '"';
            v += quoted;
            if ((size_t)(end - v) >= idl && memcmp(v, event_id, idl) == 0) {
                const char *after = v + idl;
                if (quoted ? (after < end && *after == '"')
                           : (after == end || *after < '0' || *after > '9'))
                    return 1;
            }
        }
        p = q + 1;
    }
    return 0;
}
