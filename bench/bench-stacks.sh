#!/usr/bin/env bash
# Time of `clrtap stacks` on the `blocked` fixture beside `dotnet-stack
# report` (installed from NuGet into build/tools if the registry serves it),
# both on the same process. Prints the median of RUNS runs of each and their
# ratio, and checks that clrtap's tree has the 5/1 grouping.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
CLRTAP=${CLRTAP:-$ROOT/build/clrtap}
DLL=$ROOT/build/fixtures/sample/sample.dll
RUNS=${RUNS:-20}
TOOLS=$ROOT/build/tools
pid=
out=$(mktemp -d)
cleanup() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null
	rm -rf "$out"
}
trap cleanup EXIT

need_tool dotnet-stack

dotnet "$DLL" blocked >"$out/fixture" 2>&1 &
pid=$!
for ((w = 0; w < 600; w++)); do grep -q READY "$out/fixture" 2>/dev/null && break; sleep 0.1; done

threads=$("$CLRTAP" stacks -p "$pid" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["threads_sampled"])')
five=$("$CLRTAP" stacks -p "$pid" | grep -cE '^ +5  .*Clrtap.Fixtures.Blocker::WaitHere$')
echo "blocked fixture pid $pid: $threads threads sampled; 5-thread Blocker::WaitHere group found: $five"
c=$(median_ms "$CLRTAP" stacks -p "$pid")
echo "clrtap stacks:        ${c} ms (median of $RUNS)"
if [ -x "$TOOLS/dotnet-stack" ]; then
	d=$(median_ms "$TOOLS/dotnet-stack" report -p "$pid")
	echo "dotnet-stack report:  ${d} ms (median of $RUNS)"
	awk -v c="$c" -v d="$d" 'BEGIN {printf "ratio: clrtap stacks is %.1fx faster than dotnet-stack report\n", d / c}'
fi
