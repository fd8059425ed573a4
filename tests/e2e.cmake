# Issue 5: the flash sale end to end. Unit tests of seckill-bench's and seckill-check's
# pure parts (no network), and the e2e runs (label e2e, see tests/e2e/README.md).
if(TARGET seckill_bench_core)
  seckill_add_test(NAME test_sb_http SOURCES unit/test_sb_http.c LIBS seckill_bench_core LABELS unit TIMEOUT 60)
  seckill_add_test(NAME test_sb_hist SOURCES unit/test_sb_hist.c LIBS seckill_bench_core LABELS unit TIMEOUT 60)
  seckill_add_test(NAME test_sb_stats SOURCES unit/test_sb_stats.c LIBS seckill_bench_core LABELS unit TIMEOUT 60)
  seckill_add_test(NAME test_sc_judge SOURCES unit/test_sc_judge.c LIBS seckill_check_core LABELS unit TIMEOUT 60)
endif()
