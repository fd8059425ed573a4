/* order_reqscan: request boundaries on a connection. See order_reqscan.h. */
#include "order_reqscan.h"

#include <ctype.h>
#include <string.h>

void order_reqscan_init(order_reqscan *s)
{
    memset(s, 0, sizeof(*s));
}

/* A header line ended: remembers Content-Length (the last one wins; evhttp refuses
 * requests with a bad one anyway, and the deadline is what matters here). */
static void line_done(order_reqscan *s)
{
    static const char name[] = "content-length:";
    size_t kept = s->linelen < ORDER_REQSCAN_LINE ? s->linelen : ORDER_REQSCAN_LINE;
    if (kept < sizeof(name) - 1)
        return;
    for (size_t i = 0; i < sizeof(name) - 1; i++)
        if (tolower((unsigned char)s->line[i]) != name[i])
            return;
    int64_t v = 0;
    for (size_t i = sizeof(name) - 1; i < kept; i++) {
        char c = s->line[i];
        if (c == ' ' || c == '\t')
            continue;
        if (c < '0' || c > '9')
            break;
        if (v < (int64_t)1 << 40)
            v = v * 10 + (c - '0');
    }
    s->content_length = v;
}

int order_reqscan_feed(order_reqscan *s, const unsigned char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (s->state == 2) { /* body: skip it whole */
            size_t take = (size_t)s->body_left < n - i ? (size_t)s->body_left : n - i;
            s->body_left -= (int64_t)take;
            i += take;
            if (s->body_left == 0)
                s->state = 0;
            continue;
        }
        unsigned char c = p[i++];
        if (s->state == 0) {
            if (c == '\r' || c == '\n')
                continue; /* blank lines before a request are allowed */
            s->state = 1;
            s->linelen = 0;
            s->content_length = 0;
        }
        if (c == '\r')
            continue;
        if (c == '\n') {
            if (s->linelen == 0) { /* the blank line: headers done */
                if (s->content_length > 0) {
                    s->state = 2;
                    s->body_left = s->content_length;
                } else
                    s->state = 0;
                continue;
            }
            line_done(s);
            s->linelen = 0;
            continue;
        }
        if (s->linelen < ORDER_REQSCAN_LINE)
            s->line[s->linelen] = (char)c;
        s->linelen++;
    }
    return s->state != 0;
}
