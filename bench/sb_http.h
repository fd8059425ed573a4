/* sb_http: the HTTP/1.1 response parser of seckill-bench, and the two JSON fields it reads.
 *
 * Pure functions over a byte buffer, no allocation, no I/O: the load generator calls
 * them on every response, so they do only what a keep-alive client needs (status,
 * Content-Length, Connection: close) and leave everything else unread. Bodies must be
 * framed by Content-Length; chunked or close-delimited bodies are refused as malformed
 * (seckill-order always sends Content-Length). */
#ifndef SB_HTTP_H
#define SB_HTTP_H

#include <stddef.h>
#include <stdint.h>

typedef struct sb_http_resp {
    int status;       /* 100..599 */
    int close;        /* the server said Connection: close (or spoke HTTP/1.0 without keep-alive) */
    const char *body; /* points into the parsed buffer: valid while the buffer is */
    size_t body_len;
} sb_http_resp;

/** @brief Parses one response at the start of buf[0..len).
 *  @returns the bytes it spans (> 0) with *out filled, 0 if more bytes are needed, or -1
 *  if it is not a response this client can frame (the connection must be dropped). */
long sb_http_parse(const char *buf, size_t len, sb_http_resp *out);

/** @brief Copies the string value of top-level-looking field `name` ("order_id") from a
 *  small JSON object into out (NUL-terminated). A number value is copied as its digits.
 *  Escapes are not decoded: ids and error codes never contain any.
 *  @returns the value's length, or -1 if absent or longer than outsz - 1. */
int sb_json_field(const char *json, size_t len, const char *name, char *out, size_t outsz);

#endif
