#!/usr/bin/env bash
# Reading a big .nettrace file: `clrtap trace report` beside TraceEvent (the
# techeck tool, tests/fixtures/techeck: EventPipeEventSource counting every
# event) and `clrtap trace convert --format speedscope` beside
# `dotnet-trace convert --format speedscope`. Prints wall time, MB/s and peak
# RSS of each, side by side, and the ratios.
#
# The trace (>= MIN_MB, default 200 MB) is collected once from the alloc
# fixture with the gc-verbose profile (an allocation tick with a stack about
# every 100 KB allocated) plus the sample profiler, and cached in
# build/bench/alloc-big.nettrace; delete it to collect again.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
CLRTAP=${CLRTAP:-$ROOT/build/clrtap}
DLL=$ROOT/build/fixtures/sample/sample.dll
TECHECK=${TECHECK:-$ROOT/build/fixtures/techeck/techeck.dll}
TOOLS=$ROOT/build/tools
DIR=$ROOT/build/bench
TRACE=$DIR/alloc-big.nettrace
MIN_MB=${MIN_MB:-200}
SECS=${SECS:-75}
RUNS=${RUNS:-3}
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1
mkdir -p "$DIR"
fix=""
cleanup() { [ -n "$fix" ] && kill -TERM "$fix" 2>/dev/null; rm -f "$DIR"/out.*; }
trap cleanup EXIT

size_mb() { echo $(($(stat -c %s "$1" 2>/dev/null || echo 0) / 1000000)); }

if [ "$(size_mb "$TRACE")" -lt "$MIN_MB" ]; then
	echo "collecting a >= $MIN_MB MB trace ($SECS s of the alloc fixture, gc-verbose + sample profiler)..."
	dotnet "$DLL" alloc >"$DIR/fixture.out" 2>&1 &
	fix=$!
	for ((i = 0; i < 600; i++)); do grep -q READY "$DIR/fixture.out" && break; sleep 0.1; done
	"$CLRTAP" trace collect -p "$fix" --profile gc-verbose \
		--providers Microsoft-DotNETCore-SampleProfiler -d "$SECS" -o "$TRACE.tmp" || exit 1
	kill -TERM "$fix"
	wait "$fix" 2>/dev/null
	fix=""
	mv "$TRACE.tmp" "$TRACE"
	if [ "$(size_mb "$TRACE")" -lt "$MIN_MB" ]; then
		echo "only $(size_mb "$TRACE") MB: run again with a larger SECS" >&2
		exit 1
	fi
fi
need_tool dotnet-trace
BYTES=$(stat -c %s "$TRACE")
echo "trace: $TRACE, $((BYTES / 1000000)) MB, $("$CLRTAP" trace report "$TRACE" --json |
	python3 -c 'import json,sys; d=json.load(sys.stdin); print("%d events, %d sampled stacks" % (d["trace"]["events"], d["samples"]["managed"]))')"
cat "$TRACE" >/dev/null # page cache: every tool reads it from memory

# measure NAME CMD...: median wall seconds and max peak RSS (MB) of RUNS runs
declare -A WALL RSS
measure() {
	local name=$1 i w r ws=() rmax=0
	shift
	for ((i = 0; i < RUNS; i++)); do
		/usr/bin/time -f "%e %M" -o "$DIR/time.txt" "$@" >/dev/null 2>"$DIR/err.txt" || {
			echo "$name failed: $(tail -3 "$DIR/err.txt")" >&2
			return 1
		}
		read -r w r <"$DIR/time.txt"
		ws+=("$w")
		((r > rmax)) && rmax=$r
	done
	WALL[$name]=$(printf '%s\n' "${ws[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
	RSS[$name]=$((rmax / 1024))
}
row() {
	local name=$1
	[ -n "${WALL[$name]:-}" ] || return
	awk -v n="$name" -v w="${WALL[$name]}" -v r="${RSS[$name]}" -v b="$BYTES" \
		'BEGIN {printf "%-44s %9.2f s %9.1f MB/s %8d MB\n", n, w, (w > 0 ? b / 1e6 / w : 0), r}'
}
ratio() {
	[ -n "${WALL[$1]:-}" ] && [ -n "${WALL[$2]:-}" ] || return
	awk -v a="${WALL[$1]}" -v b="${WALL[$2]}" -v ra="${RSS[$1]}" -v rb="${RSS[$2]}" -v t="$3" \
		'BEGIN {printf "%s: %.1fx faster, %.1fx less memory\n", t, b / a, rb / ra}'
}

measure "clrtap trace report --json" "$CLRTAP" trace report "$TRACE" --json
[ -f "$TECHECK" ] && measure "TraceEvent EventPipeEventSource (techeck)" dotnet "$TECHECK" "$TRACE"
measure "clrtap trace convert --format speedscope" "$CLRTAP" trace convert "$TRACE" --format speedscope -o "$DIR/out.clrtap.speedscope.json"
[ -x "$TOOLS/dotnet-trace" ] && measure "dotnet-trace convert --format speedscope" \
	"$TOOLS/dotnet-trace" convert "$TRACE" --format speedscope -o "$DIR/out.dt.speedscope.json"

printf '\n%-44s %11s %14s %11s\n' "reader ($RUNS runs, median wall, peak RSS)" "wall" "throughput" "peak RSS"
row "clrtap trace report --json"
row "TraceEvent EventPipeEventSource (techeck)"
row "clrtap trace convert --format speedscope"
row "dotnet-trace convert --format speedscope"
echo
ratio "clrtap trace report --json" "TraceEvent EventPipeEventSource (techeck)" "report vs TraceEvent"
ratio "clrtap trace convert --format speedscope" "dotnet-trace convert --format speedscope" "convert vs dotnet-trace convert"
