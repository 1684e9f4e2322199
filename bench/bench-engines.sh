#!/usr/bin/env bash
# Each profiling engine's cost to the target, side by side with dotnet-trace:
# the `busy` fixture prints its throughput (Op calls per 250 ms round); one
# fixture per thread count runs the whole time while windows alternate: no
# tool, clrtap profile --engine perf (99 Hz), no tool, clrtap profile
# --engine eventpipe, no tool, dotnet-trace collect --profile
# dotnet-sampled-thread-time (from NuGet, if served). Each tool window is
# compared with the no-tool window just before it; ROUNDS rounds, the median
# of the per-round ratios is printed. Thread counts: 1 and 50 busy threads
# (EventPipe suspends and walks every managed thread at each sample).
# The machine is shared and small: the figures are of one run.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
bench_setup
WIN=${WIN:-6}        # seconds measured per window
SETTLE=${SETTLE:-2}  # seconds after a tool starts / stops before measuring
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-"1 50"}

need_tool dotnet-trace
DT=""
if [ -x "$TOOLS/dotnet-trace" ]; then
	DT="$TOOLS/dotnet-trace"
	echo "dotnet-trace $("$DT" --version 2>/dev/null | head -1)"
fi

ops_between() { # FILE FROM TO -> average ops per round in lines FROM+1..TO
	awk -v a="$2" -v b="$3" 'NR > a && NR <= b && /^ROUND / { sub(/.*ops=/, ""); s += $0; n++ }
		END { if (n) printf "%.0f", s / n; else print 0 }' "$1"
}

# window FIX_OUT: measures WIN seconds, prints the average ops per round
window() {
	local a b
	a=$(wc -l <"$1")
	sleep "$WIN"
	b=$(wc -l <"$1")
	ops_between "$1" "$a" "$b"
}

# tool_window FIX_OUT LABEL CMD...: starts CMD, settles, measures, stops it (SIGINT), waits
tool_window() {
	local fo=$1 label=$2 tp v
	shift 2
	"$@" >"$out/tool-$label.out" 2>&1 &
	tp=$!
	sleep "$SETTLE"
	v=$(window "$fo")
	# dotnet-trace, a background job here, ignores SIGINT: it stops at its --duration
	[ "$label" = dt ] || kill -INT "$tp" 2>/dev/null
	wait "$tp" 2>/dev/null
	echo "$v"
}

run_threads() {
	local t=$1 fx fo r base v
	fo=$out/fx-$t
	dotnet "$DLL" busy --threads "$t" >"$fo" 2>&1 &
	fx=$!
	pids+=("$fx")
	wait_line "$fo" '^ROUND 8 ' 60 || { echo "fixture did not start" >&2; return 1; }
	for ((r = 1; r <= ROUNDS; r++)); do
		base=$(window "$fo")
		v=$(tool_window "$fo" perf "$CLRTAP" profile --engine perf -F 99 -p "$fx" -d 600 -o "$out/p.folded")
		echo "$t perf $r $base $v" >>"$out/res"
		sleep "$SETTLE"
		base=$(window "$fo")
		v=$(tool_window "$fo" ep "$CLRTAP" profile --engine eventpipe -p "$fx" -d 600 -o "$out/e.folded")
		echo "$t eventpipe $r $base $v" >>"$out/res"
		sleep "$SETTLE"
		if [ -n "$DT" ]; then
			base=$(window "$fo")
			v=$(tool_window "$fo" dt "$DT" collect -p "$fx" --profile dotnet-sampled-thread-time \
				-o "$out/dt.nettrace" --duration "$(printf '00:00:%02d:%02d' $(((SETTLE + WIN + 2) / 60)) $(((SETTLE + WIN + 2) % 60)))")
			echo "$t dotnet-trace $r $base $v" >>"$out/res"
			sleep "$SETTLE"
		fi
	done
	grep -h "engine:" "$out/tool-perf.out" "$out/tool-ep.out" | sed 's/^/    last run: /'
	grep -q "Profile\|Trace\|Output" "$out/tool-dt.out" 2>/dev/null || [ -z "$DT" ] ||
		sed 's/^/    dotnet-trace: /' "$out/tool-dt.out" | tail -3
	kill -TERM "$fx" 2>/dev/null
	wait "$fx" 2>/dev/null
}

echo "== throughput of 'sample busy --threads T' (Op calls per 250 ms round): tool windows"
echo "   of ${WIN}s alternating with no-tool windows, $ROUNDS rounds; cost = 1 - tool/no-tool"
for t in $THREADS; do
	run_threads "$t"
done
echo
printf '%-8s %-14s %-40s %s\n' threads tool "per round: no-tool -> tool ops/round" "median cost"
for t in $THREADS; do
	for tool in perf eventpipe dotnet-trace; do
		grep -q "^$t $tool " "$out/res" 2>/dev/null || continue
		awk -v t="$t" -v tool="$tool" '$1 == t && $2 == tool {
				c[n++] = ($4 > 0) ? 1 - $5 / $4 : 0; s = s sprintf("%d->%d ", $4, $5) }
			END {
				for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (c[j] < c[i]) { x = c[i]; c[i] = c[j]; c[j] = x }
				m = n % 2 ? c[int(n / 2)] : (c[n / 2 - 1] + c[n / 2]) / 2
				printf "%-8s %-14s %-40s %.1f %%\n", t, tool, s, 100 * m }' "$out/res"
	done
done
