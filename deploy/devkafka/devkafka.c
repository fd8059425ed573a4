/* seckill-devkafka: a dev/test Kafka on localhost, over librdkafka's mock cluster.
 *
 * There is no Kafka broker package on Debian. librdkafka ships a mock cluster that
 * speaks the real Kafka protocol (produce, idempotent produce, fetch, consumer groups
 * with offset commits), so clients connect to it exactly as to Apache Kafka. It keeps
 * messages in memory only: a restart loses everything. And it keeps only about 5 MB
 * (or 100,000 message sets) per partition: older messages are dropped silently, as if
 * retention had run. Loads bigger than that spread over more partitions (--partitions)
 * or compress (lz4). Real deployments point kafka.bootstrap.servers at Apache Kafka with
 * no code change.
 *
 * A text control port (127.0.0.1, one command a line, answers "ok" or "err <why>") lets
 * tests in other processes break the cluster on purpose through the mock API:
 *   ping                                  -> ok
 *   broker down|up <id|-1>                 disconnect a broker / accept connections again
 *   rtt <id|-1> <ms>                       delay every response of a broker
 *   errors <apikey> <count> <error>        the next <count> requests of that API fail
 *   clear <apikey>                         forget pushed errors
 *   topic <name> <partitions>              create a topic
 * <apikey> is a number or one of produce, fetch, listoffsets, metadata, offsetcommit,
 * offsetfetch, findcoordinator, joingroup, heartbeat, syncgroup, initproducerid;
 * <error> is a number or a librdkafka error name such as NOT_ENOUGH_REPLICAS.
 *
 * Design: the mock cluster runs on librdkafka's own threads; its API calls are safe
 * from our main thread, which only polls the control socket and the stop flag. */
#include <errno.h>
#include <dirent.h>
#include <getopt.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_CLIENTS 16

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static const struct {
    const char *name;
    int16_t key;
} api_keys[] = {
    {"produce", 0},       {"fetch", 1},      {"listoffsets", 2},     {"metadata", 3},
    {"offsetcommit", 8},  {"offsetfetch", 9}, {"findcoordinator", 10}, {"joingroup", 11},
    {"heartbeat", 12},    {"syncgroup", 14}, {"initproducerid", 22},
};

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_api_key(const char *s, int16_t *out)
{
    long v;
    for (size_t i = 0; i < sizeof(api_keys) / sizeof(api_keys[0]); i++) {
        if (strcasecmp(s, api_keys[i].name) == 0) {
            *out = api_keys[i].key;
            return 0;
        }
    }
    if (parse_long(s, 0, 100, &v) != 0)
        return -1;
    *out = (int16_t)v;
    return 0;
}

static int parse_error(const char *s, rd_kafka_resp_err_t *out)
{
    const struct rd_kafka_err_desc *descs;
    size_t n;
    long v;
    rd_kafka_get_err_descs(&descs, &n);
    for (size_t i = 0; i < n; i++) {
        if (descs[i].name && strcasecmp(s, descs[i].name) == 0) {
            *out = descs[i].code;
            return 0;
        }
    }
    if (parse_long(s, -200, 200, &v) != 0)
        return -1;
    *out = (rd_kafka_resp_err_t)v;
    return 0;
}

/* Apache Kafka's brokers set TCP_NODELAY on every connection; the mock cluster's sockets
 * keep Nagle. Then a response written while an earlier one is unacknowledged waits for
 * the client's delayed ACK, 40 ms on Linux: measured here, a producer with linger.ms 0
 * saw round trips of 40-44 ms at the 90th percentile and fell to 4,000 orders/s. Set
 * on a listening socket, TCP_NODELAY is inherited by every connection it accepts, so the
 * process's TCP listeners get it (the mock's, and our control port's, which does not
 * mind). Called after the cluster is made and after `broker up`, in case a broker
 * listens anew. Returns how many listeners were set. */
static int nodelay_listeners(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0, one = 1;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int fd = atoi(de->d_name), listening = 0, proto = 0;
        socklen_t len = sizeof(listening), plen = sizeof(proto);
        struct stat st;
        if (fd <= 2 || fd == dirfd(d) || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
            getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening ||
            getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &plen) != 0 || proto != IPPROTO_TCP)
            continue;
        if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == 0)
            n++;
    }
    closedir(d);
    return n;
}

