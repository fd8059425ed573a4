/* order_kafka: the producer, its report pipe and its health thread. See order_kafka.h. */
#include "order_kafka.h"
#include "sk_kafka_conf.h"
#include "sk_log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct order_kafka {
    rd_kafka_t *rk;
    rd_kafka_topic_t *rkt;
    order_kafka_dr_fn *dr;
    int report_fd[2]; /* pipe: librdkafka writes [1] when reports wait; the owner polls [0] */
    pthread_t health_thread;
    int threads_started;
    atomic_int stop;
    atomic_int ready;
    pthread_mutex_t mu; /* with cond: wakes the health thread up early on stop */
    pthread_cond_t cond;
};

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    order_kafka *k = opaque;
    k->dr(m->_private, m->err, rd_kafka_message_status(m), m->partition, m->offset);
}

static void *health_main(void *arg)
{
    order_kafka *k = arg;
    while (!atomic_load(&k->stop)) {
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t err = rd_kafka_metadata(k->rk, 0, k->rkt, &md, 1000);
        int ok = err == RD_KAFKA_RESP_ERR_NO_ERROR && md && md->topic_cnt == 1 &&
                 md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR && md->broker_cnt > 0;
        if (md)
            rd_kafka_metadata_destroy(md);
        atomic_store(&k->ready, ok);
        pthread_mutex_lock(&k->mu);
        if (!atomic_load(&k->stop)) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&k->cond, &k->mu, &ts);
        }
        pthread_mutex_unlock(&k->mu);
    }
    return NULL;
}

order_kafka *order_kafka_new(const sk_cfg_kv *props, const char *topic, order_kafka_dr_fn *dr,
                             char *err, size_t errsz)
{
    order_kafka *k = calloc(1, sizeof(*k));
    if (!k) {
        snprintf(err, errsz, "out of memory");
        return NULL;
    }
    k->dr = dr;
    k->report_fd[0] = k->report_fd[1] = -1;
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cond, NULL);
    /* Our defaults first, so that kafka.* from the configuration wins. A flash sale
     * answers each buyer only after the delivery report, so nothing lingers: linger.ms 0
     * and Nagle off. Orders still go out in batches, as the replies of one Redis round
     * trip come in together and what arrives while requests are in flight is sent with
     * the next one. librdkafka sleeps in whole milliseconds, so any linger above 0 costs
     * about 1.2 ms per order (measured: its int_latency 1.0-1.1 ms at linger.ms 1 or 0.5,
     * 50 us at 0; accept rate 13,088 -> 16,060/s, bench/bench-order.sh). */
    static const char *const defaults[] = {"enable.idempotence", "true", "acks", "all",
                                           "linger.ms", "0", "socket.nagle.disable", "true",
                                           /* A buyer waits for the delivery report: 10 s,
                                            * not librdkafka's 5 minutes. */
                                           "message.timeout.ms", "10000",
                                           /* Orders queued for a broker whose connection
                                            * is being set up are not timed out until the
                                            * setup ends: librdkafka's 10 s ApiVersion wait
                                            * (30 s for the whole setup) held answers 10-12 s
                                            * on a black-holed link (tests/fault/netfault.sh);
                                            * and once the link is back, a backoff grown to
                                            * 10 s kept the front from selling for seconds. */
                                           "api.version.request.timeout.ms", "3000",
                                           "socket.connection.setup.timeout.ms", "5000",
                                           "reconnect.backoff.max.ms", "1000",
                                           "client.id", "seckill-order", NULL};
    rd_kafka_conf_t *conf = sk_kafka_conf_new(SK_KAFKA_PRODUCER, defaults, props, NULL, err, errsz);
    if (!conf)
        goto fail_conf;
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_opaque(conf, k);
    char why[512];
    k->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof(why));
    if (!k->rk) {
        snprintf(err, errsz, "kafka: %s", why);
        goto fail_conf;
    }
    conf = NULL; /* owned by rk now */
    k->rkt = rd_kafka_topic_new(k->rk, topic, NULL);
    if (!k->rkt) {
        snprintf(err, errsz, "kafka: topic %s: %s", topic, rd_kafka_err2str(rd_kafka_last_error()));
        goto fail;
    }
    /* Reports are served by the owner's event loop, woken through a pipe that librdkafka
     * writes when a report lands in an empty queue: one thread hop from the broker thread
     * to the loop, where a poll thread handing over to the loop made two. Enabled before
     * the first message, so no report can wait unsignalled. */
    if (pipe2(k->report_fd, O_NONBLOCK | O_CLOEXEC) != 0) {
        snprintf(err, errsz, "kafka: pipe: %s", strerror(errno));
        k->report_fd[0] = k->report_fd[1] = -1;
        goto fail;
    }
    rd_kafka_queue_t *mainq = rd_kafka_queue_get_main(k->rk);
    rd_kafka_queue_io_event_enable(mainq, k->report_fd[1], "r", 1);
    rd_kafka_queue_destroy(mainq); /* drops our reference; the setting stays */
    if (pthread_create(&k->health_thread, NULL, health_main, k) != 0)
        goto fail;
    k->threads_started = 1;
    return k;
fail_conf:
    if (conf)
        rd_kafka_conf_destroy(conf);
fail:
    order_kafka_free(k);
    return NULL;
}

int order_kafka_produce(order_kafka *k, const char *key, size_t keylen, const char *value,
                        size_t vallen, void *opaque)
{
    if (rd_kafka_produce(k->rkt, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY, (void *)value,
                         vallen, key, keylen, opaque) == -1)
        return rd_kafka_last_error();
    return 0;
}

int order_kafka_report_fd(const order_kafka *k)
{
    return k->report_fd[0];
}

void order_kafka_serve(order_kafka *k)
{
    /* Empty the pipe first: a report queued after this read writes it again (librdkafka
     * signals each time its queue goes from empty to not), so none is left unsignalled. */
    char buf[64];
    /* A short read emptied the pipe: no second read just to see EAGAIN. */
    while (read(k->report_fd[0], buf, sizeof(buf)) == (ssize_t)sizeof(buf))
        ;
    rd_kafka_poll(k->rk, 0); /* serves every report queued, on this thread */
}

int order_kafka_ready(const order_kafka *k)
{
    return atomic_load(&((order_kafka *)k)->ready);
}

int order_kafka_flush(order_kafka *k, int timeout_ms)
{
    /* rd_kafka_flush also serves reports on this thread, beside the loop that owns the
     * report fd: librdkafka allows it, and the delivery callback hands over what is not
     * its own thread's. */
    rd_kafka_flush(k->rk, timeout_ms);
    return rd_kafka_outq_len(k->rk);
}

void order_kafka_free(order_kafka *k)
{
    if (!k)
        return;
    if (k->threads_started) {
        pthread_mutex_lock(&k->mu);
        atomic_store(&k->stop, 1);
        pthread_cond_broadcast(&k->cond);
        pthread_mutex_unlock(&k->mu);
        pthread_join(k->health_thread, NULL);
    }
    if (k->rkt)
        rd_kafka_topic_destroy(k->rkt);
    if (k->rk) {
        /* Remaining messages are purged: their reports come through the last poll. */
        rd_kafka_purge(k->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_poll(k->rk, 0);
        rd_kafka_destroy(k->rk);
    }
    for (int i = 0; i < 2; i++)
        if (k->report_fd[i] >= 0)
            close(k->report_fd[i]);
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->cond);
    free(k);
}
