#!/usr/bin/env bash
# tests/deploy/local_sh.sh: deploy/local.sh's strictness and clean-up (label deploy).
#   1. an unknown flag or argument is refused with exit status 2, per subcommand;
#   2. `up` on a port something else holds names the port and its holder, and `down`
#      then leaves nothing of what `up` had started;
#   3. `up` into another shape says what differs;
#   4. `test` interrupted by SIGTERM (a timeout) stops ctest and its whole stack.
# It drives stacks of its own: their own run directories and free ports, an empty build
# directory (so only Redis and PostgreSQL run: no service binaries, dev Kafka asked for
# and absent), never the stack ctest runs under.
set -euo pipefail
SRC=${SECKILL_SOURCE_DIR:?SECKILL_SOURCE_DIR is not set (ctest sets it)}
LOCAL=$SRC/deploy/local.sh
# shellcheck source=deploy/lib.sh
. "$SRC/deploy/lib.sh"
T=$(mktemp -d /tmp/seckill-local-sh.XXXXXX)
HOLDER_PID=""
say() { printf '[local_sh %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
fail() { say "FAIL: $*"; exit 1; }

# Ports of our own: each stack gets its Redis and PostgreSQL on free ports (the test
# stack of `local.sh test` adds 10000 to the SECKILL_*_PORT it is given).
stack_env() { # RUN-DIR REDIS-PORT PG-PORT [OFFSET]: the environment of one stack
    local off=${4:-0}
    echo "SECKILL_RUN_DIR=$1" "SECKILL_TEST_RUN_DIR=$1" "SECKILL_BUILD_DIR=$T/empty-build" \
        "SECKILL_TEST_BUILD_DIR=$T/fake-build" "SECKILL_REDIS_PORT=$(($2 - off))" \
        "SECKILL_PG_PORT=$(($3 - off))" "SECKILL_HTTP_PORT=$(($(sk_free_port) - off))" \
        "SECKILL_CONSUMER_HTTP_PORT=$(($(sk_free_port) - off))" \
        "SECKILL_CLUSTER_PORT=$(($(sk_free_ports 6 100) - off))" "SECKILL_BROKER_PORT=$(($(sk_free_port) - off))"
}

# The SECKILL_* of ctest's own stack, dropped from every local.sh we run.
mapfile -t UNSET < <(env | sed -n 's/^\(SECKILL_[A-Z_]*\)=.*/--unset=\1/p')

# run_local ENV-WORDS -- ARGS...: local.sh with a stack environment, its stderr in $T/err.
run_local() {
    local envw=()
    while [ "$1" != -- ]; do envw+=("$1"); shift; done
    shift
    env "${UNSET[@]}" SECKILL_DEV_KAFKA=1 "${envw[@]}" "$LOCAL" "$@" 2>"$T/err"
}

down_all() {
    local d
    for d in "$T"/run-*; do
        [ -d "$d" ] || continue
        env "${UNSET[@]}" SECKILL_RUN_DIR="$d" \
            SECKILL_REDIS_PORT="$(cat "$d/.redis_port" 2>/dev/null || echo 1)" \
            SECKILL_BUILD_DIR="$T/empty-build" "$LOCAL" down >/dev/null 2>&1 || true
        [ -f "$d/pgdir" ] && rm -rf "$(cat "$d/pgdir")"
    done
}
cleanup() {
    local rc=$?
    [ -z "$HOLDER_PID" ] || kill "$HOLDER_PID" 2>/dev/null || true
    down_all
    rm -rf "$T"
    exit $rc
}
trap cleanup EXIT
mkdir -p "$T/empty-build/bin" "$T/fake-build"

# ---- 1. unknown flags ----
expect2() {
    local rc=0
    run_local -- "$@" || rc=$?
    [ $rc -eq 2 ] || fail "local.sh $*: exit status $rc, not 2"
    grep -q -- "${*: -1}" "$T/err" || fail "local.sh $*: the message does not name '${*: -1}': $(cat "$T/err")"
}
expect2 up --shards
expect2 up --cluster --sentinel
expect2 up --fronts 2 --bogus
expect2 status --verbose
expect2 down now
expect2 demo --down --bogus
expect2 bench nosuchbench
expect2 frobnicate
say "unknown flags and arguments: exit 2, named"

# ---- 2. a taken port ----
R=$(sk_free_port)
P=$(sk_free_port)
[ "$R" != "$P" ] || P=$(sk_free_port)
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(300)' "$P" &
HOLDER_PID=$!
sk_wait_port 10 "$P" || fail "the port holder did not listen on $P"
mkdir -p "$T/run-a"
echo "$R" >"$T/run-a/.redis_port"
read -ra E <<<"$(stack_env "$T/run-a" "$R" "$P")"
rc=0
run_local "${E[@]}" -- up --dev-kafka || rc=$?
[ $rc -ne 0 ] || fail "up succeeded with its PostgreSQL port $P taken"
grep -q "port $P" "$T/err" && grep -q python3 "$T/err" ||
    fail "up did not name port $P and its holder: $(tail -n 3 "$T/err")"
said=$(grep -o "port $P.*" "$T/err" | head -n 1)
grep -q "could not start server" "$T/err" && fail "up still fails in pg_ctl: $(tail -n 3 "$T/err")"
redis_pid=$(cat "$T/run-a/redis.pid" 2>/dev/null || true)
run_local "${E[@]}" -- down || fail "down failed: $(cat "$T/err")"
[ -z "$redis_pid" ] || ! kill -0 "$redis_pid" 2>/dev/null || fail "down left the Redis of up (pid $redis_pid)"
kill "$HOLDER_PID"
HOLDER_PID=""
say "a taken port: named with its holder ($said)"

# ---- 3. another shape ----
run_local "${E[@]}" -- up --dev-kafka --fronts 2 || fail "up --fronts 2: $(tail -n 3 "$T/err")"
run_local "${E[@]}" -- up --dev-kafka || fail "up after up --fronts 2: $(tail -n 3 "$T/err")"
grep -q "running stack is '.*2 front(s)" "$T/err" ||
    fail "up into another shape did not say so: $(cat "$T/err")"
said=$(grep -o "running stack is.*" "$T/err" | head -n 1)
run_local "${E[@]}" -- down || fail "down failed: $(cat "$T/err")"
say "another shape: said ($said)"

# ---- 4. test interrupted ----
# A fake build directory whose only test waits: `test` brings its stack up (Redis,
# PostgreSQL), runs ctest on it, and is stopped by SIGTERM while the test runs.
cat >"$T/fake-build/sleeper.sh" <<EOS
#!/bin/sh
touch "$T/sleeping"
sleep 300
EOS
chmod +x "$T/fake-build/sleeper.sh"
echo "add_test(sleeper \"$T/fake-build/sleeper.sh\")" >"$T/fake-build/CTestTestfile.cmake"
R2=$(sk_free_port)
P2=$(sk_free_port)
mkdir -p "$T/run-t"
echo "$R2" >"$T/run-t/.redis_port"
read -ra E2 <<<"$(stack_env "$T/run-t" "$R2" "$P2" 10000)"
# env execs local.sh: $! is local.sh itself, which the signal must reach.
env "${UNSET[@]}" SECKILL_DEV_KAFKA=1 "${E2[@]}" SECKILL_TEST_BUILD=0 "$LOCAL" test >"$T/test.out" 2>"$T/test.err" &
tpid=$!
sk_wait 120 test -e "$T/sleeping" || { kill "$tpid" 2>/dev/null; fail "test did not reach its ctest: $(tail -n 5 "$T/test.err")"; }
redis_pid=$(cat "$T/run-t/redis.pid")
sk_port_open "$P2" || fail "the test stack's PostgreSQL does not listen on $P2"
kill -TERM "$tpid"
gone() { ! kill -0 "$tpid" 2>/dev/null; }
sk_wait 60 gone || fail "test did not end within 60 s of SIGTERM"
wait "$tpid" 2>/dev/null || true
! kill -0 "$redis_pid" 2>/dev/null || fail "the test stack's Redis (pid $redis_pid) outlived the interrupted test"
! sk_port_open "$P2" || fail "the test stack's PostgreSQL (port $P2) outlived the interrupted test"
pgrep -f "$T/fake-build" >/dev/null && fail "a process of the interrupted test is left: $(pgrep -af "$T/fake-build")"
say "test interrupted: ctest, Redis and PostgreSQL stopped"
say "PASS"
