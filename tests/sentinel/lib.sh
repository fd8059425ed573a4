# shellcheck shell=bash
# tests/sentinel/lib.sh: a private pipeline whose Redis runs behind Sentinel (issue 33),
# sourced by the tests in tests/sentinel/. It is tests/fault/lib.sh's pipeline (a
# throwaway PostgreSQL, seckill-devkafka, seckill-consumer, seckill-order on free ports,
# seckill-bench and seckill-check) with deploy/sentinel.sh's set in place of the single
# Redis: a master, two replicas and three sentinels (down-after-milliseconds 1000), and
# every service on the redis-sentinel:// URL. Optionally toxiproxy (the one of
# deploy/local.sh deps) between the master and the sentinels and replicas, so that a
# test can cut the master off while it still runs (sentinel_cut_scenario).
. "$(dirname "${BASH_SOURCE[0]}")/../fault/lib.sh"

SENT_DIR=""
SENT_DOWN_AFTER_MS=1000
# 1 s, not the fault tests' 0.5 s: a connection dropped for a slow answer (a loaded
# 2-core machine) reconnects through the sentinels, which in master_cut*.sh would move
# the front behind the proxy before the cut (the test then cuts the front off too).
FAULT_REDIS_TIMEOUT_MS=1000
SENT_TOXI_PID=""
SENT_TOXI_BIN="${SECKILL_SOURCE_DIR:-$(dirname "${BASH_SOURCE[0]}")/../..}/deploy/toxiproxy/bin/toxiproxy-server"

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
    [ -n "$SENT_TOXI_PID" ] && kill "$SENT_TOXI_PID" 2>/dev/null
    fault_e2e_after_stop "$1"
}

sentinel_require() {
    fault_require
    command -v redis-sentinel >/dev/null || e2e_skip "redis-sentinel not installed (deploy/local.sh deps)"
}

# ---- toxiproxy (its HTTP API, with curl) ----

sent_toxi_start() {
    [ -x "$SENT_TOXI_BIN" ] || e2e_skip "toxiproxy not installed ($SENT_TOXI_BIN: deploy/local.sh deps)"
    SENT_TOXI_PORT=$(e2e_free_port)
    LOG_LEVEL=warn "$SENT_TOXI_BIN" -host 127.0.0.1 -port "$SENT_TOXI_PORT" >"$E2E_TMP/toxiproxy.log" 2>&1 &
    SENT_TOXI_PID=$!
    e2e_wait 20 "toxiproxy on $SENT_TOXI_PORT" curl -fsS "http://127.0.0.1:$SENT_TOXI_PORT/version"
}

sent_toxi_api() { curl -fsS --max-time 5 -H 'Content-Type: application/json' "$@"; }

# sent_toxi_proxy NAME LISTEN_PORT UPSTREAM_PORT
sent_toxi_proxy() {
    sent_toxi_api -X POST "http://127.0.0.1:$SENT_TOXI_PORT/proxies" \
        -d "{\"name\":\"$1\",\"listen\":\"127.0.0.1:$2\",\"upstream\":\"127.0.0.1:$3\"}" >/dev/null ||
        e2e_fail "toxiproxy: proxy $1 not created"
}

# sent_toxi_cut NAME: a black hole both ways (the `timeout` toxic with timeout 0: bytes vanish,
# the connections stay open, as behind a dead link).
sent_toxi_cut() {
    local dir
    for dir in upstream downstream; do
        sent_toxi_api -X POST "http://127.0.0.1:$SENT_TOXI_PORT/proxies/$1/toxics" \
            -d "{\"name\":\"cut_$dir\",\"type\":\"timeout\",\"stream\":\"$dir\",\"attributes\":{\"timeout\":0}}" \
            >/dev/null || e2e_fail "toxiproxy: cut of $1 not set"
    done
    e2e_log "link $1 cut (black hole)"
}

sent_toxi_heal() {
    local dir
    for dir in upstream downstream; do
        sent_toxi_api -X DELETE "http://127.0.0.1:$SENT_TOXI_PORT/proxies/$1/toxics/cut_$dir" >/dev/null ||
            e2e_fail "toxiproxy: cut of $1 not removed"
    done
    e2e_log "link $1 healed"
}

# ---- the set ----

# sentinel_start_set [proxied]: the set on free ports; SECKILL_REDIS_URL its URL. With
# "proxied", toxiproxy too, with a proxy "master" (port SENT_PROXY) to the master, not
# yet used (sentinel_via_proxy).
sentinel_start_set() {
    local base
    base=$(sk_free_ports 6) || e2e_fail "no 6 free ports"
    SENT_DIR="$E2E_TMP/sentinel"
    SENT_BASE=$base
    if [ "${1:-}" = proxied ]; then
        sent_toxi_start
        SENT_PROXY=$(e2e_free_port)
        sent_toxi_proxy master "$SENT_PROXY" "$base"
    fi
    SECKILL_REDIS_URL=$(SENTINEL_DOWN_AFTER_MS=$SENT_DOWN_AFTER_MS "$SECKILL_SOURCE_DIR/deploy/sentinel.sh" up "$SENT_DIR" "$base" 2>"$E2E_TMP/sentinel.sh.log") ||
        e2e_fail "the sentinel set did not come up: $(tail -n 3 "$E2E_TMP/sentinel.sh.log")"
    export SECKILL_REDIS_URL
    e2e_log "redis behind sentinel: master $base, replicas $((base + 1)) $((base + 2)), sentinels $((base + 3))-$((base + 5)); $SECKILL_REDIS_URL"
}

