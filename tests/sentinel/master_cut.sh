#!/usr/bin/env bash
# sentinel 2: the master cut off by toxiproxy while it still runs (split brain), with
# redis.wait_replicas 1 (issue 33). See sentinel_cut_scenario (lib.sh): the master keeps
# taking the front's writes while the sentinels and the replicas are cut off from it,
# the sentinels promote a replica that never saw them, the front follows, and the old
# master, demoted once back in reach, throws them away.
# The promise of a 202 with redis.wait_replicas >= 1 (docs/design.md, "Redis behind
# Sentinel"): its reservation was on a replica when it was answered, so a failover keeps
# it. Asserted: no 202 while the master is cut off (the WAIT answers 0: cancel, 503),
# every request answered, 202s again within RECOVER_MS of the cut, and seckill-check
# green: every 202 created in PostgreSQL, Redis's stock balanced on the new master.
. "$(dirname "$0")/lib.sh"
sentinel_require
RECOVER_MS=12000
sentinel_cut_scenario 1
[ "$PHASE1_202" -eq 0 ] || e2e_fail "$PHASE1_202 202s while no replica could acknowledge"
# The front was on the old master's side: the master answered its WAITs, with 0.
grep -q "wait_replicas_short.* acked=0 " "$E2E_TMP/order.log" || e2e_fail "no WAIT answered 0: the front was not on the old master's side"
sentinel_recovered_within $RECOVER_MS
fault_wait_pending_empty 30
fault_check || e2e_fail "seckill-check found a violation"
e2e_log "PASS"
