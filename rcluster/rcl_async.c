/* rcl_async: the libevent API. Skeleton: implementation follows. */
#include "rcl_int.h"

#include <stdio.h>
#include <stdlib.h>

struct rcl_async {
    char err[RCL_ERR_SIZE];
};

rcl_async *rcl_async_connect(const char *url, struct event_base *base, struct timeval timeout,
                             char *err, size_t errsz)
{
    snprintf(err, errsz, "rcluster: not implemented yet");
    return NULL;
}
void rcl_async_set_state_cb(rcl_async *ac, rcl_async_state_cb *cb, void *privdata) {}
int rcl_async_ready(const rcl_async *ac) { return 0; }
int rcl_async_command_argv(rcl_async *ac, rcl_async_cb *cb, void *privdata, int argc, const char **argv, const size_t *lens) { return -1; }
int rcl_async_script_add(rcl_async *ac, const char *body, char sha[41]) { return -1; }
const char *rcl_async_errstr(const rcl_async *ac) { return ac->err; }
unsigned long rcl_async_errors(const rcl_async *ac) { return 0; }
void rcl_async_free(rcl_async *ac) { free(ac); }
