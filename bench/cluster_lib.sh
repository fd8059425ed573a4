# bench/cluster_lib.sh: shell helpers for a flash sale on a Redis Cluster, sourced by
# bench/demo.sh (the local stack's cluster) and tests/cluster/lib.sh (a throwaway one).
#
# The caller sets CL_PORTS (the nodes' loopback ports, any order), BIN (where
# seckill-order is), CL_FRONT (a front's base URL) and CL_SECRET (its JWT secret).
# Event ids come from libidgen, so which master serves an event is a matter of its slot
# (CRC16 of "e<ID>", the hash tag of every key of the event): events are created through
# the front and kept when they land where they are wanted. No password (loopback only).

cl_cli() { redis-cli -p "$1" "${@:2}"; }

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

# cl_create_event NAME STOCK: creates an event on sale from a minute ago for an hour,
# through CL_FRONT with an admin token; prints its id.
cl_create_event() {
    local tok from to body
    tok=$(SECKILL_JWT_SECRET=$CL_SECRET "$BIN/seckill-order" token --sub 1 --admin --ttl 600)
    from=$(date -u +%Y-%m-%dT%H:%M:%SZ -d '-1 minute')
    to=$(date -u +%Y-%m-%dT%H:%M:%SZ -d '+1 hour')
    body=$(curl -fsS -X POST -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
        -d "{\"name\":\"$1\",\"stock\":$2,\"starts_at\":\"$from\",\"ends_at\":\"$to\"}" \
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
        id=$(cl_create_event "$name-$tries" "$stock") && [ -n "$id" ] ||
            { echo "event creation through $CL_FRONT failed" >&2; return 1; }
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
