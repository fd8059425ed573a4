# shellcheck shell=bash disable=SC2034 # CL_* are read by the scripts that source this
# bench/cluster_lib.sh: shell helpers for a flash sale on a Redis Cluster, sourced by
# bench/demo.sh (the local stack's cluster), bench/bench-cluster.sh and
# tests/cluster/lib.sh (throwaway ones, cl_run_cluster).
#
# The caller sets, or cl_run_cluster sets, CL_PORTS (the nodes' loopback ports, any
# order); for events, BIN (where seckill-order is), CL_FRONT (a front's base URL) and
# CL_SECRET (its JWT secret).
# Event ids come from libidgen, so which master serves an event is a matter of its slot
# (CRC16 of "e<ID>", the hash tag of every key of the event): events are created through
# the front and kept when they land where they are wanted. No password (loopback only).
# shellcheck source=deploy/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib.sh"

cl_cli() { redis-cli -p "$1" "${@:2}"; }

# cl_run_cluster DIR PROFILE [redis-server options...]: a throwaway cluster from the
# repository's one bring-up (deploy/cluster.sh run, profile test or bench) on a run of
# free ports (the bus ports +100 free too), in the background; returns once it is ready.
# Its runner's pid in CL_RUNNER (stopping it with SIGTERM stops the nodes: the caller puts
# it in its list of processes to stop). Sets CL_PORTS and CL_URL.
# @returns 1 when it did not come up (the reason in DIR/failed and DIR/run.log).
cl_run_cluster() {
    local dir=$1 profile=$2 base
    shift 2
    base=$(sk_free_ports 6 100) || { echo "no run of 6 free ports" >"$dir/failed"; return 1; }
    mkdir -p "$dir"
    "$(dirname "${BASH_SOURCE[0]}")/../deploy/cluster.sh" run "$dir" "$base" --profile "$profile" "$@" \
        </dev/null >"$dir/run.log" 2>&1 &
    CL_RUNNER=$!
    sk_wait 120 cl_cluster_started "$dir" || return 1
    [ -s "$dir/url" ] || return 1
    CL_URL=$(cat "$dir/url")
    mapfile -t CL_PORTS < <(seq "$base" $((base + 5)))
}

# Ready (DIR/url) or given up (DIR/failed, or the runner gone).
cl_cluster_started() { [ -s "$1/url" ] || [ -s "$1/failed" ] || ! kill -0 "$CL_RUNNER" 2>/dev/null; }

# cl_masters: the ports that are masters now.
cl_masters() {
    local p
    for p in "${CL_PORTS[@]}"; do
        cl_cli "$p" role 2>/dev/null | head -n 1 | grep -q '^master$' && echo "$p"
    done
    return 0
}

# cl_master_of_event ID: the port of the master that serves the event's slot, from the
# CLUSTER NODES of any live node (a master line ends with its slot ranges "a-b" or "a").
cl_master_of_event() {
    local p slot
    for p in "${CL_PORTS[@]}"; do
        slot=$(cl_cli "$p" cluster keyslot "seckill:{e$1}:stock" 2>/dev/null) || continue
        [ -n "$slot" ] || continue
        cl_cli "$p" cluster nodes 2>/dev/null | awk -v s="$slot" '
            $3 ~ /master/ && $3 !~ /fail/ {
                for (i = 9; i <= NF; i++) {
                    n = split($i, r, "-"); if (n == 1) r[2] = r[1]
                    if ($i !~ /^\[/ && s + 0 >= r[1] + 0 && s + 0 <= r[2] + 0) {
                        split($2, a, "[:@]"); print a[2]; exit
                    }
                }
            }' | grep . && return 0
    done
    return 1
}

# cl_create_event NAME STOCK [JSON]: creates an event on sale from a minute ago for an
# hour, through CL_FRONT with an admin token (JSON: more fields, e.g. ',"segments":3');
# prints its id.
cl_create_event() {
    local tok from to body
    tok=$(SECKILL_JWT_SECRET=$CL_SECRET "$BIN/seckill-order" token --sub 1 --admin --ttl 600)
    from=$(date -u +%Y-%m-%dT%H:%M:%SZ -d '-1 minute')
    to=$(date -u +%Y-%m-%dT%H:%M:%SZ -d '+1 hour')
    body=$(curl -fsS -X POST -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
        -d "{\"name\":\"$1\",\"stock\":$2,\"starts_at\":\"$from\",\"ends_at\":\"$to\"${3:-}}" \
        "$CL_FRONT/api/v1/events") || return 1
    echo "$body" | sed -n 's/.*"event_id":"\([0-9]*\)".*/\1/p'
}

# cl_create_events_on_masters N STOCK [NAME]: creates events until N of them are spread
# over the masters (each master gets one before any gets a second; the others stay
# unsold). The ids in CL_EVENTS, each one's master port in CL_EVENT_MASTER.
# @returns 1 (with a message on stderr) after 60 events or a failed creation.
declare -A CL_EVENT_MASTER
cl_create_events_on_masters() {
    local want=$1 stock=$2 name=${3:-cluster} id m k min tries=0
    local -A per
    CL_EVENTS=()
    while [ ${#CL_EVENTS[@]} -lt "$want" ]; do
        tries=$((tries + 1))
        if [ $tries -gt 60 ]; then
            echo "60 events created, still not $want spread over the masters" >&2
            return 1
        fi
        if ! id=$(cl_create_event "$name-$tries" "$stock") || [ -z "$id" ]; then
            echo "event creation through $CL_FRONT failed" >&2
            return 1
        fi
        m=$(cl_master_of_event "$id") || { echo "no master serves event $id" >&2; return 1; }
        min=999999
        for k in $(cl_masters); do
            [ "${per[$k]:-0}" -lt "$min" ] && min=${per[$k]:-0}
        done
        if [ "${per[$m]:-0}" -le "$min" ]; then
            per[$m]=$((${per[$m]:-0} + 1))
            CL_EVENTS+=("$id")
            CL_EVENT_MASTER[$id]=$m
        fi
    done
}
