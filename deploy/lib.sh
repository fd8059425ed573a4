# shellcheck shell=bash
# deploy/lib.sh: the shell helpers that deploy/, bench/ and the tests' shell drivers
# share, one home each: waits on a condition, free ports and what holds a taken one,
# CPU ticks of a process and of a process tree, wrk's figures (rate, latency, totals),
# one median and one ratio, and a number out of a summary.json.
#
# Sourced, never run: `. "$ROOT/deploy/lib.sh"`. Every function is prefixed `sk_`, says
# nothing on success, prints its answer on stdout and returns non-zero when it has none
# (the caller words the error: a script dies, a test fails, a bench skips). Safe under
# `set -euo pipefail` and without it. No process is started here.
[ -n "${SK_LIB_SOURCED:-}" ] && return 0
SK_LIB_SOURCED=1

# ---- waits: poll a condition every 50 ms up to a deadline, never a blind sleep ----

# sk_wait SECONDS COMMAND...: until COMMAND succeeds (its output discarded).
# @returns 0 once it did, 1 at the deadline.
sk_wait() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 0.05
    done
}

# sk_port_open PORT [HOST]: something accepts TCP connections on HOST (127.0.0.1):PORT.
sk_port_open() { (exec 3<>"/dev/tcp/${2:-127.0.0.1}/$1") 2>/dev/null; }

# sk_wait_port SECONDS PORT [HOST]: until the port accepts connections.
sk_wait_port() { sk_wait "$1" sk_port_open "$2" "${3:-127.0.0.1}"; }

# sk_wait_http SECONDS URL: until URL answers 2xx (curl -f).
sk_wait_http() { sk_wait "$1" curl -fsS -o /dev/null --max-time 2 "$2"; }

# ---- ports ----

# sk_port_floor: the lowest port of the kernel's ephemeral range (32768 if unknown). Our
# free ports stay below it, so no outgoing connection can take one between the choice and
# the bind.
sk_port_floor() {
    local lo
    lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
    [ "$lo" -gt 12000 ] 2>/dev/null || lo=32768
    echo "$lo"
}

# sk_free_port: a loopback port nothing listens on, between 10000 and the ephemeral range.
sk_free_port() { sk_free_ports 1; }

# sk_free_ports N [OFFSET]: a port P with P .. P+N-1 all free and, with OFFSET, also
# P+OFFSET .. P+OFFSET+N-1 (a Redis Cluster's bus ports). @returns 1 after 200 tries.
sk_free_ports() {
    local n=$1 off=${2:-} lo p q ok
    lo=$(sk_port_floor)
    for _ in $(seq 1 200); do
        p=$((10000 + RANDOM % (lo - 10000 - n - ${off:-0})))
        ok=1
        for ((q = p; q < p + n; q++)); do
            if sk_port_open "$q" || { [ -n "$off" ] && sk_port_open $((q + off)); }; then
                ok=0
                break
            fi
        done
        [ $ok -eq 1 ] && { echo "$p"; return 0; }
    done
    return 1
}

# sk_port_holder PORT: what listens on PORT, for an error message ("redis-server pid 123"
# from ss -ltnp; "something" when ss cannot see the owner, e.g. another user's process).
# @returns 1 when nothing listens there.
sk_port_holder() {
    local line who
    line=$(ss -Hltnp "sport = :$1" 2>/dev/null | head -n 1)
    if [ -z "$line" ]; then
        sk_port_open "$1" || return 1
        echo "something"
        return 0
    fi
    who=$(sed -n 's/.*users:(("\([^"]*\)",pid=\([0-9]*\).*/\1 pid \2/p' <<<"$line")
    [ -n "$who" ] || who="something (ss shows no owner: a process of another user?)"
    echo "$who"
}

# ---- CPU of processes (from /proc, in clock ticks: getconf CLK_TCK a second) ----

# sk_cpu_ticks PID: user + system ticks of one process, 0 when it is gone. The command
# name between parentheses may hold spaces: fields are counted after its ')'.
sk_cpu_ticks() {
    local s
    s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return 0; }
    s=${s##*) }
    awk '{ print $12 + $13 }' <<<"$s"
}

# sk_tree_pids PID: the process and all its descendants, one pid a line, from one
# snapshot of the process table (a walk with pgrep would find its own subshells).
sk_tree_pids() {
    ps -e -o pid= -o ppid= | awk -v root="$1" '
        { kids[$2] = kids[$2] " " $1 }
        END {
            todo[1] = root; n = 1
            while (n > 0) {
                p = todo[n--]; print p
                k = split(kids[p], c, " ")
                for (i = 1; i <= k; i++) todo[++n] = c[i]
            }
        }'
}

