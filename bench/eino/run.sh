#!/usr/bin/env bash
# Issue 35's figures in one command: the dispatch ratio of x/tool (the add
# tool through the Handler, on a goroutine and inline, against the bare
# JSON round trip) and the whole scenario against Eino's react agent, each
# side its own process, in interleaved rounds.
#
#   bench/eino/run.sh            # idle: nothing started beside it
#   bench/eino/run.sh loaded     # GOMAXPROCS=2, with a process burning
#                                # both cores started beside it
#
# DISPATCH_ROUNDS (61), ROUNDS (11) and MS (300, per measurement) scale it.
set -euo pipefail
mode=${1:-idle}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
burner=
cleanup() {
	if [ -n "$burner" ]; then kill "$burner" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
(cd "$here" && go build -o "$tmp/scenario" .)
(cd "$root" && go test -c -o "$tmp/xtool.test" ./x/tool)
case "$mode" in
idle) ;;
loaded)
	export GOMAXPROCS=2
	"$tmp/scenario" -burn &
	burner=$!
	;;
*)
	echo "usage: $0 [idle|loaded]" >&2
	exit 2
	;;
esac
echo "mode: $mode; $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
(cd "$root/x/tool" && LODE_BENCH_ROUNDS=${DISPATCH_ROUNDS:-61} "$tmp/xtool.test" -test.run '^TestDispatchRatio$' -test.v -test.count=1 | grep -v '^=== RUN')
"$tmp/scenario" -compare -rounds "${ROUNDS:-11}" -ms "${MS:-300}"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
