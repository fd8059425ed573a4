# shellcheck shell=bash
# bench/bench_lib.sh: what the bench-*.sh scripts that start private servers share.
# Source it after setting the script's name: `BENCH_NAME=order . bench/bench_lib.sh`.
# Gives WORK (a temporary directory, removed at exit) and PIDS (processes stopped with
# SIGTERM and waited for at exit), and sources deploy/lib.sh (waits, free ports, CPU
# ticks, wrk's figures, the median).
# shellcheck source=deploy/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib.sh"

WORK=$(mktemp -d "/tmp/bench-${BENCH_NAME:-bench}.XXXXXX")
PIDS=()
bench_cleanup() {
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap bench_cleanup EXIT
