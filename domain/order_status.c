/* order_status: statuses, their names and letters, and the transitions. See order_status.h. */
#include "order_status.h"

#include <string.h>

/* One table for every spelling of a status; index = enum value. */
static const struct {
    const char *name;
    char letter;
} statuses[ORDER_STATUS__COUNT] = {
    [ORDER_STATUS_UNKNOWN] = {NULL, 0},
    [ORDER_STATUS_QUEUED] = {"queued", 0},
    [ORDER_STATUS_CREATED] = {"created", ORDER_STATUS_LETTER_CREATED},
    [ORDER_STATUS_REJECTED] = {"rejected", ORDER_STATUS_LETTER_REJECTED},
    [ORDER_STATUS_PAID] = {"paid", ORDER_STATUS_LETTER_PAID},
    [ORDER_STATUS_CANCELLED] = {"cancelled", ORDER_STATUS_LETTER_CANCELLED},
    [ORDER_STATUS_EXPIRED] = {"expired", ORDER_STATUS_LETTER_EXPIRED},
};

#define BIT(s) (1u << (s))

/* allowed[from]: the set of statuses `from` may move to. */
static const unsigned allowed[ORDER_STATUS__COUNT] = {
    [ORDER_STATUS_QUEUED] = BIT(ORDER_STATUS_CREATED) | BIT(ORDER_STATUS_REJECTED),
    /* rejected: the consumer's surplus, in the transaction that inserted it */
    [ORDER_STATUS_CREATED] = BIT(ORDER_STATUS_PAID) | BIT(ORDER_STATUS_CANCELLED) |
                             BIT(ORDER_STATUS_EXPIRED) | BIT(ORDER_STATUS_REJECTED),
};

static int valid(order_status s)
{
    return (unsigned)s > ORDER_STATUS_UNKNOWN && (unsigned)s < ORDER_STATUS__COUNT;
}

const char *order_status_name(order_status s)
{
    return valid(s) ? statuses[s].name : NULL;
}

order_status order_status_parse(const char *s)
{
    if (!s)
        return ORDER_STATUS_UNKNOWN;
    for (int i = ORDER_STATUS_UNKNOWN + 1; i < ORDER_STATUS__COUNT; i++)
        if (strcmp(statuses[i].name, s) == 0)
            return (order_status)i;
    return ORDER_STATUS_UNKNOWN;
}

char order_status_letter(order_status s)
{
    return valid(s) ? statuses[s].letter : 0;
}

order_status order_status_of_letter(char letter)
{
    if (!letter)
        return ORDER_STATUS_UNKNOWN;
    for (int i = ORDER_STATUS_UNKNOWN + 1; i < ORDER_STATUS__COUNT; i++)
        if (statuses[i].letter == letter)
            return (order_status)i;
    return ORDER_STATUS_UNKNOWN;
}

int order_status_transition_allowed(order_status from, order_status to)
{
    return valid(from) && valid(to) && (allowed[from] & BIT(to)) != 0;
}

int order_status_is_final(order_status s)
{
    return valid(s) && allowed[s] == 0;
}

int order_status_releases(order_status s)
{
    return s == ORDER_STATUS_CANCELLED || s == ORDER_STATUS_EXPIRED;
}
