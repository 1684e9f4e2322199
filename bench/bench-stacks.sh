#!/usr/bin/env bash
# Time of `clrtap stacks` on the `blocked` fixture beside `dotnet-stack
# report` (installed from NuGet into build/tools if the registry serves it),
# both on the same process. Prints the median of RUNS runs of each and their
# ratio, and checks that clrtap's tree has the 5/1 grouping. Then the same on
# the `web` fixture under curl load, whose rundown is larger than a socket
# buffer (the stop stall of issue 9 showed there: 5.05 s before the fix).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
CLRTAP=${CLRTAP:-$ROOT/build/clrtap}
DLL=$ROOT/build/fixtures/sample/sample.dll
RUNS=${RUNS:-20}
TOOLS=$ROOT/build/tools
pid=
wpid=
load=
out=$(mktemp -d)
cleanup() {
	[ -n "$load" ] && kill "$load" 2>/dev/null
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null
	[ -n "$wpid" ] && kill -TERM "$wpid" 2>/dev/null
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

# The web fixture under load: a rundown of thousands of methods.
port=$((20000 + RANDOM % 20000))
dotnet "$DLL" web --port "$port" >"$out/web" 2>&1 &
wpid=$!
wait_line "$out/web" READY 60
(while kill -0 "$wpid" 2>/dev/null; do curl -s "http://127.0.0.1:$port/api/fibonacci?pos=20" >/dev/null; done) &
load=$!
sleep 1
cw=$(median_ms "$CLRTAP" stacks -p "$wpid")
echo "clrtap stacks, web fixture under load: ${cw} ms (median of $RUNS; small fixture: ${c} ms)"
if [ -x "$TOOLS/dotnet-stack" ]; then
	dw=$(median_ms "$TOOLS/dotnet-stack" report -p "$wpid")
	echo "dotnet-stack report, web fixture:    ${dw} ms (median of $RUNS)"
	awk -v c="$cw" -v d="$dw" 'BEGIN {printf "ratio (web): clrtap stacks is %.1fx faster than dotnet-stack report\n", d / c}'
fi
