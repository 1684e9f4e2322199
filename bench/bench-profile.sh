#!/usr/bin/env bash
# clrtap profile, side by side with what a user would otherwise run:
#  (a) throughput of the sample app (`throughput` mode, ops/s) with no
#      profiler, with clrtap profile at 99 Hz and at 999 Hz, and with
#      `dotnet-trace collect --profile cpu-sampling` (from NuGet, if served),
#      as ratios to the unprofiled run; REPS runs of each, interleaved;
#  (b) time from samples to flame graph for the same 60 s recording: clrtap
#      (its own "processing" figure: symbols, aggregation, HTML written) vs
#      `perf record -g` + `perf script` + folding + flamegraph.pl (Brendan
#      Gregg's scripts when installed; otherwise a short awk fold, and the
#      rendering step is missing from perf's figure: say so);
#  (c) clrtap's peak RSS during that 60 s recording (/usr/bin/time).
# The machine is shared and small: the figures are of one run.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
CLRTAP=${CLRTAP:-$ROOT/build/clrtap}
DLL=$ROOT/build/fixtures/sample/sample.dll
TOOLS=$ROOT/build/tools
SECS=${SECS:-10}
REPS=${REPS:-3}
REC=${REC:-60}
out=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 1
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$out"
}
trap cleanup EXIT

need_tool dotnet-trace

cpu_ticks() { # utime + stime of a process, in clock ticks
	awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}

# throughput LABEL [PROFILER...]: ops/s of one run; %PID% in the profiler's
# arguments becomes the fixture's pid. The profiler starts before the
# workload and is stopped with SIGINT after it.
throughput() {
	local label=$1 fx ppid="" ops args=() a
	shift
	rm -f "$out/go"
	dotnet "$DLL" throughput --seconds "$SECS" --trigger "$out/go" >"$out/fx" 2>&1 &
	fx=$!
	pids+=("$fx")
	wait_line "$out/fx" '^READY' 60 || { echo "fixture did not start" >&2; return 1; }
	if [ $# -gt 0 ]; then
		for a in "$@"; do args+=("${a//%PID%/$fx}"); done
		"${args[@]}" >"$out/prof.out" 2>&1 &
		ppid=$!
		sleep 3 # attached and sampling
	fi
	t0=$(cpu_ticks "$fx")
	touch "$out/go"
	wait_line "$out/fx" '^DONE' $((SECS + 60)) || { echo "no DONE" >&2; return 1; }
	t1=$(cpu_ticks "$fx")
	if [ -n "$ppid" ]; then
		kill -INT "$ppid" 2>/dev/null
		wait "$ppid" 2>/dev/null
	fi
	kill -TERM "$fx" 2>/dev/null
	wait "$fx" 2>/dev/null
	ops=$(sed -n 's/^DONE .*ops_per_sec=\([0-9]*\).*/\1/p' "$out/fx")
	total=$(sed -n 's/^DONE ops=\([0-9]*\).*/\1/p' "$out/fx")
	# ops per CPU second of the target (user + system, the kernel's sampling
	# work included): steadier than ops/s on a shared machine
	echo "$label $ops $(awk -v o="$total" -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.0f", t ? o / (t / hz) : 0 }')" >>"$out/tp"
}

echo "== (a) throughput of 'sample throughput --seconds $SECS --threads 2', $REPS runs each, interleaved; ratios to no profiler (1.000 = no cost)"
for ((r = 0; r < REPS; r++)); do
	throughput none
	throughput clrtap-99hz "$CLRTAP" profile -p %PID% -F 99 -d 600 -o "$out/t99.folded"
	throughput clrtap-999hz "$CLRTAP" profile -p %PID% -F 999 -d 600 -o "$out/t999.folded"
	if [ -x "$TOOLS/dotnet-trace" ]; then
		throughput dotnet-trace "$TOOLS/dotnet-trace" collect -p %PID% --profile cpu-sampling \
			-o "$out/dt.nettrace" --duration 00:00:10:00
	fi
