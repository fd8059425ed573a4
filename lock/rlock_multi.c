/* rlock_multi: MultiLock: all of several locks or none. A round tries each lock once
 * without waiting; a refusal releases what the round took (holding some while waiting
 * for others is how two multilocks deadlock) and the next round follows a jittered pause. */
#include "rlock_int.h"

#include <stdint.h>
#include <unistd.h>

int rlock_multi_lock(rlock_t *const *locks, size_t n, int64_t wait_ms, int64_t lease_ms)
{
    if (locks == NULL || n == 0)
        return RLOCK_ERR_ARG;
    unsigned int seed = (unsigned)getpid() ^ (unsigned)(uintptr_t)locks ^ (unsigned)rlock_now_ms();
    int64_t deadline = wait_ms < 0 ? INT64_MAX : rlock_now_ms() + wait_ms;
    for (;;) {
        size_t i;
        int rv = 0;
        for (i = 0; i < n; i++)
            if ((rv = rlock_try_lock(locks[i], 0, lease_ms, NULL)) != 0)
                break;
        if (i == n)
            return 0;
        for (size_t j = 0; j < i; j++)
            rlock_unlock(locks[j]);
        if (rv != RLOCK_ERR_TIMEOUT)
            return rv;
        int64_t now = rlock_now_ms();
        if (now >= deadline)
            return RLOCK_ERR_TIMEOUT;
        int64_t d = rlock_jitter_ms(20, &seed);
        rlock_sleep_ms(d < deadline - now ? d : deadline - now);
    }
}

int rlock_multi_unlock(rlock_t *const *locks, size_t n)
{
    int first = 0;
    for (size_t i = 0; i < n; i++) {
        int rv = rlock_unlock(locks[i]);
        if (rv != 0 && first == 0)
            first = rv;
    }
    return first;
}
