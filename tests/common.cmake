# Tests of the shared core (common/).
seckill_add_test(NAME test_sk_jwt SOURCES unit/test_sk_jwt.c LIBS seckill::common LABELS unit)
seckill_add_test(NAME test_sk_config SOURCES unit/test_sk_config.c LIBS seckill::common LABELS unit)
seckill_add_test(NAME test_sk_http_parse SOURCES unit/test_sk_http_parse.c LIBS seckill::common LABELS unit)
seckill_add_test(NAME test_sk_httpdate SOURCES unit/test_sk_httpdate.c LIBS seckill::common LABELS unit)
seckill_add_test(NAME test_sk_listen SOURCES unit/test_sk_listen.c LIBS seckill::common LABELS unit)
seckill_add_test(NAME test_sk_id SOURCES unit/test_sk_id.c LIBS seckill_id LABELS unit)
seckill_add_test(NAME test_sk_prom SOURCES unit/test_sk_prom.c LIBS seckill::common LABELS unit)
seckill_add_test(NAME test_sk_kafka_conf SOURCES unit/test_sk_kafka_conf.c LIBS seckill_kafka_conf LABELS unit)
