# Tests of the shared core (common/).
seckill_add_test(NAME test_sk_jwt SOURCES unit/test_sk_jwt.c LIBS seckill::common LABELS unit)
seckill_add_test(NAME test_sk_config SOURCES unit/test_sk_config.c LIBS seckill::common LABELS unit)
seckill_add_test(NAME test_sk_http_parse SOURCES unit/test_sk_http_parse.c LIBS seckill::common LABELS unit)
# sk_http_header against its contract, on a request built through sk_http_int.h.
seckill_add_test(NAME test_sk_http_header SOURCES unit/test_sk_http_header.c LIBS seckill::common LABELS unit)
seckill_add_test(NAME test_sk_http_query SOURCES unit/test_sk_http_query.c LIBS seckill::common LABELS unit)
seckill_add_test(NAME test_sk_httpdate SOURCES unit/test_sk_httpdate.c LIBS seckill::common LABELS unit)
# The connection layer over a socketpair; support/sk_test_http.c drives it (the split fuzz
# harness, tests/fuzz/fuzz_http_split.c, uses the same driver).
seckill_add_test(NAME test_sk_http_conn SOURCES unit/test_sk_http_conn.c support/sk_test_http.c
                 LIBS seckill::common LABELS unit TIMEOUT 120)
# What the attack on the HTTP layer found (issue 33), over the same socketpair driver.
seckill_add_test(NAME test_sk_http_rfc SOURCES unit/test_sk_http_rfc.c support/sk_test_http.c
                 LIBS seckill::common LABELS unit TIMEOUT 120)
seckill_add_test(NAME test_sk_listen SOURCES unit/test_sk_listen.c LIBS seckill::common LABELS unit)
seckill_add_test(NAME test_sk_id SOURCES unit/test_sk_id.c LIBS seckill_id LABELS unit)
seckill_add_test(NAME test_sk_prom SOURCES unit/test_sk_prom.c LIBS seckill::common LABELS unit)
seckill_add_test(NAME test_sk_kafka_conf SOURCES unit/test_sk_kafka_conf.c LIBS seckill_kafka_conf LABELS unit)
