/* sk_test_cluster: a throwaway Redis Cluster for tests: 6 redis-server processes
 * (sk_test_redis, cluster mode with the options of `deploy/cluster.sh options test`: AOF
 * off, cluster-node-timeout 1500 ms, diskless replication without delay; own ports, bus
 * ports and directories) joined by `deploy/cluster.sh create` (redis-cli --cluster create
 * --cluster-replicas 1) into 3 masters + 3 replicas, and helpers to migrate a slot and
 * to wait on the cluster's state. Waits on conditions (CLUSTER INFO, CLUSTER SLOTS), never sleeps.
 * Not thread-safe: one owner per cluster. */
#ifndef SK_TEST_CLUSTER_H
#define SK_TEST_CLUSTER_H

#include "sk_test_redis.h"

#include <hiredis/hiredis.h>
#include <stddef.h>

#define SK_TEST_CLUSTER_NODES 6

typedef struct sk_test_cluster sk_test_cluster;

/** @brief Starts 6 nodes, creates the cluster and waits until every node reports
 *  cluster_state:ok with all 16384 slots and every node known, and every replica's link
 *  to its master is up. `password`: NULL for
 *  none, else requirepass + masterauth on every node.
 *  @returns the cluster (free with sk_test_cluster_free) or NULL with err set. */
sk_test_cluster *sk_test_cluster_start(const char *password, char *err, size_t errsz);

/** @brief "redis-cluster://[:password@]127.0.0.1:P0,127.0.0.1:P1,127.0.0.1:P2". */
const char *sk_test_cluster_url(const sk_test_cluster *c);

int sk_test_cluster_port(const sk_test_cluster *c, int i);
pid_t sk_test_cluster_pid(const sk_test_cluster *c, int i);
/** @brief The node's server handle (to stop or kill it). Owned by the cluster. */
sk_test_redis *sk_test_cluster_node(sk_test_cluster *c, int i);

/** @brief A blocking connection (AUTH done) to node i; the caller frees it (redisFree).
 *  NULL when the node does not answer. */
redisContext *sk_test_cluster_connect(const sk_test_cluster *c, int i);

/** @brief Index of the node that serves `slot` as master (asked of any live node), or -1. */
int sk_test_cluster_master_of(const sk_test_cluster *c, int slot);

/** @brief Index of a master that does not serve `slot`, or -1. */
int sk_test_cluster_other_master(const sk_test_cluster *c, int slot);

/** @brief The node's 40-char id into id[41]. @returns 0 or -1. */
int sk_test_cluster_node_id(const sk_test_cluster *c, int i, char id[41]);

/** @brief Waits until every live node reports cluster_state:ok and every live node's
 *  CLUSTER SLOTS names the same master for `slot` (-1: skip that check), up to
 *  timeout_ms. @returns 0, or -1 with err set. */
int sk_test_cluster_wait_ok(const sk_test_cluster *c, int slot, int timeout_ms, char *err,
                            size_t errsz);

/** @brief Moves `slot` with its keys from its master to master `to` (SETSLOT IMPORTING /
 *  MIGRATING, MIGRATE of every key, SETSLOT NODE on every master), then waits until
 *  every live node agrees. @returns 0, or -1 with err set. */
int sk_test_cluster_migrate_slot(sk_test_cluster *c, int slot, int to, char *err, size_t errsz);

/** @brief Runs one command on node i and returns the reply (caller frees), NULL on I/O
 *  error. Arguments as redisCommand's format. */
redisReply *sk_test_cluster_cmd(const sk_test_cluster *c, int i, const char *fmt, ...);

/** @brief Stops every node, removes their directories, frees. NULL is fine. */
void sk_test_cluster_free(sk_test_cluster *c);

#endif
