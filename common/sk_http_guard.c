/* sk_http_guard: who may read an operator's route such as /metrics (sk_http.h). Only the
 * public request API: the Authorization header and the peer's address. */
#include "sk_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

int sk_http_guard_ok(const sk_http_req *r, const char *token, int open)
{
    if (token && *token) {
        const char *h = sk_http_header(r, "Authorization");
        if (!h || strncasecmp(h, "Bearer ", 7) != 0)
            return 0;
        h += 7;
        size_t n = strlen(token);
        if (strlen(h) != n)
            return 0;
        unsigned char diff = 0;
        for (size_t i = 0; i < n; i++)
            diff |= (unsigned char)(h[i] ^ token[i]);
        return diff == 0;
    }
    if (open)
        return 1;
    const struct sockaddr *sa = sk_http_peer(r);
    if (!sa || sa->sa_family == AF_UNIX)
        return sa != NULL;
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) ||
               (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return 0;
}
