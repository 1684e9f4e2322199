#!/usr/bin/env bash
# Cost of source lines (issue 28) on a profile of 10,000 samples or more of
# tests/fixtures/lines (Release, embedded PDB: a hot loop on one thread, a
# throw and a call every 20 ms on another):
#  1. the live cost, ABAB: `profile -F 1000 -d 10` (about 10,000 samples of
#     the hot thread) with and without --lines, its "processing" time (the
#     rundown session for the IL maps, lookups, output), RUNS rounds;
#  2. the lookup itself in instructions (valgrind's cachegrind, I refs:
#     deterministic, one run each): `trace report --flame x.pb.gz` of one
#     saved EventPipe trace, with and without --lines (the same input, so the
#     difference is the line lookup: IL maps, PDB reading, names).
# Needs build/fixtures/lines (make fixtures) and valgrind.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
bench_setup
RUNS=${RUNS:-3}
LDLL=$ROOT/build/fixtures/lines/release-embedded/lines.dll
[ -f "$LDLL" ] || { echo "bench-lines: $LDLL not built (make fixtures)"; exit 0; }

DOTNET_CLI_TELEMETRY_OPTOUT=1 dotnet "$LDLL" >"$out/fx.out" 2>&1 &
pids+=($!)
P=$!
wait_line "$out/fx.out" '^READY' 30 || { echo "fixture did not start"; exit 1; }

# 1. live: processing time of profile, ABAB
echo "profile -F 1000 -d 10 (ABAB):"
for ((i = 0; i < RUNS; i++)); do
	for m in off on; do
		opt=()
		[ $m = on ] && opt=(--lines)
		res=$("$CLRTAP" profile -p "$P" -F 1000 -d 10 "${opt[@]}" -o "$out/p.pb.gz" 2>/dev/null)
		echo "  lines $m: $(printf '%s\n' "$res" | sed -n 's/^samples: \([0-9]*\).*/\1 samples/p'), processing $(printf '%s\n' "$res" | sed -n 's/^processing: \([0-9]*\) ms.*/\1 ms/p')"
	done
done

# 2. lookup cost on a saved trace, in instructions
# TRACE_S seconds: 100 gave 24,120 managed samples on a shared 2-core box
"$CLRTAP" trace collect -p "$P" --profile cpu-sampling -d "${TRACE_S:-100}" -o "$out/t.nettrace" >/dev/null 2>&1
samples=$("$CLRTAP" trace report "$out/t.nettrace" --json 2>/dev/null |
	python3 -c 'import json,sys; s=json.load(sys.stdin)["samples"]; print(s["in_flame"], "samples,", s["stacks"], "distinct stacks")')
irefs() {
	valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
		sed -n 's/.*I *refs: *//p' | tr -d ,
}
a=$(irefs "$CLRTAP" trace report "$out/t.nettrace" --flame "$out/a.pb.gz")
b=$(irefs "$CLRTAP" trace report "$out/t.nettrace" --lines --flame "$out/b.pb.gz")
echo "trace report of a ${TRACE_S:-100} s EventPipe trace ($samples) to pprof:"
echo "  without --lines: $a instructions"
echo "  with --lines:    $b instructions (+$(((b - a) / 1000000)) M, +$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.1f", 100 * (b - a) / a}') %)"
