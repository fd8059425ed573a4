/* consumer_every: a periodic thread. See consumer_every.h. */
#include "consumer_every.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct consumer_every {
    long (*fn)(void *arg);
    void *arg;
    long long interval_ms, batch;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int stop;
};

static void *every_main(void *arg)
{
    consumer_every *t = arg;
    pthread_mutex_lock(&t->mu);
    while (!t->stop) {
        pthread_mutex_unlock(&t->mu);
        long n = t->fn(t->arg);
        pthread_mutex_lock(&t->mu);
        if (n >= t->batch)
            continue; /* a full round: more is waiting */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)(t->interval_ms % 1000) * 1000000L;
        ts.tv_sec += (time_t)(t->interval_ms / 1000) + ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        while (!t->stop && pthread_cond_timedwait(&t->cond, &t->mu, &ts) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

consumer_every *consumer_every_start(long (*fn)(void *arg), void *arg, long long interval_ms,
                                     long long batch, char *err, size_t errsz)
{
    consumer_every *t = calloc(1, sizeof(*t));
    if (!t) {
        snprintf(err, errsz, "out of memory");
        return NULL;
    }
    *t = (consumer_every){.fn = fn, .arg = arg, .interval_ms = interval_ms, .batch = batch};
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cond, NULL);
    if (pthread_create(&t->thread, NULL, every_main, t) != 0) {
        snprintf(err, errsz, "cannot start a thread");
        pthread_mutex_destroy(&t->mu);
        pthread_cond_destroy(&t->cond);
        free(t);
        return NULL;
    }
    return t;
}

void consumer_every_stop(consumer_every *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    t->stop = 1;
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cond);
    free(t);
}