# sentinel_via_proxy: from now on the sentinels, the replicas and every new client reach
# the master through the proxy; connections open already (the front's) stay direct. A
# cut of the proxy then parts the master from the sentinels and the replicas while the
# front still writes to it: a split brain, the front on the old master's side.
sentinel_via_proxy() {
    local p
    for p in $((SENT_BASE + 3)) $((SENT_BASE + 4)) $((SENT_BASE + 5)); do
        redis-cli -p "$p" SENTINEL REMOVE seckill >/dev/null &&
            redis-cli -p "$p" SENTINEL MONITOR seckill 127.0.0.1 "$SENT_PROXY" 2 >/dev/null &&
            redis-cli -p "$p" SENTINEL SET seckill down-after-milliseconds $SENT_DOWN_AFTER_MS \
                failover-timeout 10000 parallel-syncs 2 >/dev/null ||
            e2e_fail "sentinel $p: MONITOR through the proxy failed"
    done
    # What the sentinels would order themselves (+fix-slave-config), at once.
    for p in $((SENT_BASE + 1)) $((SENT_BASE + 2)); do
        redis-cli -p "$p" REPLICAOF 127.0.0.1 "$SENT_PROXY" >/dev/null || e2e_fail "REPLICAOF on $p failed"
    done
    "$SECKILL_SOURCE_DIR/deploy/sentinel.sh" wait "$SENT_DIR" 2>>"$E2E_TMP/sentinel.sh.log" ||
        e2e_fail "the set is not whole through the proxy: $(tail -n 3 "$E2E_TMP/sentinel.sh.log")"
    e2e_log "sentinels and replicas reach the master through the proxy ($SENT_PROXY)"
}

# The master's port as the first sentinel names it now.
sentinel_master_port() {
    redis-cli -p $((SENT_BASE + 3)) SENTINEL get-master-addr-by-name seckill | sed -n 2p
}

# fault_rcli (tests/fault/lib.sh's helpers use it): redis-cli on the master of now.
fault_rcli() { redis-cli -p "$(sentinel_master_port)" "$@"; }

# sentinel_up plain|proxied [ENV=VALUE...]: the set, PostgreSQL, the dev Kafka, a
# consumer (on the sentinel URL too: its order-index recorder) and the front "order"
# with the extra ENV=VALUE given.
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

# sentinel_cut_scenario WAIT_REPLICAS: the master cut off while it still runs, mid-sale
# (tests/sentinel/master_cut*.sh), a split brain with the front on the old master's side:
#   0. the front connects to the master directly; then the sentinels and the replicas
#      are moved behind toxiproxy (sentinel_via_proxy);
#   1. the proxy is cut (a black hole both ways): the master keeps taking the front's
#      writes, which no replica sees, while the sentinels find it down and promote a
#      replica (down-after 1 s, then their election);
#   2. the front hears +switch-master and moves to the new master, which never saw
#      phase 1's writes;
#   3. the link heals: the sentinels demote the old master, which throws phase 1's
#      writes away (a full resync from the new master).
# Sets CUT_AT, PROMOTED_AT, HEALED_AT (ms since the epoch) and PHASE1_202 (202s answered
# from 500 ms after the cut to the promotion).
sentinel_cut_scenario() {
    sentinel_up proxied SECKILL_REDIS_WAIT_REPLICAS="$1" SECKILL_REDIS_WAIT_TIMEOUT_MS=100
    fault_warmup
    sentinel_via_proxy
    FAULT_STOCK=3000
    fault_bench_bg --stock $FAULT_STOCK --users 6000 --requests 6000 --rate 400 --connections 32 \
        --drain.wait 0 --stall 60 --event.name "sentinel-master-cut-w$1"
    e2e_wait 30 "300 units sold" fault_sold_at_least_direct 300
    sent_toxi_cut master
    CUT_AT=$(fault_now_ms)
    e2e_wait 20 "a replica promoted" sentinel_failed_over "$SENT_PROXY"
    PROMOTED_AT=$(fault_now_ms)
    e2e_log "the sentinels promoted $(sentinel_master_port) $((PROMOTED_AT - CUT_AT)) ms after the cut"
    sent_toxi_heal master
    HEALED_AT=$(fault_now_ms)
    old_is_replica() { redis-cli -p "$SENT_BASE" ROLE | head -n 1 | grep -qx slave; }
    e2e_wait 30 "the old master demoted" old_is_replica
    e2e_log "the old master ($SENT_BASE) is a replica $(($(fault_now_ms) - HEALED_AT)) ms after the heal"
    fault_bench_wait
    PHASE1_202=$(fault_timeline_sum ok_202 "$((CUT_AT + 500))" "$PROMOTED_AT")
    e2e_log "phase 1 (the master cut off, $((PROMOTED_AT - CUT_AT)) ms): $PHASE1_202 202s, $(fault_timeline_sum r_503 "$CUT_AT" "$PROMOTED_AT") 503s"
    [ "$(e2e_outcome "0 io")" -eq 0 ] || e2e_fail "requests got no answer (connection cut)"
}

# Units sold, read on the master's own port (the sentinels name the proxy's).
fault_sold_at_least_direct() {
    local s
    s=$(redis-cli -p "$SENT_BASE" GET "$(fault_key stock)") || return 1
    [ -n "$s" ] && [ $((FAULT_STOCK - s)) -ge "$1" ]
}

# sentinel_recovered_within MS: 202s again within MS of the cut.
sentinel_recovered_within() {
    local gap
    gap=$(sentinel_first_202_after "$((CUT_AT + 1000))")
    [ -n "$gap" ] || e2e_fail "no 202 after the failover"
    gap=$((gap + 1000))
    e2e_log "202s again within $gap ms of the master's cut (bound $1 ms)"
    [ "$gap" -le "$1" ] || e2e_fail "202s came back $gap ms after the cut, past $1 ms"
}
