/* order_event_meta: an event's plain data. See order_event_meta.h. */
#include "order_event_meta.h"

int order_event_limits_any(const order_event_limits *l)
{
    return l->ip_rate > 0 || l->user_rate > 0 || l->event_rate > 0;
}
