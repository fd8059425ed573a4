#!/bin/sh
# No symbol defined twice in what a binary links (tests/libs.cmake):
#   link_once.sh NM ARCHIVE...
# ARCHIVE...: every static library of the binary's link closure. Fails, naming the
# symbol and its places, when a global symbol (weak ones aside) is defined by two
# members, in one archive or across archives: such a binary links only by the order of
# its archives, and which copy wins is up to that order.
set -eu
nm=$1
shift
[ $# -ge 2 ] || { echo "FAIL: fewer than 2 archives: $*" >&2; exit 1; }
for a; do
    [ -f "$a" ] || { echo "FAIL: no archive $a" >&2; exit 1; }
    # -A: "archive:member: value type name" (type: one letter; weak W/V/w/v skipped)
    # printed as "symbol archive:member"
    "$nm" -A -g --defined-only "$a" |
        awk '$(NF-1) !~ /^[WVwvU]$/ { sub(/:[0-9a-f]+$/, "", $1); print $NF, $1 }'
done | sort | awk '
    {
        if ($1 == last) { where[$1] = where[$1] " " $2; n[$1]++ }
        else { where[$1] = $2; n[$1] = 1 }
        last = $1; count++
    }
    END {
        bad = 0
        for (s in n)
            if (n[s] > 1) {
                print "defined " n[s] " times: " s " in " where[s] > "/dev/stderr"; bad++
            }
        if (count == 0) { print "FAIL: no symbols read" > "/dev/stderr"; exit 1 }
        if (bad) { print "FAIL: " bad " symbols defined more than once" > "/dev/stderr"; exit 1 }
        print count " global symbols, each defined once"
    }'
