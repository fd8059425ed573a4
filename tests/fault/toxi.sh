# shellcheck shell=bash
# tests/fault/toxi.sh: Shopify's toxiproxy for the network fault tests, driven through its
# HTTP API with curl (sourced after tests/e2e/lib.sh, whose pid list, logging and free
# ports it uses). One toxiproxy-server per test, on a free loopback port; each link under
# test is a proxy of its own (a listen port the service is pointed at, the real server as
# upstream), and a fault is a "toxic" added to a proxy and removed again.
#
# The binary: deploy/toxiproxy/bin/toxiproxy-server (deploy/local.sh deps builds it at a
# pinned version); without it the test is skipped (exit 77). Every API call has a 5 s
# deadline (curl --max-time): the proxy's own answers never hang the test.
[ -n "${TOXI_LIB_SOURCED:-}" ] && return 0
TOXI_LIB_SOURCED=1
TOXI_BIN=${SECKILL_SOURCE_DIR:?SECKILL_SOURCE_DIR is not set (ctest sets it)}/deploy/toxiproxy/bin/toxiproxy-server

toxi_require() {
    [ -x "$TOXI_BIN" ] || e2e_skip "toxiproxy is not installed ($TOXI_BIN: deploy/local.sh deps)"
    command -v curl >/dev/null || e2e_skip "curl is not installed"
}

# toxi_start: the test's toxiproxy-server (a server: stopped after the services, like
# Redis). Its API on 127.0.0.1:$TOXI_API_PORT.
toxi_start() {
    TOXI_API_PORT=$(e2e_free_port)
    "$TOXI_BIN" -host 127.0.0.1 -port "$TOXI_API_PORT" >"$E2E_TMP/toxiproxy.log" 2>&1 &
    E2E_PIDS+=($!)
    e2e_wait 20 "toxiproxy on $TOXI_API_PORT" curl -fsS --max-time 2 "http://127.0.0.1:$TOXI_API_PORT/version"
    e2e_log "toxiproxy up (port $TOXI_API_PORT, $(curl -fsS --max-time 2 "http://127.0.0.1:$TOXI_API_PORT/version"))"
}

# toxi_api METHOD PATH [JSON]: one API call; its answer on stdout, non-zero on an HTTP error.
toxi_api() {
    curl -fsS --max-time 5 -X "$1" -H 'Content-Type: application/json' ${3:+--data "$3"} \
        "http://127.0.0.1:$TOXI_API_PORT$2"
}

# toxi_proxy NAME UPSTREAM_PORT [LISTEN_PORT]: a proxy 127.0.0.1:LISTEN (a free port when
# not given) -> 127.0.0.1:UPSTREAM; its listen port in TOXI_PORT_<NAME>. The upstream need
# not listen yet (the proxy dials it for each connection it accepts).
toxi_proxy() {
    local name=$1 up=$2 listen=${3:-}
    for _ in 1 2 3; do
        [ -n "${3:-}" ] || listen=$(e2e_free_port)
        if toxi_api POST /proxies "{\"name\":\"$name\",\"listen\":\"127.0.0.1:$listen\",\"upstream\":\"127.0.0.1:$up\",\"enabled\":true}" >/dev/null; then
            printf -v "TOXI_PORT_$name" %s "$listen"
            e2e_log "proxy $name: 127.0.0.1:$listen -> 127.0.0.1:$up"
            return 0
        fi
        [ -z "${3:-}" ] || break
    done
    e2e_fail "toxiproxy: proxy $name on $listen -> $up not created"
}

# toxi_toxic_add PROXY NAME TYPE STREAM ATTRIBUTES_JSON: one toxic (STREAM: downstream, the
# server's replies, or upstream, the client's requests), on every connection (toxicity 1).
toxi_toxic_add() {
    toxi_api POST "/proxies/$1/toxics" \
        "{\"name\":\"$2\",\"type\":\"$3\",\"stream\":\"$4\",\"toxicity\":1.0,\"attributes\":$5}" >/dev/null ||
        e2e_fail "toxiproxy: toxic $2 ($3) on $1 not added"
}

toxi_toxic_remove() {
    toxi_api DELETE "/proxies/$1/toxics/$2" >/dev/null || e2e_fail "toxiproxy: toxic $2 on $1 not removed"
}

# toxi_enable PROXY true|false: a disabled proxy closes its connections and refuses new
# ones (a link cut off with a reset, unlike the black hole below).
toxi_enable() {
    toxi_api POST "/proxies/$1" "{\"enabled\":$2}" >/dev/null || e2e_fail "toxiproxy: proxy $1 not set enabled=$2"
}

# The matrix's faults, each one or two toxics named after it (TOXI_FAULTS):
#   latency    +200 ms, jitter 100 ms, on the replies
#   blackhole  the `timeout` toxic (timeout 0) both ways: bytes vanish, the socket stays
#              open, nothing is closed while it is on; its removal closes the connections
#              it held (toxiproxy's cleanup: what it swallowed is lost, so they could not
#              go on anyway)
#   reset      `reset_peer` on the replies after 100 ms: every connection is reset
#              (RST) 100 ms after it opens, whatever it was in the middle of
#   bandwidth  4 KB/s each way
#   slicer     the replies cut into pieces of 1-15 bytes, 200 us apart
TOXI_FAULTS="latency blackhole reset bandwidth slicer"

# toxi_fault_add PROXY FAULT / toxi_fault_remove PROXY FAULT
toxi_fault_add() {
    case $2 in
    latency) toxi_toxic_add "$1" latency latency downstream '{"latency":200,"jitter":100}' ;;
    blackhole)
        toxi_toxic_add "$1" blackhole_down timeout downstream '{"timeout":0}'
        toxi_toxic_add "$1" blackhole_up timeout upstream '{"timeout":0}'
        ;;
    reset) toxi_toxic_add "$1" reset reset_peer downstream '{"timeout":100}' ;;
    bandwidth)
        toxi_toxic_add "$1" bandwidth_down bandwidth downstream '{"rate":4}'
        toxi_toxic_add "$1" bandwidth_up bandwidth upstream '{"rate":4}'
        ;;
    slicer) toxi_toxic_add "$1" slicer slicer downstream '{"average_size":8,"size_variation":7,"delay":200}' ;;
    *) e2e_fail "unknown network fault '$2' (one of: $TOXI_FAULTS)" ;;
    esac
    e2e_log "fault $2 on $1"
}

toxi_fault_remove() {
    case $2 in
    blackhole | bandwidth)
        toxi_toxic_remove "$1" "$2_down"
        toxi_toxic_remove "$1" "$2_up"
        ;;
    *) toxi_toxic_remove "$1" "$2" ;;
    esac
    e2e_log "fault $2 on $1 removed"
}
