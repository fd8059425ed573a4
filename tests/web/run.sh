#!/usr/bin/env bash
# tests/web/run.sh lint|contract|schemathesis|console: the web tests (tests/web.cmake).
#   lint          docs/openapi.yaml against the OpenAPI meta-schema (@seriousme/openapi-schema-validator)
#   contract      every documented call and error against the running front (contract.mjs)
#   schemathesis  generated requests, valid and invalid, from the file (PyPI's schemathesis); the admin
#                 calls that change an event go to throwaway events of the run (schemathesis.toml)
#   console       the sale console in Debian's chromium (console.mjs, playwright-core)
# The tools come from `deploy/local.sh deps` (npm ci here, a venv in .venv): a missing tool
# fails the test, so CI never passes by skipping. Without a running stack (no
# SECKILL_HTTP) the three that need one exit 77 (skipped), like the e2e tests.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
spec=$root/docs/openapi.yaml
what=${1:?usage: run.sh lint|contract|schemathesis|console}
[ -d "$here/node_modules" ] || { echo "tests/web/node_modules missing: run deploy/local.sh deps" >&2; exit 1; }
if [ "$what" != lint ] && [ -z "${SECKILL_HTTP:-}" ]; then
    echo "no stack (SECKILL_HTTP unset): skipped" >&2
    exit 77
fi
case $what in
lint)
    version=$(sed -n 's/^project(seckill VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
    exec node "$here/lint_openapi.mjs" "$spec" "$version"
    ;;
contract) exec node "$here/contract.mjs" "$spec" ;;
console)
    export SECKILL_WEB_OUT=${SECKILL_WEB_OUT:-$PWD/web-out}
    exec node "$here/console.mjs"
    ;;
schemathesis)
    st=$here/.venv/bin/schemathesis
    [ -x "$st" ] || { echo "$st missing: run deploy/local.sh deps" >&2; exit 1; }
    # An admin of this run only: the record tells its acts from everyone else's.
    sub=$(( $(date +%s) * 1000 + RANDOM % 1000 ))
    token=$("$SECKILL_BIN_DIR/seckill-order" token --sub "$sub" --admin)
    # Every check but positive_data_acceptance, which expects any schema-valid request to
    # be accepted: the API refuses, by design, what JSON Schema cannot express (ends_at
    # not after starts_at, JSON text with unpaired surrogate escapes), with a 400.
    # not_a_server_error is kept: a 5xx other than the documented 503s fails the run.
    # One worker by default: with two, Hypothesis's lambda descriptions call ast.parse
    # on two threads at once, which Debian's Python 3.11 answers now and then with
    # "SystemError: AST constructor recursion depth mismatch" (CPython gh-106905), a
    # Runtime Error of the run that says nothing about the API.
    # The admin calls that change an event (pause, resume, change, restock, end, remove)
    # go to throwaway events of this run, fixed per operation in schemathesis.toml: sent to
    # the real events that schemathesis finds, they would pause, move, end or remove the
    # events of the tests that run beside this one. The audit reads the changed one's.
    st_event() { # NAME STARTS_IN_S ENDS_IN_S: creates a throwaway event, prints its id
        local now body
        now=$(date +%s)
        body=$(printf '{"name":"schemathesis %s","stock":10,"starts_at":"%s","ends_at":"%s"}' "$1" \
            "$(date -u -d "@$((now + $2))" +%FT%TZ)" "$(date -u -d "@$((now + $3))" +%FT%TZ)")
        curl -fsS --max-time 10 -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
            -d "$body" "$SECKILL_HTTP/api/v1/events" | sed -n 's/.*"event_id":"\([0-9]*\)".*/\1/p'
    }
    ST_EVENT_CHANGE=$(st_event change 3600 7200)
    ST_EVENT_STOCK=$(st_event stock -1 3600)
    ST_EVENT_END=$(st_event end 3600 7200)
    ST_EVENT_REMOVE=$(st_event remove -7200 -3600)
    ST_EVENT_PAUSE=$(st_event pause -1 3600)
    export ST_EVENT_CHANGE ST_EVENT_STOCK ST_EVENT_END ST_EVENT_REMOVE ST_EVENT_PAUSE
    for id in "$ST_EVENT_CHANGE" "$ST_EVENT_STOCK" "$ST_EVENT_END" "$ST_EVENT_REMOVE" "$ST_EVENT_PAUSE"; do
        [ -n "$id" ] || { echo "could not create the throwaway events"; echo "0 passed, 1 failed"; exit 1; }
    done
    out=$(mktemp)
    rc=0
    "$st" --config-file "$here/schemathesis.toml" run "$spec" --url "$SECKILL_HTTP" -H "Authorization: Bearer $token" \
        --checks all --exclude-checks positive_data_acceptance \
        --phases examples,coverage,fuzzing --max-examples "${SCHEMATHESIS_EXAMPLES:-25}" \
        --workers "${SCHEMATHESIS_WORKERS:-1}" --seed "${SCHEMATHESIS_SEED:-1}" --no-color >"$out" 2>&1 || rc=$?
    # The record (PostgreSQL) says what the run did: every state-changing call succeeded at
    # least once on its own throwaway event, and no act but a create reached any other
    # event. The cases printed above show the rest (each answer checked against the file).
    ids="$ST_EVENT_CHANGE,$ST_EVENT_STOCK,$ST_EVENT_END,$ST_EVENT_REMOVE,$ST_EVENT_PAUSE"
    acts=$(psql "$SECKILL_PG" -tAc "select string_agg(distinct event_id || ':' || act, ' ')
        from seckill_admin_audit where actor = $sub and act <> 'create'") || acts='(psql failed)'
    strays=$(psql "$SECKILL_PG" -tAc "select count(*) from seckill_admin_audit
        where actor = $sub and act <> 'create' and event_id not in ($ids)") || strays='(psql failed)'
    echo "admin acts recorded: $acts"
    for want in "$ST_EVENT_CHANGE:change" "$ST_EVENT_STOCK:restock" "$ST_EVENT_END:end" \
        "$ST_EVENT_REMOVE:delete" "$ST_EVENT_PAUSE:pause" "$ST_EVENT_PAUSE:resume"; do
        case " $acts " in *" $want "*) ;; *) echo "FAIL no ${want#*:} succeeded on its throwaway event"; rc=1 ;; esac
    done
    [ "$strays" = 0 ] || { echo "FAIL $strays admin acts reached events other than the throwaway ones"; rc=1; }
    for id in "$ST_EVENT_CHANGE" "$ST_EVENT_STOCK" "$ST_EVENT_END" "$ST_EVENT_REMOVE" "$ST_EVENT_PAUSE"; do
        curl -s --max-time 10 -o /dev/null -X POST -H "Authorization: Bearer $token" "$SECKILL_HTTP/api/v1/events/$id/end" || true
        curl -s --max-time 10 -o /dev/null -X DELETE -H "Authorization: Bearer $token" "$SECKILL_HTTP/api/v1/events/$id" || true
    done
    cat "$out"
    cases=$(grep -oE '[0-9]+ generated' "$out" | grep -oE '[0-9]+' | tail -n 1)
    rm -f "$out"
    # ctest reads the plain closing line.
    if [ $rc -eq 0 ]; then echo "${cases:-0} passed, 0 failed"; else echo "0 passed, 1 failed"; fi
    exit $rc
    ;;
*) echo "unknown: $what" >&2; exit 2 ;;
esac