/* Runs one control command; writes the answer line (without newline) into ans. */
static void control_run(rd_kafka_mock_cluster_t *mc, char *line, char *ans, size_t anssz)
{
    char *argv[8];
    int argc = 0;
    for (char *tok = strtok(line, " \t\r"); tok && argc < 8; tok = strtok(NULL, " \t\r"))
        argv[argc++] = tok;
    long id, ms, cnt;
    int16_t api;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    snprintf(ans, anssz, "ok");
    if (argc == 0) {
        snprintf(ans, anssz, "err empty command");
    } else if (strcmp(argv[0], "ping") == 0 && argc == 1) {
        /* ok */
    } else if (strcmp(argv[0], "broker") == 0 && argc == 3 &&
               parse_long(argv[2], -1, 1000, &id) == 0 &&
               (strcmp(argv[1], "down") == 0 || strcmp(argv[1], "up") == 0)) {
        err = strcmp(argv[1], "down") == 0 ? rd_kafka_mock_broker_set_down(mc, (int32_t)id)
                                           : rd_kafka_mock_broker_set_up(mc, (int32_t)id);
        if (!err && strcmp(argv[1], "up") == 0)
            nodelay_listeners();
    } else if (strcmp(argv[0], "rtt") == 0 && argc == 3 &&
               parse_long(argv[1], -1, 1000, &id) == 0 &&
               parse_long(argv[2], 0, 600000, &ms) == 0) {
        err = rd_kafka_mock_broker_set_rtt(mc, (int32_t)id, (int)ms);
    } else if (strcmp(argv[0], "errors") == 0 && argc == 4 && parse_api_key(argv[1], &api) == 0 &&
               parse_long(argv[2], 1, 100000, &cnt) == 0) {
        rd_kafka_resp_err_t e;
        if (parse_error(argv[3], &e) != 0) {
            snprintf(ans, anssz, "err unknown error code %s", argv[3]);
            return;
        }
        rd_kafka_resp_err_t *errs = malloc(sizeof(*errs) * (size_t)cnt);
        if (!errs) {
            snprintf(ans, anssz, "err out of memory");
            return;
        }
        for (long i = 0; i < cnt; i++)
            errs[i] = e;
        rd_kafka_mock_push_request_errors_array(mc, api, (size_t)cnt, errs);
        free(errs);
    } else if (strcmp(argv[0], "clear") == 0 && argc == 2 && parse_api_key(argv[1], &api) == 0) {
        rd_kafka_mock_clear_request_errors(mc, api);
    } else if (strcmp(argv[0], "topic") == 0 && argc == 3 &&
               parse_long(argv[2], 1, 1000, &cnt) == 0) {
        err = rd_kafka_mock_topic_create(mc, argv[1], (int)cnt, 1);
    } else {
        snprintf(ans, anssz, "err unknown command or bad arguments (see seckill-devkafka --help)");
        return;
    }
    if (err)
        snprintf(ans, anssz, "err %s", rd_kafka_err2str(err));
}

/* Writes text to path atomically (tmp + rename), so a reader never sees half a line. */
static int write_file(const char *path, const char *text)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int ok = fprintf(f, "%s\n", text) > 0;
    ok = (fclose(f) == 0) && ok;
    return ok && rename(tmp, path) == 0 ? 0 : -1;
}

static int control_listen(int port, int *bound_port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 8) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        close(fd);
        return -1;
    }
    *bound_port = ntohs(a.sin_port);
    return fd;
}

struct client {
    int fd;
    char buf[1024];
    size_t len;
};

/* Reads what a client sent and answers each complete line. @returns -1 to drop it. */
static int client_serve(rd_kafka_mock_cluster_t *mc, struct client *c)
{
    ssize_t n = read(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len);
    if (n <= 0)
        return -1;
    c->len += (size_t)n;
    char *nl;
    while ((nl = memchr(c->buf, '\n', c->len))) {
        *nl = '\0';
        char ans[256];
        control_run(mc, c->buf, ans, sizeof(ans));
        size_t alen = strlen(ans);
        ans[alen++] = '\n';
        if (write(c->fd, ans, alen) != (ssize_t)alen)
            return -1;
        size_t used = (size_t)(nl - c->buf) + 1;
        memmove(c->buf, nl + 1, c->len - used);
        c->len -= used;
    }
    return c->len == sizeof(c->buf) - 1 ? -1 : 0; /* a line too long: drop the client */
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: seckill-devkafka [--brokers N] [--partitions P] [--bootstrap-file F]\n"
            "                        [--control-port PORT] [--control-file F]\n"
            "A Kafka for development and tests over librdkafka's mock cluster (in memory only).\n"
            "Creates seckill.orders (P partitions, default 6) and seckill.orders.dlq, prints\n"
            "the bootstrap address, writes it to --bootstrap-file, and runs until SIGTERM.\n"
            "The control port (default: any free port, written to --control-file) takes:\n"
            "  ping | broker down|up <id|-1> | rtt <id|-1> <ms> | errors <api> <count> <error>\n"
            "  | clear <api> | topic <name> <partitions>\n");
}

