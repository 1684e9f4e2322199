#!/usr/bin/env bash
# Wall time of `trace collect -d 2` on the `web` fixture under curl load (its
# rundown is larger than a socket buffer: the stop stall of issue 9 showed
# there), beside `dotnet-trace collect --duration 00:00:00:02` (installed from
# NuGet into build/tools if the registry serves it). Prints the median of
# RUNS runs of each, the time past the duration, and their ratio.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
CLRTAP=${CLRTAP:-$ROOT/build/clrtap}
DLL=$ROOT/build/fixtures/sample/sample.dll
RUNS=${RUNS:-5}
TOOLS=$ROOT/build/tools
wpid=
load=
out=$(mktemp -d)
cleanup() {
	[ -n "$load" ] && kill "$load" 2>/dev/null
	[ -n "$wpid" ] && kill -TERM "$wpid" 2>/dev/null
	rm -rf "$out"
}
trap cleanup EXIT

need_tool dotnet-trace

port=$((20000 + RANDOM % 20000))
dotnet "$DLL" web --port "$port" >"$out/web" 2>&1 &
wpid=$!
wait_line "$out/web" READY 60
(while kill -0 "$wpid" 2>/dev/null; do curl -s "http://127.0.0.1:$port/api/fibonacci?pos=20" >/dev/null; done) &
load=$!
sleep 1
c=$(median_ms "$CLRTAP" trace collect -p "$wpid" -d 2 -o "$out/c.nettrace")
echo "clrtap trace collect -d 2, web fixture under load: ${c} ms (median of $RUNS; $(awk -v c="$c" 'BEGIN {printf "%.0f", c - 2000}') ms past the duration)"
if [ -x "$TOOLS/dotnet-trace" ]; then
	d=$(median_ms "$TOOLS/dotnet-trace" collect -p "$wpid" --duration 00:00:00:02 -o "$out/d.nettrace")
	echo "dotnet-trace collect --duration 2 s:                ${d} ms (median of $RUNS; $(awk -v d="$d" 'BEGIN {printf "%.0f", d - 2000}') ms past the duration)"
	awk -v c="$c" -v d="$d" 'BEGIN {printf "ratio: clrtap takes %.2fx the time of dotnet-trace\n", c / d}'
fi
