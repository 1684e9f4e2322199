#!/usr/bin/env bash
# Native symbol sources (docs/internals/symsrv.md) on the native-hot fixture:
#  1. the summary's share of frames (and leaves) named by address only, with
#     no server configured and with the fixture library's debug file in the
#     cache (what a server would have served), RUNS profiles each;
#  2. with no server configured, clrtap against BASE (another clrtap binary,
#     e.g. main's), ABAB: the wall time of `profile -d 1` and the summary's
#     processing time (symbols, aggregation, output), with medians.
# BASE unset: part 2 is left out. RUNS (default 6).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
bench_setup
RUNS=${RUNS:-6}
BASE=${BASE:-}
LIB=$ROOT/build/fixtures/native/libclrtapnat.so
DBG=$ROOT/build/fixtures/native/debug/libclrtapnat.so.debug

dotnet "$DLL" native-hot >"$out/fixture" 2>&1 &
pids+=($!)
pid=$!
wait_line "$out/fixture" READY 60 || { echo "fixture did not start"; exit 1; }
sleep 1

bid=$(readelf -n "$LIB" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
mkdir -p "$out/served/debug" "$out/empty"
chmod 700 "$out/served" "$out/empty" "$out/served/debug"
cp "$DBG" "$out/served/debug/$bid.debug"

share() { # share CACHE: "frames% leaves%" of one profile's summary
	"$CLRTAP" profile -p "$pid" -d 2 -F 499 --debuginfod '' --symbol-cache "$1" -o "$out/p.folded" 2>/dev/null |
		sed -n 's/^frames named by address only.*: \([0-9.]*\) % of frames, \([0-9.]*\) % of leaves$/\1 \2/p'
}
echo "share named by address only (of frames, of leaves), profile -d 2 -F 499, $RUNS runs each:"
for ((i = 0; i < RUNS; i++)); do
	echo "  no server:          $(share "$out/empty")"
	echo "  debug file served:  $(share "$out/served")"
done

[ -n "$BASE" ] || exit 0
run1() { # run1 BIN: "wall_ms processing_ms" of one profile -d 1 (no server configured)
	local o s e
	s=$(date +%s%N)
	o=$(env -u DEBUGINFOD_URLS -u CLRTAP_SYMBOL_SERVER "$1" profile -p "$pid" -d 1 -o "$out/b.folded" 2>/dev/null)
	e=$(date +%s%N)
	echo "$(((e - s) / 1000000)) $(sed -n 's/^processing: \([0-9]*\) ms.*/\1/p' <<<"$o")"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "no server configured, ABAB, profile -d 1: wall ms, processing ms (the summary's)"
: >"$out/A"
: >"$out/B"
for ((i = 0; i < RUNS; i++)); do
	run1 "$BASE" >>"$out/A"
	run1 "$CLRTAP" >>"$out/B"
done
echo "  base:   wall $(cut -d' ' -f1 "$out/A" | tr '\n' ' ')  processing $(cut -d' ' -f2 "$out/A" | tr '\n' ' ')"
echo "  clrtap: wall $(cut -d' ' -f1 "$out/B" | tr '\n' ' ')  processing $(cut -d' ' -f2 "$out/B" | tr '\n' ' ')"
echo "  medians: base wall $(cut -d' ' -f1 "$out/A" | median) ms, processing $(cut -d' ' -f2 "$out/A" | median) ms;" \
	"clrtap wall $(cut -d' ' -f1 "$out/B" | median) ms, processing $(cut -d' ' -f2 "$out/B" | median) ms"
