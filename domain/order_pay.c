/* order_pay: the after-the-202 state machine. See order_pay.h. */
#include "order_pay.h"

#include <string.h>

/* The static spelling of a status read from the row, so out->status outlives the row. */
static const char *status_static(const char *s)
{
    static const char *const known[] = {"created", "paid", "cancelled", "expired", "rejected"};
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(s, known[i]) == 0)
            return known[i];
    return "rejected"; /* the check constraint allows nothing else */
}

void order_pay_decide(const order_pay_in *in, order_pay_out *out)
{
    out->new_status = NULL;
    out->status = status_static(in->status);
    if (in->owner != in->actor && !in->actor_admin) {
        out->answer = ORDER_PAY_FORBIDDEN;
        return;
    }
    if (strcmp(out->status, "created") == 0) {
        if (in->overdue) {
            /* The window closed and the expiry has not run yet: expire it now, so the
             * late caller and the expiry agree on one outcome. */
            out->new_status = out->status = "expired";
            out->answer = ORDER_PAY_CLOSED;
            return;
        }
        out->new_status = out->status = in->op == ORDER_PAY_OP_PAY ? "paid" : "cancelled";
        out->answer = ORDER_PAY_OK;
        return;
    }
    if (strcmp(out->status, "paid") == 0) {
        int same = in->op == ORDER_PAY_OP_PAY && in->payment_ref && in->ref &&
                   strcmp(in->payment_ref, in->ref) == 0;
        out->answer = same ? ORDER_PAY_OK : ORDER_PAY_ALREADY_PAID;
        return;
    }
    /* Cancelling a cancelled order again is a repeat of the same call: 200. */
    if (in->op == ORDER_PAY_OP_CANCEL && strcmp(out->status, "cancelled") == 0) {
        out->answer = ORDER_PAY_OK;
        return;
    }
    out->answer = ORDER_PAY_CLOSED;
}

int order_pay_releases(const char *status)
{
    return status && (strcmp(status, "cancelled") == 0 || strcmp(status, "expired") == 0);
}
