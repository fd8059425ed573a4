#!/bin/sh
# run.sh: builds the libFuzzer harnesses with clang in their own build directory and
# runs each for FUZZ_SECONDS (default 60), one after another. Fails (exit 1) on a crash,
# a leak, UB or a harness contract check; exits 77 (ctest: skipped) without clang.
# Prints the executions each harness ran, as a table and one line of JSON.
#
#   tests/fuzz/run.sh [build-dir]          default build dir: <repo>/build-fuzz
#   FUZZ_SECONDS=60  FUZZ_HARNESSES="fuzz_http fuzz_jwt ..."  FUZZ_CC=clang
#
# The committed seeds (tests/fuzz/corpus/<harness>/) are read only: what the fuzzer
# finds goes to <build-dir>/corpus/<harness>/, crashing inputs to
# <build-dir>/artifacts/<harness>/ (replay one: <build-dir>/<harness> <file>).
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${FUZZ_BUILD_DIR:-${1:-$(dirname "$(dirname "$here")")/build-fuzz}}
mkdir -p "$build" && build=$(cd "$build" && pwd)
secs=${FUZZ_SECONDS:-60}
cc=${FUZZ_CC:-clang}
harnesses=${FUZZ_HARNESSES:-fuzz_http fuzz_jwt fuzz_consumer_msg fuzz_config fuzz_http_parse fuzz_http_split}

if ! command -v "$cc" >/dev/null 2>&1; then
    echo "fuzz: $cc not found, harnesses not built (skipped)"
    exit 77
fi
cmake -S "$here" -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log"; echo "fuzz: configure failed"; exit 1; }
cmake --build "$build" -j2 || { echo "fuzz: build failed"; exit 1; }

# Leaks are findings; UB already aborts (-fno-sanitize-recover), this adds its stack.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

status=0
table=""
json=""
for h in $harnesses; do
    work=$build/corpus/$h
    art=$build/artifacts/$h
    log=$build/$h.log
    mkdir -p "$work" "$art"
    dict=""
    [ -f "$here/dict/$h.dict" ] && dict="-dict=$here/dict/$h.dict"
    echo "fuzz: $h for ${secs}s (log $log)"
    # In-process (no -jobs/-workers: that is one job, and its output stays in $log).
    # -max_len: past every size bound under test (bodies 4096, config lines 4096).
    # -timeout: one input slower than 10 s is a finding too (a parser that hangs).
    "$build/$h" -max_total_time="$secs" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
        -use_value_profile=1 -artifact_prefix="$art/" $dict "$work" "$here/corpus/$h" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    [ -n "$runs" ] || runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n 1)
    [ -n "$runs" ] || runs=0
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    corpus=$(ls "$work" | wc -l)
    if [ "$rc" -eq 0 ]; then
        result=ok
    else
        result=FAIL
        status=1
        echo "fuzz: $h FAILED (exit $rc); the report:"
        grep -n -A40 -E '==[0-9]+==ERROR|runtime error|FUZZ_CHECK failed|ERROR: libFuzzer' "$log" | head -n 80
        echo "fuzz: inputs: $(ls "$art" | tr '\n' ' ')"
    fi
    table="$table$(printf '%-20s %8s %12s %8s %8s' "$h" "$secs" "$runs" "${cov:-?}" "$result")
"
    json="$json${json:+,}\"$h\":{\"seconds\":$secs,\"execs\":$runs,\"cov\":${cov:-0},\"corpus\":$corpus,\"ok\":$([ "$result" = ok ] && echo true || echo false)}"
done

printf '%-20s %8s %12s %8s %8s\n' harness seconds executions cov result
printf '%s' "$table"
echo "{\"fuzz\":{$json}}"
exit $status