done
# medians: one run disturbed by another process on the machine moves a mean a lot
awk 'function median(str,   a, n, i, j, t) {
		n = split(str, a, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
     }
     { all[$1] = all[$1] " " $2; cpu[$1] = cpu[$1] " " $3 }
     END {
	base = median(all["none"]); cbase = median(cpu["none"])
	split("none clrtap-99hz clrtap-999hz dotnet-trace", order, " ")
	for (i = 1; i <= 4; i++) {
		k = order[i]
		if (!(k in all)) continue
		m = median(all[k]); cm = median(cpu[k])
		printf "  %-13s median %11.0f ops/s (runs:%s) ratio %.3f | median %11.0f ops per CPU-second, ratio %.3f\n", k, m, all[k], m / base, cm, cm / cbase
	}
     }' "$out/tp"

echo
echo "== (b) samples -> flame graph for the same ${REC} s recording (cpu-split fixture, 99 Hz)"
dotnet "$DLL" cpu-split >"$out/cs" 2>&1 &
cs=$!
pids+=("$cs")
wait_line "$out/cs" '^READY' 60
sleep 2
/usr/bin/time -f "%M" -o "$out/rss" "$CLRTAP" profile -p "$cs" -F 99 -d "$REC" -o "$out/clrtap.html" >"$out/clrtap.out" 2>&1 &
ct=$!
perf record -q -F 99 -g -p "$cs" -o "$out/perf.data" -- sleep "$REC" >/dev/null 2>&1
wait "$ct"
csamples=$(sed -n 's/^samples: \([0-9]*\).*/\1/p' "$out/clrtap.out")
cproc=$(sed -n 's/^processing: \([0-9]*\) ms.*/\1/p' "$out/clrtap.out")
echo "  clrtap: $csamples samples; samples -> HTML flame graph: ${cproc} ms (symbols incl. R2R, aggregation, writing)"
fold_awk() {
	awk '/^[^ \t]/ { if (st != "") print st; st = ""; next }
	     /^[ \t]+[0-9a-f]+ / { f = $0; sub(/^[ \t]+[0-9a-f]+ /, "", f); sub(/ \(.*\)$/, "", f); sub(/\+0x[0-9a-f]+$/, "", f); if (f == "") f = "[unknown]"; st = (st == "") ? f : f ";" st; next }
	     /^$/ { if (st != "") print st; st = "" }
	     END { if (st != "") print st }' | sort | uniq -c | awk '{ c = $1; $1 = ""; print substr($0, 2), c }'
}
collapse=$(command -v stackcollapse-perf.pl || true)
flamegraph=$(command -v flamegraph.pl || command -v flamegraph || true)
s=$(date +%s%N)
perf script -i "$out/perf.data" >"$out/perf.txt" 2>/dev/null
m=$(date +%s%N)
if [ -n "$collapse" ]; then
	"$collapse" "$out/perf.txt" >"$out/perf.folded"
	how="stackcollapse-perf.pl"
else
	fold_awk <"$out/perf.txt" >"$out/perf.folded"
	how="awk fold (FlameGraph's stackcollapse-perf.pl is not packaged here)"
fi
if [ -n "$flamegraph" ]; then
	"$flamegraph" "$out/perf.folded" >"$out/perf.svg"
	how="$how + flame graph SVG"
else
	how="$how; no SVG rendering (flamegraph.pl not installed), so perf's figure leaves that step out"
fi
e=$(date +%s%N)
psamples=$(awk '{ s += $NF } END { print s + 0 }' "$out/perf.folded")
punk=$(grep -o '\[unknown\]' "$out/perf.folded" | wc -l)
echo "  perf:   $psamples samples; perf script $(((m - s) / 1000000)) ms + folding $(((e - m) / 1000000)) ms = $(((e - s) / 1000000)) ms ($how)"
awk -v c="$cproc" -v p="$(((e - s) / 1000000))" 'BEGIN { if (c > 0) printf "  ratio (perf pipeline time / clrtap time): %.2f\n", p / c }'
echo "  names: clrtap's top frames:"
sed -n '/^top/,$p' "$out/clrtap.out" | sed -n '2,4p' | sed 's/^/    /'
echo "  perf's top leaf frames (its JIT frames in /memfd:doublemapper stay unnamed):"
awk '{ l = $0; sub(/ [0-9]+$/, "", l); n = split(l, f, ";"); c[f[n]] += $NF; t += $NF } END { for (k in c) printf "    %5.1f  %s\n", 100 * c[k] / t, k }' "$out/perf.folded" | sort -rn | head -3

echo
echo "== (c) clrtap peak RSS during the ${REC} s recording: $(cat "$out/rss") KiB"