int main(int argc, char **argv)
{
    long brokers = 1, partitions = 6, control_port = 0;
    const char *bootstrap_file = NULL, *control_file = NULL;
    static const struct option opts[] = {
        {"brokers", required_argument, 0, 'b'},      {"partitions", required_argument, 0, 'p'},
        {"bootstrap-file", required_argument, 0, 'f'}, {"control-port", required_argument, 0, 'c'},
        {"control-file", required_argument, 0, 'C'}, {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'},            {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "b:p:f:c:C:hV", opts, NULL)) != -1) {
        switch (o) {
        case 'b':
            if (parse_long(optarg, 1, 16, &brokers) != 0) {
                fprintf(stderr, "seckill-devkafka: --brokers takes 1..16\n");
                return 2;
            }
            break;
        case 'p':
            if (parse_long(optarg, 1, 1000, &partitions) != 0) {
                fprintf(stderr, "seckill-devkafka: --partitions takes 1..1000\n");
                return 2;
            }
            break;
        case 'f':
            bootstrap_file = optarg;
            break;
        case 'c':
            if (parse_long(optarg, 0, 65535, &control_port) != 0) {
                fprintf(stderr, "seckill-devkafka: --control-port takes 0..65535\n");
                return 2;
            }
            break;
        case 'C':
            control_file = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("seckill-devkafka %s (librdkafka %s)\n", SECKILL_VERSION, rd_kafka_version_str());
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }

    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* The mock cluster needs a client handle for its book-keeping; it stays idle. */
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "client.id", "seckill-devkafka", errstr, sizeof(errstr));
    /* It has no bootstrap.servers of its own, on purpose: hide that notice. */
    rd_kafka_conf_set(conf, "log_level", "4", errstr, sizeof(errstr));
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!rk) {
        fprintf(stderr, "seckill-devkafka: %s\n", errstr);
        rd_kafka_conf_destroy(conf);
        return 1;
    }
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, (int)brokers);
    if (!mc) {
        fprintf(stderr, "seckill-devkafka: cannot create the mock cluster\n");
        rd_kafka_destroy(rk);
        return 1;
    }
    int rf = brokers >= 3 ? 3 : (int)brokers;
    rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(mc, "seckill.orders", (int)partitions, rf);
    if (!err)
        err = rd_kafka_mock_topic_create(mc, "seckill.orders.dlq", (int)partitions, rf);
    if (err) {
        fprintf(stderr, "seckill-devkafka: create topics: %s\n", rd_kafka_err2str(err));
        rd_kafka_mock_cluster_destroy(mc);
        rd_kafka_destroy(rk);
        return 1;
    }

    if (nodelay_listeners() < 1) {
        fprintf(stderr, "seckill-devkafka: cannot set TCP_NODELAY on the brokers' sockets\n");
        rd_kafka_mock_cluster_destroy(mc);
        rd_kafka_destroy(rk);
        return 1;
    }
    int cport = 0, lfd = control_listen((int)control_port, &cport);
    if (lfd < 0) {
        fprintf(stderr, "seckill-devkafka: control port %ld: %s\n", control_port, strerror(errno));
        rd_kafka_mock_cluster_destroy(mc);
        rd_kafka_destroy(rk);
        return 1;
    }
    const char *bootstraps = rd_kafka_mock_cluster_bootstraps(mc);
    char control_addr[64];
    snprintf(control_addr, sizeof(control_addr), "127.0.0.1:%d", cport);
    /* The control file first: a reader that sees the bootstrap file may use both. */
    int rc = 0;
    if ((control_file && write_file(control_file, control_addr) != 0) ||
        (bootstrap_file && write_file(bootstrap_file, bootstraps) != 0)) {
        fprintf(stderr, "seckill-devkafka: cannot write the address files: %s\n", strerror(errno));
        rc = 1;
        stop_requested = 1;
    }
    if (!rc) {
        printf("%s\n", bootstraps);
        fflush(stdout);
        fprintf(stderr, "level=info prog=seckill-devkafka event=ready bootstrap=%s control=%s brokers=%ld partitions=%ld\n",
                bootstraps, control_addr, brokers, partitions);
    }

    struct client clients[MAX_CLIENTS];
    int nclients = 0;
    while (!stop_requested) {
        struct pollfd pfd[MAX_CLIENTS + 1];
        pfd[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
        for (int i = 0; i < nclients; i++)
            pfd[i + 1] = (struct pollfd){.fd = clients[i].fd, .events = POLLIN};
        /* A timeout only to notice the stop flag: signals interrupt poll anyway. */
        if (poll(pfd, (nfds_t)nclients + 1, 500) < 0)
            continue;
        for (int i = nclients - 1; i >= 0; i--) {
            if (pfd[i + 1].revents && client_serve(mc, &clients[i]) != 0) {
                close(clients[i].fd);
                clients[i] = clients[--nclients];
            }
        }
        if (pfd[0].revents & POLLIN) {
            int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
            if (cfd >= 0 && nclients < MAX_CLIENTS)
                clients[nclients++] = (struct client){.fd = cfd};
            else if (cfd >= 0)
                close(cfd);
        }
    }
    for (int i = 0; i < nclients; i++)
        close(clients[i].fd);
    close(lfd);
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(rk);
    if (!rc)
        fprintf(stderr, "level=info prog=seckill-devkafka event=stopped\n");
    return rc;
}
