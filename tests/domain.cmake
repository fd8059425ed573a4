# Tests of the domain library (domain/, seckill::domain): pure, no network. They link
# the domain alone, so a test here that needs a service's folder is a layering bug.
# test_order_pay (order_pay.c is the domain's) is in order.cmake: it also covers the
# front's pay body and reply.
if(TARGET seckill_domain)
  seckill_add_test(NAME test_sk_order_msg SOURCES unit/test_sk_order_msg.c
                   LIBS seckill::domain LABELS unit)
  foreach(t recon_rule status)
    seckill_add_test(NAME test_order_${t} SOURCES unit/test_order_${t}.c
                     LIBS seckill::domain LABELS unit TIMEOUT 60)
  endforeach()
endif()
