# bench/cluster_lib.sh: shell helpers for a flash sale on a Redis Cluster, sourced by
# bench/demo.sh (the local stack's cluster), bench/bench-cluster.sh and
# tests/cluster/lib.sh (throwaway ones, cl_spawn_cluster).
#
# The caller sets, or cl_spawn_cluster sets, CL_PORTS (the nodes' loopback ports, any
# order); for events, BIN (where seckill-order is), CL_FRONT (a front's base URL) and
# CL_SECRET (its JWT secret).
# Event ids come from libidgen, so which master serves an event is a matter of its slot
# (CRC16 of "e<ID>", the hash tag of every key of the event): events are created through
# the front and kept when they land where they are wanted. No password (loopback only).

cl_cli() { redis-cli -p "$1" "${@:2}"; }

# cl_poll SECONDS COMMAND...: polls a condition every 50 ms. @returns 1 at the deadline.
cl_poll() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 0.05
    done
}

# cl_free_base: a base port below the ephemeral range with base..base+5 and their bus
# ports (+100) all free.
cl_free_base() {
    local b p ok
    for _ in $(seq 1 100); do
        b=$((21000 + RANDOM % 9000))
        ok=1
        for ((p = b; p < b + 6; p++)); do
            if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || (exec 3<>"/dev/tcp/127.0.0.1/$((p + 100))") 2>/dev/null; then
                ok=0
                break
            fi
        done
        [ $ok -eq 1 ] && { echo "$b"; return 0; }
    done
    return 1
}

cl_state_ok() {
    local p
    for p in "${CL_PORTS[@]}"; do
        cl_cli "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
    done
}

# Every replica's link to its master is up (a failover needs a replica in sync).
cl_replicas_synced() {
    local p n=0
    for p in "${CL_PORTS[@]}"; do
        if cl_cli "$p" role 2>/dev/null | head -n 1 | grep -q slave; then
            cl_cli "$p" info replication | grep -q '^master_link_status:up' || return 1
            n=$((n + 1))
        fi
    done
    [ $n -eq 3 ]
}

# cl_spawn_cluster DIR BASE [redis-server options...]: 6 nodes on BASE..BASE+5 (cluster
# bus +100, data and logs under DIR) as background children (pids in CL_SPAWNED: the
# caller stops them), joined by `redis-cli --cluster create --cluster-replicas 1` into 3
# masters + 3 replicas; waits for cluster_state:ok everywhere and the replicas in sync.
# Full coverage is not required: while one master fails over, the others keep serving.
# The options (node timeout, persistence) come last and win. Sets CL_PORTS and CL_URL.
# @returns 1 when the cluster did not come up (DIR/cluster-create.log, DIR/node-*.redislog).
cl_spawn_cluster() {
    local dir=$1 base=$2 p addrs=()
    shift 2
    CL_PORTS=()
    CL_SPAWNED=()
    for ((p = base; p < base + 6; p++)); do
        CL_PORTS+=("$p")
        addrs+=("127.0.0.1:$p")
        mkdir -p "$dir/node-$p"
        redis-server --port "$p" --bind 127.0.0.1 --dir "$dir/node-$p" \
            --cluster-enabled yes --cluster-config-file nodes.conf --cluster-port $((p + 100)) \
            --cluster-require-full-coverage no --save "" "$@" \
            --logfile "$dir/node-$p.redislog" </dev/null >/dev/null 2>&1 &
        CL_SPAWNED+=($!)
    done
    for p in "${CL_PORTS[@]}"; do cl_poll 20 cl_cli "$p" ping || return 1; done
    redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes \
        >"$dir/cluster-create.log" 2>&1 || return 1
    cl_poll 60 cl_state_ok || return 1
    cl_poll 60 cl_replicas_synced || return 1
    CL_URL="redis-cluster://$(printf '127.0.0.1:%s,' "${CL_PORTS[@]}" | sed 's/,$//')"
}

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
