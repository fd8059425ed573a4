/* order_app: the state of one seckill-order process, shared by its worker threads, and
 * the worker threads themselves (internal header).
 *
 * Design: N workers, each one libevent loop with its own HTTP server (sk_http) listening on the
 * same port (SO_REUSEPORT: the kernel spreads connections over them) and its own Redis
 * connection, so a request lives on one thread from accept to answer. What is shared is
 * thread-safe by construction: the producer (librdkafka), the ID generators (libidgen),
 * the PostgreSQL pool, the token buckets (striped locks), the sold-out flags and the
 * metrics (atomics). Kafka's delivery reports are served on worker 0's loop (the
 * producer's report fd): worker 0's own requests go on at once. Work that finishes on
 * another thread (a report for another worker's request, a PostgreSQL job on a pool
 * thread) comes back to its worker through the worker's inbox: a locked list plus an
 * event made active from that thread. Nothing touches sk_http or hiredis from any thread
 * but the owning worker. */
#ifndef ORDER_APP_H
#define ORDER_APP_H

#include "idgen.h"
#include "order_bucket.h"
#include "order_config.h"
#include "order_events.h"
#include "order_evlist.h"
#include "order_ocache.h"
#include "order_kafka.h"
#include "order_admit.h"
#include "order_limit.h"
#include "order_window.h"
#include "sk_order_msg.h"
#include "order_pause.h"
#include "order_evrate.h"
#include "order_loader.h"
#include "order_metrics.h"
#include "order_pg.h"
#include "order_redis.h"
#include "order_segs.h"
#include "order_soldout.h"
#include "sk_http.h"
#include "sk_jwt.h"
#include "sk_redis_url.h"

#include <event2/util.h>

#include <pthread.h>
#include <stdatomic.h>

struct event_base;
struct event;

/* A continuation run on a worker's loop; embedded in the object it belongs to. */
typedef struct order_task {
    void (*fn)(struct order_task *t);
    struct order_task *next;
} order_task;

typedef struct order_app order_app;
typedef struct order_worker order_worker;

/* What a worker runs, given from outside (order_main takes it from order_http.h), so
 * the worker knows nothing of the handlers. */
typedef struct order_worker_hooks {
    /* sk_http's request handler (arg: the worker). */
    void (*handle)(sk_http_req *req, void *worker);
    /* Makes w->chain once the worker's loop and Redis connection exist. @returns 0 or -1. */
    int (*chain_new)(order_worker *w);
    /* After the loop ended, before the Redis connection is freed: sends (or fails) what
     * the chain has queued. */
    void (*chain_flush)(order_worker *w);
    /* After the Redis connection is freed: frees w->chain. */
    void (*chain_free)(order_worker *w);
    /* Every answer about to be sent (order_http_reply_send), status and body: the
     * Idempotency-Key's capture (order_idem_http.h). A hook, so the reply path does not
     * call back into a module that calls it. NULL: nothing to do. */
    void (*answered)(sk_http_req *req, int status, const char *body, size_t len);
} order_worker_hooks;

struct order_worker {
    int index;
    order_app *app;
    struct event_base *base;
    sk_http *http;              /* its HTTP server (sk_http.h), listening until stop_accepting */
    order_redis *redis;
    struct sk_listen_backoff *accept_backoff; /* accept() out of descriptors: pause (sk_listen.h) */
    sk_jwt_key *jwt;           /* the JWT secret made ready once; used on this loop only */
    pthread_t thread;
    int started;
    pthread_mutex_t inbox_mu;
    order_task *inbox_head, *inbox_tail;
    int inbox_signalled;
    struct event *inbox_ev;
    struct event *kafka_ev; /* worker 0 only: the producer's report fd */
    /* The order chain's per-worker state (the gate, the index writer, the produce
     * queue): made and freed through app->hooks, opaque here. */
    struct order_chain *chain;
    order_task stop_accepting_task, exit_task;
};

struct order_app {
    order_config cfg;
    sk_cfg_kv *kafka_props;
    sk_order_msg_keys *msg_keys; /* order.msg_keys made ready; NULL: messages unsigned */
    sk_redis_url redis_url;
    order_scripts scripts;
    idgen_t *ids_order, *ids_event;
    order_kafka *kafka;
    order_pg *pg; /* NULL when no pg is configured: event calls answer 503 */
    order_loader *loader; /* used by the pg pool threads after an event's INSERT */
    order_bucket_table *buckets;
    order_soldout *soldout;
    order_segs *segs; /* each event's stock segments as this instance knows them */
    order_limit *limits;  /* per-address level, trusted proxies (order_limit.h) */
    order_admit *admit;   /* shedding on the gate's p99 (order_admit.h) */
    order_window *window; /* known sale windows: 403 before the start without Redis */
    order_pause *paused;  /* events an admin paused (order_pause.h) */
    order_evrate *evrate; /* local shares of the per-event rates (configured or the event's own) */
    order_events *events; /* GET /api/v1/events/{id} from memory (order_events.h) */
    order_evlist *evlist; /* GET /api/v1/events from memory (order_evlist.h) */
    order_ocache *ocache; /* final order outcomes, young orders' lookup bound (order_ocache.h) */
    order_metrics metrics;
    order_worker_hooks hooks;
    int port; /* the port actually bound */
    atomic_int draining;
    int nworkers;
    order_worker *workers;
};

/** @brief The worker whose loop runs on the calling thread, or NULL. */
order_worker *order_worker_self(void);

/** @brief Hands `t` to worker `w`: t->fn runs on w's loop soon. Thread-safe. */
void order_worker_post(order_worker *w, order_task *t);

/** @brief Creates the workers (listening sockets bound, Redis connecting) and starts
 *  their threads. @returns 0, or -1 with err (whatever was created is freed by
 *  order_workers_free). */
int order_workers_start(order_app *app, char *err, size_t errsz);

/** @brief Asks every worker to close its listening socket (connections already open
 *  are still served). Returns at once. */
void order_workers_stop_accepting(order_app *app);

/** @brief Stops worker 0 serving Kafka's delivery reports (waits for a serve under way);
 *  from then on order_kafka_flush/free serve them on the caller's thread. Call before
 *  order_kafka_free. */
void order_workers_detach_kafka(order_app *app);

/** @brief Ends every worker's loop, joins the threads and frees the workers. */
void order_workers_free(order_app *app);

#endif
