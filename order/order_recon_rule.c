/* order_recon_rule: the cancel rule of the reconciler. See order_recon_rule.h. */
#include "order_recon_rule.h"

int64_t order_recon_cutoff(order_recon_mark *m, int64_t t_now, int64_t hw_now, int64_t committed)
{
    /* No commit yet counts as offset 0: drained only while the partition is empty. */
    int64_t c = committed < 0 ? 0 : committed;
    int64_t cutoff = ORDER_RECON_NEVER;
    if (c >= hw_now)
        cutoff = t_now;
    else if (m->set && c >= m->hw)
        cutoff = m->t_ms;
    /* A new mark once the old one is passed (or there is none): the group passes it in
     * turn about one consumer lag later. A mark not yet passed is kept, or a group that
     * lags for ever would never let anything go. */
    if (!m->set || c >= m->hw) {
        m->hw = hw_now;
        m->t_ms = t_now;
        m->set = 1;
    }
    return cutoff;
}

int order_recon_may_cancel(int64_t ts_ms, int64_t cutoff, int64_t wait_ms)
{
    if (cutoff == ORDER_RECON_NEVER || wait_ms < 0)
        return 0;
    return ts_ms <= cutoff - wait_ms;
}
