/* sk_test_devkafka: see sk_test_devkafka.h. */
#include "sk_test_devkafka.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int sk_test_devkafka_control(const char *control, const char *line)
{
    char host[128];
    snprintf(host, sizeof(host), "%s", control);
    char *colon = strrchr(host, ':');
    if (!colon)
        return -1;
    *colon = '\0';
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    inet_pton(AF_INET, host, &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    char msg[256], ans[256] = "";
    int n = snprintf(msg, sizeof(msg), "%s\n", line);
    int rc = -1;
    if (send(fd, msg, (size_t)n, MSG_NOSIGNAL) == n) {
        ssize_t r = recv(fd, ans, sizeof(ans) - 1, 0);
        if (r > 0) {
            ans[r] = '\0';
            rc = strncmp(ans, "ok", 2) == 0 ? 0 : -1;
            if (rc)
                fprintf(stderr, "devkafka control \"%s\": %s", line, ans);
        }
    }
    close(fd);
    return rc;
}
