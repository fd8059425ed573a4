#!/usr/bin/env bash
# e2e: the ended events' list (GET /api/v1/events?state=ended, admin, issue 32 item 9),
# the console's way to pick a sale that ended, to archive it or read its record.
#  - without a token 401, a buyer's token 403, an unknown state 400, a bad page 400;
#  - three events ended through POST .../end (A, then B, then C) are listed newest end
#    first (C, B, A), each once over pages of 2 (next_offset chains the pages), with the
#    live list's item shape; none of them is on the live list;
#  - an ended event that took an order is archived (DELETE): it leaves the list; one
#    still on sale is not on it.
. "$(dirname "$0")/lib.sh"
e2e_require
e2e_start_kafka
e2e_start_order
PORT=$E2E_HTTP_PORT

iso() { date -u -d "$1" +%Y-%m-%dT%H:%M:%SZ; }
ADMIN=$(token 1 --admin)
BUYER=$(token $(( $(date +%s) * 1000 + 7 )))
# call METHOD PATH [TOKEN [BODY]]: the status; the body in $E2E_TMP/resp
call() {
    local args=(-sS -o "$E2E_TMP/resp" -w '%{http_code}' -X "$1")
    [ -n "${3-x}" ] && args+=(-H "Authorization: Bearer ${3:-$ADMIN}")
    [ $# -ge 4 ] && args+=(-H 'Content-Type: application/json' -d "$4")
    curl "${args[@]}" "http://127.0.0.1:$PORT$2"
}
expect() { [ "$2" = "$1" ] || e2e_fail "$3: HTTP $2 (want $1) $(cat "$E2E_TMP/resp")"; }
id_of() { sed -n 's/.*"event_id":"\([0-9]*\)".*/\1/p' "$E2E_TMP/resp"; }
create() { # create NAME STARTS: the new event's id
    expect 201 "$(call POST /api/v1/events "$ADMIN" "{\"name\":\"$1\",\"stock\":5,\
\"starts_at\":\"$2\",\"ends_at\":\"$(iso '+1 hour')\"}")" "create $1"
    id_of
}
ids() { grep -o '"event_id":"[0-9]*"' "$E2E_TMP/resp" | sed 's/.*:"\(.*\)"/\1/'; }
# every ended event's id, newest end first, walking pages of 2
ended_ids() {
    local off=0 st
    : >"$E2E_TMP/ended"
    while [ "$off" != null ]; do
        st=$(call GET "/api/v1/events?state=ended&limit=2&offset=$off")
        expect 200 "$st" "ended page at $off"
        ids >>"$E2E_TMP/ended"
        [ "$(ids | wc -l)" -le 2 ] || e2e_fail "a page of 2 held more: $(cat "$E2E_TMP/resp")"
        off=$(sed -n 's/.*"next_offset":\([0-9a-z]*\).*/\1/p' "$E2E_TMP/resp")
        [ "$off" = null ] || [ "$(ids | wc -l)" = 2 ] || e2e_fail "a page short of 2 has a next one"
    done
    cat "$E2E_TMP/ended"
}

# Who may ask, and how.
expect 401 "$(call GET '/api/v1/events?state=ended' '')" "no token"
expect 403 "$(call GET '/api/v1/events?state=ended' "$BUYER")" "a buyer's token"
grep -q 'admin role' "$E2E_TMP/resp" || e2e_fail "403 without the reason: $(cat "$E2E_TMP/resp")"
expect 400 "$(call GET '/api/v1/events?state=over')" "an unknown state"
grep -q 'state' "$E2E_TMP/resp" || e2e_fail "400 without naming state: $(cat "$E2E_TMP/resp")"
expect 400 "$(call GET '/api/v1/events?state=ended&limit=101')" "a page too large"
expect 400 "$(call GET '/api/v1/events?state=ended&offset=-1')" "a negative offset"

# A, B and C on sale, and D; an order in A (so that its removal archives it).
A=$(create "ended a" "$(iso 'now')")
B=$(create "ended b" "$(iso 'now')")
C=$(create "ended c" "$(iso '+10 min')") # upcoming: its end is an empty window
D=$(create "still on" "$(iso 'now')")
ordered() { [ "$(call POST "/api/v1/events/$A/orders" "$BUYER")" = 202 ]; }
e2e_wait 10 "an order in event A" ordered
for ev in "$A" "$B" "$C"; do
    expect 200 "$(call POST "/api/v1/events/$ev/end")" "end $ev"
done

ended_ids >"$E2E_TMP/all"
mine=$(grep -xE "$A|$B|$C|$D" "$E2E_TMP/all" | tr '\n' ' ')
[ "$mine" = "$C $B $A " ] || e2e_fail "ended list: want C B A newest end first, got '$mine' ($C $B $A)"
[ "$(sort "$E2E_TMP/all" | uniq -d | wc -l)" = 0 ] || e2e_fail "an event listed twice over the pages"
# the item: the live list's shape (the event's own page's fields), and the server's time
expect 200 "$(call GET '/api/v1/events?state=ended&limit=1')" "first ended page"
for f in '"name":"ended c"' '"stock_total":5' '"stock_left":5' '"starts_at":"' '"ends_at":"' \
    '"offset":0' '"next_offset":1' '"now":"'; do
    grep -qF "$f" "$E2E_TMP/resp" || e2e_fail "first ended page lacks $f: $(cat "$E2E_TMP/resp")"
done
# none of them on the live list, D on it
expect 200 "$(call GET '/api/v1/events?limit=100' "$BUYER")" "live list"
live=$(ids | grep -xE "$A|$B|$C|$D" | tr '\n' ' ')
[ "$live" = "$D " ] || e2e_fail "live list: want only D, got '$live'"

# A took an order: its removal archives it, and it leaves the ended list.
expect 200 "$(call DELETE "/api/v1/events/$A")" "remove A"
grep -q '"removed":"archived"' "$E2E_TMP/resp" || e2e_fail "A not archived: $(cat "$E2E_TMP/resp")"
mine=$(ended_ids | grep -xE "$A|$B|$C|$D" | tr '\n' ' ')
[ "$mine" = "$C $B " ] || e2e_fail "after the archive: want C B, got '$mine'"
e2e_log "ok: ended list newest end first over pages, admin only, archived and live events left out"
