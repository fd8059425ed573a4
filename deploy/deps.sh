# deploy/deps.sh: the pinned tools `deploy/local.sh deps` installs beside Debian's
# packages (sourced by local.sh; uses its ROOT, log and die): toxiproxy, and the web
# tests' npm packages and schemathesis.

# Shopify's toxiproxy (the network fault proxy of tests/fault/), built by the Go toolchain
# at a pinned version into deploy/toxiproxy/bin (Debian does not package it). Redone only
# when the pin changes.
# v2.8.0: the newest whose go.mod Debian 12's Go (1.19) builds (v2.9.0 on need Go 1.22+).
TOXIPROXY_VERSION=v2.8.0
TOXIPROXY_BIN=$ROOT/deploy/toxiproxy/bin
toxiproxy_deps() {
    [ "$(cat "$TOXIPROXY_BIN/.version" 2>/dev/null)" = "$TOXIPROXY_VERSION" ] &&
        [ -x "$TOXIPROXY_BIN/toxiproxy-server" ] && return 0
    log "deps: toxiproxy $TOXIPROXY_VERSION (go install)"
    local tmp
    tmp=$(mktemp -d)
    GOBIN=$tmp go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION" ||
        die "toxiproxy $TOXIPROXY_VERSION did not build"
    mkdir -p "$TOXIPROXY_BIN"
    mv "$tmp/server" "$TOXIPROXY_BIN/toxiproxy-server"
    rm -rf "$tmp"
    echo "$TOXIPROXY_VERSION" >"$TOXIPROXY_BIN/.version"
}

# The web tests' tools, pinned: npm packages from tests/web/package-lock.json and
# schemathesis (tests/web/requirements.txt) in a venv. Each is redone only when its pin
# file changed since the last install.
web_deps() {
    local web=$ROOT/tests/web
    if ! cmp -s "$web/package-lock.json" "$web/node_modules/.seckill-lock" 2>/dev/null; then
        log "deps: npm ci in tests/web"
        (cd "$web" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
        cp "$web/package-lock.json" "$web/node_modules/.seckill-lock"
    fi
    if ! cmp -s "$web/requirements.txt" "$web/.venv/.seckill-req" 2>/dev/null; then
        log "deps: schemathesis venv in tests/web/.venv"
        rm -rf "$web/.venv"
        python3 -m venv "$web/.venv"
        "$web/.venv/bin/pip" install -q --disable-pip-version-check -r "$web/requirements.txt" >/dev/null
        cp "$web/requirements.txt" "$web/.venv/.seckill-req"
    fi
}
