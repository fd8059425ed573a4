/* rcl_sync: the blocking API. Skeleton: implementation follows. */
#include "rcl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rcl_ctx {
    char err[RCL_ERR_SIZE];
};

rcl_ctx *rcl_connect(const char *url, struct timeval timeout, char *err, size_t errsz)
{
    snprintf(err, errsz, "rcluster: not implemented yet");
    return NULL;
}
void rcl_free(rcl_ctx *c) { free(c); }
int rcl_is_cluster(const rcl_ctx *c) { return 0; }
const char *rcl_errstr(const rcl_ctx *c) { return c->err; }
redisReply *rcl_command_argv(rcl_ctx *c, int argc, const char **argv, const size_t *lens) { return NULL; }
int rcl_append_argv(rcl_ctx *c, int argc, const char **argv, const size_t *lens) { return -1; }
int rcl_get_reply(rcl_ctx *c, redisReply **reply) { *reply = NULL; return -1; }
int rcl_script_add(rcl_ctx *c, const char *body, char sha[41]) { return -1; }
int rcl_command_all_masters(rcl_ctx *c, int argc, const char **argv, const size_t *lens) { return -1; }
int rcl_master_count(rcl_ctx *c) { return 0; }
redisReply *rcl_command_on_master(rcl_ctx *c, int i, int argc, const char **argv, const size_t *lens) { return NULL; }
const char *rcl_master_addr(rcl_ctx *c, int i) { return NULL; }
redisContext *rcl_connect_node(rcl_ctx *c, const char *key, size_t keylen, char *err, size_t errsz) { return NULL; }
