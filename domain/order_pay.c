/* order_pay: the after-the-202 state machine. See order_pay.h; the statuses and the
 * transitions allowed are order_status.h's. */
#include "order_pay.h"
#include "order_status.h"

#include <string.h>

void order_pay_decide(const order_pay_in *in, order_pay_out *out)
{
    order_status cur = order_status_parse(in->status);
    if (cur == ORDER_STATUS_UNKNOWN || cur == ORDER_STATUS_QUEUED)
        cur = ORDER_STATUS_REJECTED; /* the check constraint allows no other row status */
    /* Static spellings, so out->status outlives the row it was read from. */
    out->new_status = NULL;
    out->status = order_status_name(cur);
    if (in->owner != in->actor && !in->actor_admin) {
        out->answer = ORDER_PAY_FORBIDDEN;
        return;
    }
    order_status want = in->op == ORDER_PAY_OP_PAY ? ORDER_STATUS_PAID : ORDER_STATUS_CANCELLED;
    if (order_status_transition_allowed(cur, want)) { /* created */
        if (in->overdue) {
            /* The window closed and the expiry has not run yet: expire it now, so the
             * late caller and the expiry agree on one outcome. */
            out->new_status = out->status = order_status_name(ORDER_STATUS_EXPIRED);
            out->answer = ORDER_PAY_CLOSED;
            return;
        }
        out->new_status = out->status = order_status_name(want);
        out->answer = ORDER_PAY_OK;
        return;
    }
    if (cur == ORDER_STATUS_PAID) {
        int same = in->op == ORDER_PAY_OP_PAY && in->payment_ref && in->ref &&
                   strcmp(in->payment_ref, in->ref) == 0;
        out->answer = same ? ORDER_PAY_OK : ORDER_PAY_ALREADY_PAID;
        return;
    }
    /* Cancelling a cancelled order again is a repeat of the same call: 200. */
    out->answer = cur == want && cur == ORDER_STATUS_CANCELLED ? ORDER_PAY_OK : ORDER_PAY_CLOSED;
}

int order_pay_releases(const char *status)
{
    return order_status_releases(order_status_parse(status));
}
