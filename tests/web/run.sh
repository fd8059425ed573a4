#!/usr/bin/env bash
# tests/web/run.sh lint|contract|schemathesis|console: the web tests (tests/web.cmake).
#   lint          docs/openapi.yaml against the OpenAPI meta-schema (@seriousme/openapi-schema-validator)
#   contract      every documented call and error against the running front (contract.mjs)
#   schemathesis  generated requests, valid and invalid, from the file (PyPI's schemathesis)
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
    token=$("$SECKILL_BIN_DIR/seckill-order" token --sub 1 --admin)
    # Every check but positive_data_acceptance, which expects any schema-valid request to
    # be accepted: the API refuses, by design, what JSON Schema cannot express (ends_at
    # not after starts_at, JSON text with unpaired surrogate escapes), with a 400.
    # not_a_server_error is kept: a 5xx other than the documented 503s fails the run.
    # One worker by default: with two, Hypothesis's lambda descriptions call ast.parse
    # on two threads at once, which Debian's Python 3.11 answers now and then with
    # "SystemError: AST constructor recursion depth mismatch" (CPython gh-106905), a
    # Runtime Error of the run that says nothing about the API.
    # pauseEvent is left out: schemathesis finds real event ids (the list) and, with the
    # admin token, a pause makes that event's orders 503 `paused` for the rest of the run,
    # as designed (the contract test covers pause and resume). changeEvent, endEvent,
    # restockEvent and removeEvent likewise (issue 32): generated calls would move, end,
    # restock or remove the real events of the tests that run beside this one; the
    # contract test covers them, every status.
    out=$(mktemp)
    rc=0
    "$st" run "$spec" --url "$SECKILL_HTTP" -H "Authorization: Bearer $token" \
        --checks all --exclude-checks positive_data_acceptance \
        --exclude-operation-id pauseEvent --exclude-operation-id changeEvent \
        --exclude-operation-id endEvent --exclude-operation-id restockEvent \
        --exclude-operation-id removeEvent \
        --phases examples,coverage,fuzzing --max-examples "${SCHEMATHESIS_EXAMPLES:-25}" \
        --workers "${SCHEMATHESIS_WORKERS:-1}" --seed "${SCHEMATHESIS_SEED:-1}" --no-color >"$out" 2>&1 || rc=$?
    cat "$out"
    cases=$(grep -oE '[0-9]+ generated' "$out" | grep -oE '[0-9]+' | tail -n 1)
    rm -f "$out"
    # ctest reads the plain closing line.
    if [ $rc -eq 0 ]; then echo "${cases:-0} passed, 0 failed"; else echo "0 passed, 1 failed"; fi
    exit $rc
    ;;
*) echo "unknown: $what" >&2; exit 2 ;;
esac
