#!/usr/bin/env bash
# Recording to flame graph on the ASP.NET-style fixture (`web` under curl
# load), 20 s at 99 Hz, warm symbol cache (issue 16): clrtap's "processing"
# (samples to written flame graph) for BEFORE (a clrtap binary given, or
# built from BEFORE_REV) and this tree's, beside perf record -g + perf script
# | stackcollapse-perf.pl | flamegraph.pl (FLAMEGRAPH=DIR holding the two
# scripts; not committed; without it an awk fold stands in and says so).
# ABAB: REPS rounds of (before, after, perf), each clrtap with its own cache
# directory warmed by one run first; every figure printed, then the ratios
# perf pipeline / clrtap per round. The harness runs at SCHED_FIFO, every
# tool at SCHED_OTHER. Noise on this shared machine: about +-20 %.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
CLRTAP=${CLRTAP:-$ROOT/build/clrtap}
DLL=$ROOT/build/fixtures/sample/sample.dll
BEFORE_REV=${BEFORE_REV:-4adaa67}
FLAMEGRAPH=${FLAMEGRAPH:-}
REPS=${REPS:-2}
SECS=${SECS:-20}
out=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 1
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$out"
}
trap cleanup EXIT
if [ "$(id -u)" -ne 0 ]; then
	echo "bench-warm: needs root (perf, SCHED_FIFO)"
	exit 0
fi
BEFORE=${BEFORE:-}
if [ -z "$BEFORE" ]; then
	mkdir -p "$out/before"
	if git -C "$ROOT" archive "$BEFORE_REV" | tar -x -C "$out/before" &&
		make -C "$out/before" -j2 build/clrtap >/dev/null 2>&1; then
		BEFORE=$out/before/build/clrtap
	else
		echo "note: cannot build $BEFORE_REV: 'before' figures left out"
	fi
fi
chrt -f -p 1 $$ >/dev/null || echo "note: the harness could not take SCHED_FIFO"

port=$((20000 + RANDOM % 20000))
chrt -o 0 dotnet "$DLL" web --port "$port" >"$out/web" 2>&1 &
web=$!
pids+=("$web")
wait_line "$out/web" '^READY' 60 || { echo "web fixture did not start"; exit 1; }
load() {
	local routes=("api/fibonacci?pos=30" "api/echo?echo=hello" "api/on-cpu" "api/exception/3" "healthz")
	while :; do
		for r in "${routes[@]}"; do curl -s "http://127.0.0.1:$port/$r" >/dev/null; done
	done
}
for i in 1 2; do
	chrt -o 0 bash -c "$(declare -f load); port=$port; load" &
	pids+=($!)
done
sleep 3

# clrtap_run NAME BIN: one profile; prints "processing-ms samples unnamed"
clrtap_run() {
	CLRTAP_CACHE_DIR=$out/cache-$1 chrt -o 0 "$2" profile -p "$web" -F 99 -d "$SECS" \
		-o "$out/$1.folded" >"$out/$1.out" 2>&1
	echo "$(sed -n 's/^processing: \([0-9]*\) ms.*/\1/p' "$out/$1.out")" \
		"$(sed -n 's/^samples: \([0-9]*\).*/\1/p' "$out/$1.out")" \
		"$(sed -n 's/^unnamed frames: \([0-9.]*\) %.*/\1/p' "$out/$1.out")"
}
perf_run() { # prints "total-ms samples"
	chrt -o 0 perf record -q -F 99 -g -p "$web" -o "$out/perf.data" -- sleep "$SECS" >/dev/null 2>&1
	local s m e
	s=$(date +%s%N)
	chrt -o 0 perf script -i "$out/perf.data" >"$out/perf.txt" 2>/dev/null
	m=$(date +%s%N)
	if [ -n "$FLAMEGRAPH" ] && [ -x "$FLAMEGRAPH/stackcollapse-perf.pl" ]; then
		chrt -o 0 "$FLAMEGRAPH/stackcollapse-perf.pl" "$out/perf.txt" >"$out/perf.folded"
		chrt -o 0 "$FLAMEGRAPH/flamegraph.pl" "$out/perf.folded" >"$out/perf.svg"
	else
		awk '/^[^ \t]/ { if (st != "") print st; st = ""; next }
		     /^[ \t]+[0-9a-f]+ / { f = $0; sub(/^[ \t]+[0-9a-f]+ /, "", f); st = (st == "") ? f : f ";" st; next }
		     END { if (st != "") print st }' "$out/perf.txt" | sort | uniq -c >"$out/perf.folded"
	fi
	e=$(date +%s%N)
	echo "$(((e - s) / 1000000)) $(grep -c '^[^ \t]' "$out/perf.txt")"
}

echo "== web fixture under curl load, $SECS s at 99 Hz: recording -> flame graph, warm symbol cache"
[ -n "$FLAMEGRAPH" ] && echo "   perf side: perf script | stackcollapse-perf.pl | flamegraph.pl ($FLAMEGRAPH)" ||
	echo "   perf side: perf script + awk fold (no FLAMEGRAPH=DIR: no SVG step)"
# warm both caches
[ -n "$BEFORE" ] && clrtap_run before "$BEFORE" >/dev/null
clrtap_run after "$CLRTAP" >/dev/null
printf '  %-5s %-22s %-22s %-16s %s\n' round "before: proc ms (n)" "after: proc ms (n)" "perf: ms (n)" "ratio perf/before  perf/after"
for ((r = 1; r <= REPS; r++)); do
	b="- - -"
	[ -n "$BEFORE" ] && b=$(clrtap_run before "$BEFORE")
	a=$(clrtap_run after "$CLRTAP")
	p=$(perf_run)
	set -- $b
	bp=$1 bn=$2
	set -- $a
	ap=$1 an=$2 au=$3
	set -- $p
	pt=$1 pn=$2
	printf '  %-5s %-22s %-22s %-16s %s\n' "$r" "$bp ($bn)" "$ap ($an, unnamed $au %)" "$pt ($pn)" \
		"$(awk -v p="$pt" -v b="$bp" -v a="$ap" 'BEGIN { printf "%s  %s", (b > 0 ? sprintf("%.1fx", p / b) : "-"), (a > 0 ? sprintf("%.1fx", p / a) : "-") }')"
done