# sk_tree_ticks PID: sk_cpu_ticks of the process and all its descendants (nginx's master
# and workers, a shell and what it runs). Children that exited and were reaped count in
# their parent's cutime, which this leaves out: sample before they go.
sk_tree_ticks() {
    local t=0 p
    for p in $(sk_tree_pids "$1"); do t=$((t + $(sk_cpu_ticks "$p"))); done
    echo "$t"
}

# sk_cpu_seconds PID: user + system CPU seconds of one process (0 when gone).
sk_cpu_seconds() {
    awk -v t="$(sk_cpu_ticks "$1")" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f\n", t / hz }'
}

# ---- wrk's output (a file holding what `wrk --latency` printed) ----

# sk_rps FILE: requests per second, rounded.
sk_rps() { awk '/^Requests\/sec/ { printf "%.0f", $2 }' "$1"; }

# sk_total FILE: requests answered in the run.
sk_total() { awk '/requests in/ { print $1 }' "$1"; }

# sk_non2xx FILE: answers outside 2xx-3xx (0 when wrk printed none).
sk_non2xx() { awk '/Non-2xx/ { n = $5 } END { print n + 0 }' "$1"; }

# sk_lat_ms FILE PCT: a latency percentile of --latency's table ("50%", "99%") in ms.
sk_lat_ms() {
    awk -v p="$2" '$1 == p { v = $2
        if (v ~ /us$/) { sub(/us$/, "", v); v = v / 1000 }
        else if (v ~ /ms$/) { sub(/ms$/, "", v) }
        else if (v ~ /m$/) { sub(/m$/, "", v); v = v * 60000 }
        else if (v ~ /s$/) { sub(/s$/, "", v); v = v * 1000 }
        printf "%.2f", v }' "$1"
}

# ---- figures ----

# sk_median < numbers: the median of the numbers on stdin, one a line. With an even
# count it is the mean of the two middle values (the usual definition; the lower one
# would bias every even-round median down). An odd count prints the middle value as it
# was written. No numbers: prints "n/a" and still returns 0, so a table cell can show it.
sk_median() { sk_median_or n/a; }

# sk_median_or EMPTY < numbers: sk_median, printing EMPTY when there are no numbers.
sk_median_or() {
    sort -g | awk -v empty="$1" '{ v[NR] = $1 }
        END {
            if (NR == 0) print empty
            else if (NR % 2) print v[(NR + 1) / 2]
            else printf "%.10g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2
        }'
}

# sk_ratio A B [FORMAT]: A / B (FORMAT "%.2f"), "n/a" when B is not positive.
sk_ratio() {
    awk -v a="$1" -v b="$2" -v f="${3:-%.2f}" 'BEGIN { if (b + 0 > 0) printf f, a / b; else printf "n/a" }'
}

# sk_json_num FILE KEY: the number of "KEY": in a JSON file written one key a line
# (seckill-bench's summary.json), empty when absent.
sk_json_num() { sed -n "s/^ *\"$2\": *\(-\{0,1\}[0-9.]*\).*/\1/p" "$1" | head -n 1; }

# sk_json_count FILE KEY: the whole number of "KEY": (e.g. "409 sold_out" among
# summary.json's outcomes), 0 when absent.
sk_json_count() {
    local v
    v=$(sed -n "s/^ *\"$2\": *\([0-9]*\).*/\1/p" "$1" | head -n 1)
    echo "${v:-0}"
}

# ---- PostgreSQL: the stack's server settings, and running its tools -----------------

# The server settings of every PostgreSQL the project starts (the local stack's, and the
# private one of bench/bench-consumer.sh). Durability-neutral: fsync and
# synchronous_commit stay on (the consumer commits Kafka offsets only after PostgreSQL's
# COMMIT, so a commit must survive a crash); room for the order table and its indexes in
# memory, fewer checkpoints during a drain; wal_level=logical: the order transitions are
# read from the WAL (consumer_walproto.h, issue 36).
SK_PG_TUNING="-c shared_buffers=512MB -c wal_buffers=64MB -c max_wal_size=4GB -c checkpoint_timeout=15min -c wal_level=logical"

# sk_as_pg COMMAND...: runs COMMAND as the postgres user when this is root (initdb and
# pg_ctl refuse root), from / (postgres may not be allowed into the caller's directory).
sk_as_pg() {
    if [ "$(id -u)" -eq 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

# sk_pg_bin: the newest installed PostgreSQL server's bin directory.
sk_pg_bin() {
    local d
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -n "$d" ] && echo "$d"
}
