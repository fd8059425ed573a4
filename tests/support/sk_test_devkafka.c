/* sk_test_devkafka: see sk_test_devkafka.h. */
#include "sk_test_devkafka.h"
#include "sk_test_proc.h"

#include <arpa/inet.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

int sk_test_devkafka_start(sk_test_devkafka *k, int partitions)
{
    memset(k, 0, sizeof(*k));
    snprintf(k->dir, sizeof(k->dir), "/tmp/sk-test-devkafka-XXXXXX");
    if (!mkdtemp(k->dir))
        return -1;
    char exe[512], bs[256], ctl[256], parts[16];
    sk_test_bin(exe, sizeof(exe), "seckill-devkafka");
    snprintf(bs, sizeof(bs), "%s/bootstrap", k->dir);
    snprintf(ctl, sizeof(ctl), "%s/control", k->dir);
    snprintf(parts, sizeof(parts), "%d", partitions);
    const char *argv[] = {exe, "--bootstrap-file", bs, "--control-file", ctl,
                          partitions > 0 ? "--partitions" : NULL, parts, NULL};
    sk_test_spawn_opts o = {.death_sig = SIGTERM, .out_path = "/dev/null"};
    k->pid = sk_test_spawn(argv, &o);
    if (k->pid < 0) {
        k->pid = 0;
        sk_test_devkafka_stop(k);
        return -1;
    }
    int64_t deadline = sk_test_now_ms() + 20000;
    while (sk_test_now_ms() < deadline) {
        if (sk_test_read_line(bs, k->bootstrap, sizeof(k->bootstrap)) == 0 &&
            sk_test_read_line(ctl, k->control, sizeof(k->control)) == 0) {
            if (sk_test_devkafka_control(k->control, "ping") == 0)
                return 0;
            break;
        }
        if (waitpid(k->pid, NULL, WNOHANG) == k->pid) {
            k->pid = 0;
            break;
        }
        sk_test_pause_ms(20);
    }
    fprintf(stderr, "seckill-devkafka did not start (%s)\n", exe);
    sk_test_devkafka_stop(k);
    return -1;
}

void sk_test_devkafka_stop(sk_test_devkafka *k)
{
    if (k->pid > 0)
        sk_test_proc_stop(k->pid, SIGTERM, 10000);
    k->pid = 0;
    if (k->dir[0])
        sk_test_rmtree(k->dir);
    k->dir[0] = '\0';
}
