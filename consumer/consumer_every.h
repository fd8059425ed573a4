/* consumer_every: a thread that runs one function every interval, for seckill-consumer's
 * periodic tasks (consumer_expiry.h, consumer_events.h).
 *
 * fn returns how many items it handled; when that reaches `batch` more is probably
 * waiting, so it runs again at once, else after interval_ms (or at stop). Stopping lets
 * the round under way finish. Threads: start and stop from one thread. */
#ifndef CONSUMER_EVERY_H
#define CONSUMER_EVERY_H

#include <stddef.h>

typedef struct consumer_every consumer_every;

/** @brief Starts the thread running fn(arg). @returns it, or NULL with err. */
consumer_every *consumer_every_start(long (*fn)(void *arg), void *arg, long long interval_ms,
                                     long long batch, char *err, size_t errsz);

/** @brief Stops and joins the thread, frees. NULL is fine. */
void consumer_every_stop(consumer_every *t);

#endif
