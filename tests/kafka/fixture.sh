#!/usr/bin/env bash
# tests/kafka/fixture.sh up|down DIR: the `kafka` label's shared Apache Kafka (one KRaft
# node, deploy/kafka/kafka.sh) as a ctest fixture (kafka_broker_up / kafka_broker_down in
# tests/kafka.cmake): started once for the label, each test on topics of its own. Without
# java or the jars, `up` writes DIR/skip and the tests skip with its reason.
set -euo pipefail
KAFKA_SH=$(cd "$(dirname "$0")/../../deploy/kafka" && pwd)/kafka.sh
# shellcheck source=deploy/lib.sh
. "$(dirname "$0")/../../deploy/lib.sh"
dir=${2:?usage: fixture.sh up|down DIR}
case $1 in
up)
    "$KAFKA_SH" stop "$dir" 2>/dev/null || true
    rm -rf "$dir"
    mkdir -p "$dir"
    if ! command -v java >/dev/null; then echo "java not installed (deploy/local.sh deps)" >"$dir/skip"; exit 0; fi
    if [ ! -f "$(dirname "$KAFKA_SH")/lib/.fetched" ]; then echo "the Kafka jars are not fetched (deploy/local.sh deps)" >"$dir/skip"; exit 0; fi
    # A free port with the next one free too (the controller's), below the ephemeral range.
    p=$(sk_free_ports 2) || { echo "fixture.sh: no 2 free consecutive ports" >&2; exit 1; }
    t0=$(date +%s%N)
    "$KAFKA_SH" start "$dir" "$p" 1
    # the order transitions' topic the consumers publish to by default (issue 22); each
    # test has its own orders and DLQ topics, the transitions are not what they check
    "$KAFKA_SH" topic "$dir" seckill.order-events 6
    echo "shared kafka serving after $((($(date +%s%N) - t0) / 1000000)) ms; $("$KAFKA_SH" rss "$dir")"
    ;;
down)
    "$KAFKA_SH" stop "$dir"
    rm -rf "$dir"
    ;;
*) echo "usage: fixture.sh up|down DIR" >&2; exit 2 ;;
esac
