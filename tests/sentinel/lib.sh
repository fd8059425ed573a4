# shellcheck shell=bash
# tests/sentinel/lib.sh: a private pipeline whose Redis runs behind Sentinel (issue 33),
# sourced by the tests in tests/sentinel/. It is tests/fault/lib.sh's pipeline (a
# throwaway PostgreSQL, seckill-devkafka, seckill-consumer, seckill-order on free ports,
# seckill-bench and seckill-check) with deploy/sentinel.sh's set in place of the single
# Redis: a master, two replicas and three sentinels (down-after-milliseconds 1000), and
# every service on the redis-sentinel:// URL. Optionally toxiproxy (the one of
# deploy/local.sh deps) in front of the first master: one proxy for the sentinels and
# the clients, one for the replicas, so that a test can cut the master off while it
# still runs.
. "$(dirname "${BASH_SOURCE[0]}")/../fault/lib.sh"

SENT_DIR=""
SENT_DOWN_AFTER_MS=1000
TOXI_PID=""
TOXI_BIN="${SECKILL_SOURCE_DIR:-$(dirname "${BASH_SOURCE[0]}")/../..}/deploy/toxiproxy/bin/toxiproxy-server"

# Runs after the services stopped (e2e_cleanup's hook): the set and the proxy go, then
# what tests/fault/lib.sh's hook stops (PostgreSQL).
eval "fault_$(declare -f e2e_after_stop)"
e2e_after_stop() {
    if [ -n "$SENT_DIR" ]; then
        if [ "$1" -ne 0 ] && [ "$1" -ne $E2E_SKIP ]; then
            cp "$SENT_DIR"/*.log "$E2E_TMP/" 2>/dev/null || true
        fi
        "$SECKILL_SOURCE_DIR/deploy/sentinel.sh" down "$SENT_DIR" >/dev/null 2>&1 || true
    fi
    [ -n "$TOXI_PID" ] && kill "$TOXI_PID" 2>/dev/null
    fault_e2e_after_stop "$1"
}

sentinel_require() {
    fault_require
    command -v redis-sentinel >/dev/null || e2e_skip "redis-sentinel not installed (deploy/local.sh deps)"
}

# ---- toxiproxy (its HTTP API, with curl) ----

toxi_start() {
    [ -x "$TOXI_BIN" ] || e2e_skip "toxiproxy not installed ($TOXI_BIN: deploy/local.sh deps)"
    TOXI_PORT=$(e2e_free_port)
    "$TOXI_BIN" -host 127.0.0.1 -port "$TOXI_PORT" >"$E2E_TMP/toxiproxy.log" 2>&1 &
    TOXI_PID=$!
    e2e_wait 20 "toxiproxy on $TOXI_PORT" curl -fsS "http://127.0.0.1:$TOXI_PORT/version"
}

toxi_api() { curl -fsS --max-time 5 -H 'Content-Type: application/json' "$@"; }

# toxi_proxy NAME LISTEN_PORT UPSTREAM_PORT
toxi_proxy() {
    toxi_api -X POST "http://127.0.0.1:$TOXI_PORT/proxies" \
        -d "{\"name\":\"$1\",\"listen\":\"127.0.0.1:$2\",\"upstream\":\"127.0.0.1:$3\"}" >/dev/null ||
        e2e_fail "toxiproxy: proxy $1 not created"
}

# toxi_cut NAME: a black hole both ways (the `timeout` toxic with timeout 0: bytes vanish,
# the connections stay open, as behind a dead link).
toxi_cut() {
    local dir
    for dir in upstream downstream; do
        toxi_api -X POST "http://127.0.0.1:$TOXI_PORT/proxies/$1/toxics" \
            -d "{\"name\":\"cut_$dir\",\"type\":\"timeout\",\"stream\":\"$dir\",\"attributes\":{\"timeout\":0}}" \
            >/dev/null || e2e_fail "toxiproxy: cut of $1 not set"
    done
    e2e_log "link $1 cut (black hole)"
}

toxi_heal() {
    local dir
    for dir in upstream downstream; do
        toxi_api -X DELETE "http://127.0.0.1:$TOXI_PORT/proxies/$1/toxics/cut_$dir" >/dev/null ||
            e2e_fail "toxiproxy: cut of $1 not removed"
    done
    e2e_log "link $1 healed"
}

# ---- the set ----

# sentinel_start_set [proxied]: the set on free ports; SECKILL_REDIS_URL its URL.
# With "proxied": toxiproxy in front of the master (SENT_PROXY_CLIENTS for the
# sentinels and so the clients, SENT_PROXY_REPL for the replicas).
sentinel_start_set() {
    local base
    base=$(sk_free_ports 6) || e2e_fail "no 6 free ports"
    SENT_DIR="$E2E_TMP/sentinel"
    SENT_BASE=$base
    local envs=(SENTINEL_DOWN_AFTER_MS=$SENT_DOWN_AFTER_MS)
    if [ "${1:-}" = proxied ]; then
        toxi_start
        SENT_PROXY_CLIENTS=$(e2e_free_port)
        SENT_PROXY_REPL=$(e2e_free_port)
        toxi_proxy clients "$SENT_PROXY_CLIENTS" "$base"
        toxi_proxy repl "$SENT_PROXY_REPL" "$base"
        envs+=(SENTINEL_MONITOR_PORT=$SENT_PROXY_CLIENTS SENTINEL_REPLICAOF_PORT=$SENT_PROXY_REPL)
    fi
    SECKILL_REDIS_URL=$(env "${envs[@]}" "$SECKILL_SOURCE_DIR/deploy/sentinel.sh" up "$SENT_DIR" "$base" 2>"$E2E_TMP/sentinel.sh.log") ||
        e2e_fail "the sentinel set did not come up: $(tail -n 3 "$E2E_TMP/sentinel.sh.log")"
    export SECKILL_REDIS_URL
    e2e_log "redis behind sentinel: master $base, replicas $((base + 1)) $((base + 2)), sentinels $((base + 3))-$((base + 5)); $SECKILL_REDIS_URL"
}

# The master's port as the first sentinel names it now.
sentinel_master_port() {
    redis-cli -p $((SENT_BASE + 3)) SENTINEL get-master-addr-by-name seckill | sed -n 2p
}

# fault_rcli (tests/fault/lib.sh's helpers use it): redis-cli on the master of now.
fault_rcli() { redis-cli -p "$(sentinel_master_port)" "$@"; }

# sentinel_up: the set, PostgreSQL, the dev Kafka, a consumer (on the sentinel URL too:
# its order-index recorder) and the front "order" with the extra ENV=VALUE given.
sentinel_up() {
    local mode=$1
    shift
    sentinel_start_set "$mode"
    fault_start_pg
    e2e_start_kafka
    fault_start_consumer consumer
    fault_start_order order "$@"
    FAULT_URLS=http://127.0.0.1:$FAULT_PORT_order
}

# sentinel_wait_failover OLD_PORT SECONDS: every sentinel names another master, which
# answers ROLE master. Prints the new master's port.
sentinel_failed_over() {
    local p m
    for p in $((SENT_BASE + 3)) $((SENT_BASE + 4)) $((SENT_BASE + 5)); do
        m=$(redis-cli -p "$p" SENTINEL get-master-addr-by-name seckill | sed -n 2p)
        [ -n "$m" ] && [ "$m" != "$1" ] || return 1
    done
    redis-cli -p "$m" ROLE | head -n 1 | grep -qx master
}

# sentinel_first_202_after MS: ms from MS to the first timeline bucket with a 202 that
# ends after it (empty when none); the bench's buckets are its resolution.
sentinel_first_202_after() {
    local start
    start=$(e2e_summary start_unix_ms)
    awk -F, -v a="$1" -v s="$start" \
        'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
         { t = s + $1 * 1000; if (t > a && $(col["ok_202"]) > 0) { printf "%d", t - a; exit } }' \
        "$E2E_TMP/out/timeline.csv"
}
