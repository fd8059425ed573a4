# Tests of the shared core (common/).
seckill_add_test(NAME test_sk_jwt SOURCES unit/test_sk_jwt.c LIBS seckill::common LABELS unit)
seckill_add_test(NAME test_sk_config SOURCES unit/test_sk_config.c LIBS seckill::common LABELS unit)
seckill_add_test(NAME test_sk_reqscan SOURCES unit/test_sk_reqscan.c LIBS seckill::common LABELS unit)
