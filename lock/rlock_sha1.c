/* rlock_sha1: SHA-1, only to name our scripts as Redis does (EVALSHA takes the SHA-1 of
 * the script text), so the digests are known without a SCRIPT LOAD round trip and
 * librlock needs no crypto library. The code is rcluster's, through its public header
 * (compiled into librlock with the rest of its blocking half), so there is one SHA-1 in
 * the tree and lock/ sees nothing of rcluster's insides. */
#include "rlock_int.h"

#include "rcluster.h"

void rlock_sha1_hex(const void *data, size_t len, char out[41])
{
    rcl_sha1_hex(data, len, out);
}
