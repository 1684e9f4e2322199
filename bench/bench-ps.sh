#!/usr/bin/env bash
# Time of `clrtap ps` with 20 .NET processes running (10 on the host, 10 each
# in its own PID + mount namespace with a private /tmp), beside `dotnet-trace
# ps` (installed from NuGet into build/tools if the registry serves it), in one
# run. Prints the median of RUNS runs of each and their ratio.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
CLRTAP=${CLRTAP:-$ROOT/build/clrtap}
DLL=$ROOT/build/fixtures/sample/sample.dll
RUNS=${RUNS:-30}
N=${N:-20}
TOOLS=$ROOT/build/tools
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 2
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
}
trap cleanup EXIT

need_tool dotnet-trace

out=$(mktemp -d)
for ((i = 0; i < N; i++)); do
	if ((i % 2)); then
		"$ROOT/tests/tools/contain.sh" "$DLL" idle >"$out/$i" 2>&1 &
	else
		dotnet "$DLL" idle >"$out/$i" 2>&1 &
	fi
	pids+=($!)
done
for ((i = 0; i < N; i++)); do
	for ((w = 0; w < 600; w++)); do grep -q READY "$out/$i" 2>/dev/null && break; sleep 0.1; done
done

found=$("$CLRTAP" ps --json | python3 -c 'import json,sys; print(len([r for r in json.load(sys.stdin) if r["live"] and r["assembly"]=="sample"]))')
echo "processes running: $N sample fixtures ($((N / 2)) namespaced); clrtap ps sees $found of them live"
c=$(median_ms "$CLRTAP" ps)
echo "clrtap ps:       ${c} ms (median of $RUNS)"
if [ -x "$TOOLS/dotnet-trace" ]; then
	dfound=$("$TOOLS/dotnet-trace" ps 2>/dev/null | grep -c sample)
	d=$(median_ms "$TOOLS/dotnet-trace" ps)
	echo "dotnet-trace ps: ${d} ms (median of $RUNS); it lists $dfound of the sample fixtures"
	awk -v c="$c" -v d="$d" 'BEGIN {printf "ratio: clrtap ps is %.1fx faster than dotnet-trace ps\n", d / c}'
fi
rm -rf "$out"
