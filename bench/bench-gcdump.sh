#!/usr/bin/env bash
# Heap snapshot of a fixture with 5 million objects (sample heap --shape big):
# clrtap gcdump collect and report (wall time, peak RSS) beside TraceEvent
# reading the same heap session's events (tests/fixtures/techeck --heap:
# TraceEvent's GCBulkNode/BulkType parsers tallying types; it builds no graph,
# so it is a lower bound for a TraceEvent-based reader). dotnet-gcdump is
# tried from NuGet and left out when the registry does not serve it.
# Every figure is one run on a machine shared with other work: read ratios.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
CLRTAP=${CLRTAP:-$ROOT/build/clrtap}
DLL=$ROOT/build/fixtures/sample/sample.dll
TECHECK=$ROOT/build/fixtures/techeck/techeck.dll
TOOLS=$ROOT/build/tools
COUNT=${COUNT:-5000000}
pid=
out=$(mktemp -d)
cleanup() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null
	rm -rf "$out"
}
trap cleanup EXIT

# measure LABEL CMD...: wall seconds and peak RSS (MiB) of CMD via /usr/bin/time.
measure() {
	local label=$1
	shift
	/usr/bin/time -f '%e %M' -o "$out/time" "$@" >"$out/$label.out" 2>"$out/$label.err"
	read -r wall kb <"$out/time"
	printf '%-34s %8.2f s %8.0f MiB\n' "$label" "$wall" "$((kb / 1024))"
	eval "W_$label=$wall; M_$label=$kb"
}

dotnet "$DLL" heap --shape big --count "$COUNT" >"$out/fixture" 2>&1 &
pid=$!
wait_line "$out/fixture" '^READY' 120 || { echo "fixture did not start"; exit 1; }
echo "fixture pid $pid: $COUNT HeapBigItem objects in one array"

measure collect "$CLRTAP" gcdump collect -p "$pid" -o "$out/big.heap"
grep -E 'wrote|paused' "$out/collect.out"
measure report "$CLRTAP" gcdump report "$out/big.heap"
grep -E 'HeapBigItem$' "$out/report.out" | head -1
echo "clrtap snapshot file: $(($(stat -c %s "$out/big.heap") >> 20)) MiB"
measure collect_nettrace "$CLRTAP" gcdump collect -p "$pid" -o "$out/big2.heap" --nettrace "$out/big.nettrace"
echo "heap session events: $(($(stat -c %s "$out/big.nettrace") >> 20)) MiB"
if [ -f "$TECHECK" ]; then
	measure traceevent dotnet "$TECHECK" --heap "$out/big.nettrace"
	grep -E 'HeapBigItem$|^objects' "$out/traceevent.out" | head -2
	awk -v c="$W_report" -v t="$W_traceevent" -v cm="$M_report" -v tm="$M_traceevent" 'BEGIN {
		printf "ratio: clrtap report (dominators, paths-ready graph) is %.1fx the speed of TraceEvent tallying types, at %.2f of its memory\n", t / c, cm / tm }'
	awk -v c="$W_collect" -v t="$W_traceevent" -v cm="$M_collect" -v tm="$M_traceevent" 'BEGIN {
		printf "ratio: clrtap collect (live session + graph + strings) vs TraceEvent reading the saved events: %.1fx, memory %.2f\n", t / c, cm / tm }'
else
	echo "note: $TECHECK not built (scripts/build-fixtures.sh); TraceEvent left out"
fi
if need_tool dotnet-gcdump; then
	measure dotnet_gcdump "$TOOLS/dotnet-gcdump" collect -p "$pid" -o "$out/big.gcdump"
	measure dotnet_gcdump_report "$TOOLS/dotnet-gcdump" report "$out/big.gcdump"
	echo ".gcdump file: $(($(stat -c %s "$out/big.gcdump") >> 20)) MiB"
	awk -v c="$W_collect" -v d="$W_dotnet_gcdump" -v cm="$M_collect" -v dm="$M_dotnet_gcdump" 'BEGIN {
		printf "ratio: clrtap collect is %.1fx the speed of dotnet-gcdump collect, at %.2f of its memory\n", d / c, cm / dm }'
	awk -v c="$W_report" -v d="$W_dotnet_gcdump_report" -v cm="$M_report" -v dm="$M_dotnet_gcdump_report" 'BEGIN {
		printf "ratio: clrtap report is %.1fx the speed of dotnet-gcdump report, at %.2f of its memory\n", d / c, cm / dm }' 
fi
