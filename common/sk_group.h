/* sk_group: the Kafka consumer group that writes the orders into PostgreSQL, one setting
 * for both programs. seckill-consumer joins it (and commits an offset only after its
 * PostgreSQL commit); seckill-order's reconciler reads its committed offsets as the proof
 * that an order is stored or never will be. Two settings that happen to agree would let
 * a deployment change one and not the other, and the reconciler would then wait for ever
 * on a group nobody commits (or, worse, read another pipeline's). So both configuration
 * tables take this one entry: key group.id, environment SECKILL_GROUP_ID. */
#ifndef SK_GROUP_H
#define SK_GROUP_H

#include "sk_config.h"

#define SK_GROUP_KEY "group.id"
#define SK_GROUP_DEFAULT "seckill-order-writer"

/* The configuration table entry; offset: offsetof(the program's struct, its char * field). */
#define SK_GROUP_CFG_ENTRY(offset)                                                             \
    {SK_GROUP_KEY, SK_CFG_STRING, 0, 0, SK_GROUP_DEFAULT,                                      \
     "Kafka consumer group that writes the orders into PostgreSQL: seckill-consumer joins "   \
     "it, seckill-order's reconciler reads its committed offsets (one value for both)",       \
     (offset)}

#endif
