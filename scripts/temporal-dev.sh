#!/usr/bin/env bash
# temporal-dev.sh: a real Temporal server for x/temporal's tests, from the
# pinned temporal CLI (github.com/temporalio/cli), built with go install.
#
#   scripts/temporal-dev.sh test [go test flags]
#       the one command: build the CLI (once; it is cached), start the dev
#       server on a free loopback port, run x/temporal's tests against it
#       (TestRealServer*, with LODE_TEST_TEMPORAL=on), stop the server
#   scripts/temporal-dev.sh bench [go test flags]
#       the same for BenchmarkTurn (a turn on Temporal against one in process)
#   scripts/temporal-dev.sh install
#       only build the CLI into the cache; prints the binary's path
#   scripts/temporal-dev.sh start
#       start the dev server and print the variables the tests read:
#       eval "$(scripts/temporal-dev.sh start)"; ... ; scripts/temporal-dev.sh stop
#   scripts/temporal-dev.sh stop
#       stop the server that start started
#
# The CLI is cached in ${LODE_CACHE:-~/.cache/lode}/temporal-cli/VERSION.
#
# CI (scripts/test) does not run these tests: go install of the CLI compiles
# the whole Temporal server and took 38 min 49 s on this project's 2-core
# machine while other builds ran (8 min 56 s user, 2 min 53 s system CPU time:
# at least six minutes on two idle cores), far over the ~3 minutes a
# 15-minute suite can spare. CI runs x/temporal's tests under the SDK's test environment instead;
# run this script by hand, or where the cache is kept, for the real server.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=v1.5.1 # its go.mod asks for go 1.25.0, which ours builds; the server it embeds is v1.29.1
CACHE=${LODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lode}/temporal-cli/$VERSION
BIN=$CACHE/temporal
STATE=${LODE_TEMPORAL_STATE:-${TMPDIR:-/tmp}/lode-temporal-dev}

install() {
	if [ -x "$BIN" ]; then
		return
	fi
	mkdir -p "$CACHE"
	echo "temporal-dev: building github.com/temporalio/cli $VERSION (large: many minutes on 2 cores; cached afterwards)" >&2
	local t0=$SECONDS
	GOBIN=$CACHE GOFLAGS=-mod=mod go install "github.com/temporalio/cli/cmd/temporal@$VERSION"
	echo "temporal-dev: built in $((SECONDS - t0))s: $BIN" >&2
}

# port_free says nothing listens on 127.0.0.1:$1.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start() {
	install
	if [ -f "$STATE/pid" ] && kill -0 "$(cat "$STATE/pid")" 2>/dev/null; then
		echo "export LODE_TEST_TEMPORAL=on LODE_TEMPORAL_ADDRESS=$(cat "$STATE/address")"
		return
	fi
	mkdir -p "$STATE"
	local port tries=0
	while :; do
		port=$((20000 + RANDOM % 20000))
		if port_free "$port"; then
			break
		fi
		tries=$((tries + 1))
		[ $tries -lt 50 ] || { echo "temporal-dev: no free port found" >&2; return 1; }
	done
	"$BIN" server start-dev --headless --ip 127.0.0.1 --port "$port" --log-level error >"$STATE/server.log" 2>&1 &
	echo $! >"$STATE/pid"
	echo "127.0.0.1:$port" >"$STATE/address"
	# Ready when the frontend answers a health check; give up after 120s.
	local deadline=$((SECONDS + 120))
	until "$BIN" operator cluster health --address "127.0.0.1:$port" >/dev/null 2>&1; do
		if ! kill -0 "$(cat "$STATE/pid")" 2>/dev/null; then
			echo "temporal-dev: the dev server exited:" >&2
			cat "$STATE/server.log" >&2
			return 1
		fi
		if [ $SECONDS -ge $deadline ]; then
			echo "temporal-dev: the dev server did not answer within 120s" >&2
			stop
			return 1
		fi
		sleep 0.2
	done
	echo "temporal-dev: dev server on 127.0.0.1:$port (log $STATE/server.log)" >&2
	echo "export LODE_TEST_TEMPORAL=on LODE_TEMPORAL_ADDRESS=127.0.0.1:$port"
}

stop() {
	if [ -f "$STATE/pid" ]; then
		local pid
		pid=$(cat "$STATE/pid")
		if kill "$pid" 2>/dev/null; then
			while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
		fi
		rm -f "$STATE/pid" "$STATE/address"
	fi
}

case "${1:-}" in
install)
	install
	echo "$BIN"
	;;
start) start ;;
stop) stop ;;
test | bench)
	what=$1
	shift
	eval "$(start)"
	trap stop EXIT
	cd x/temporal
	if [ "$what" = test ]; then
		# Only the package itself has real-server tests; ./... would also
		# build cmd/lode and the examples under -race, minutes on 2 cores.
		go test -race -count=1 -run 'TestRealServer' -v -timeout 30m "$@" .
	else
		go test -run '^$' -bench 'BenchmarkTurn' -benchtime 20x -count 3 "$@" .
	fi
	;;
*)
	sed -n '2,28p' "$0" >&2
	exit 2
	;;
esac
