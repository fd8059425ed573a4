# bench/bench_lib.sh: what the bench-*.sh scripts that start private servers share.
# Source it after setting the script's name: `BENCH_NAME=order . bench/bench_lib.sh`.
# Gives WORK (a temporary directory, removed at exit), PIDS (processes stopped with
# SIGTERM and waited for at exit) and free_port.

WORK=$(mktemp -d "/tmp/bench-${BENCH_NAME:-bench}.XXXXXX")
PIDS=()
bench_cleanup() {
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap bench_cleanup EXIT

# A loopback port nothing listens on (connect refused), below the ephemeral range, so no
# outgoing connection can take it between the choice and the bind.
free_port() {
    local p
    for _ in $(seq 1 100); do
        p=$(shuf -i 20000-32000 -n 1)
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
    done
    return 1
}
