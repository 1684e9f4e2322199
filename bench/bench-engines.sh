#!/usr/bin/env bash
# Each profiling engine's cost to the target, side by side with dotnet-trace:
# the `busy` fixture prints its throughput (Op calls per 250 ms round); one
# fixture per thread count runs the whole time while windows alternate: no
# tool, clrtap profile --engine perf (99 Hz), no tool, clrtap profile
# --engine eventpipe, no tool, dotnet-trace collect --profile
# dotnet-sampled-thread-time (from NuGet, if served). Each tool window is
# compared with the no-tool window just before it; ROUNDS rounds, the median
# of the per-round ratios is printed: of the ops per round (wall clock: on a
# shared machine other load moves it a lot) and of the ops per CPU second of
# the target (steadier; the runtime's own sampling work counts against it,
# its pauses do not), and the tool's own CPU seconds per window. Thread counts: 1 and 50 busy threads
# (EventPipe suspends and walks every managed thread at each sample).
# The machine is shared and small: the figures are of one run.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
bench_setup
WIN=${WIN:-6}        # seconds measured per window
SETTLE=${SETTLE:-2}  # seconds after a tool starts / stops before measuring
ROUNDS=${ROUNDS:-5}
THREADS=${THREADS:-"1 50"}

need_tool dotnet-trace
DT=""
if [ -x "$TOOLS/dotnet-trace" ]; then
	DT="$TOOLS/dotnet-trace"
	echo "dotnet-trace $("$DT" --version 2>/dev/null | head -1)"
fi

ops_between() { # FILE FROM TO -> "average-ops-per-round total-ops" of lines FROM+1..TO
	awk -v a="$2" -v b="$3" 'NR > a && NR <= b && /^ROUND / { sub(/.*ops=/, ""); s += $0; n++ }
		END { if (n) printf "%.0f %.0f", s / n, s; else print "0 0" }' "$1"
}

cpu_ticks() { # utime + stime of a process, in clock ticks
	awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# window FIX_OUT FIX_PID [TOOL_PID]: measures WIN seconds; prints the average
# ops per round, the ops per CPU second of the target, and the tool's CPU
# seconds in the window
window() {
	local a b c0 c1 t0 t1 r
	a=$(wc -l <"$1")
	c0=$(cpu_ticks "$2")
	t0=$([ -n "${3:-}" ] && cpu_ticks "$3" || echo 0)
	sleep "$WIN"
	b=$(wc -l <"$1")
	c1=$(cpu_ticks "$2")
	t1=$([ -n "${3:-}" ] && cpu_ticks "$3" || echo 0)
	r=$(ops_between "$1" "$a" "$b")
	awk -v r="$r" -v c=$((c1 - c0)) -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" 'BEGIN {
		split(r, x, " "); printf "%d %.0f %.2f", x[1], c ? x[2] / (c / hz) : 0, t / hz }'
}

# tool_window FIX_OUT FIX_PID LABEL CMD...: starts CMD, settles, measures, stops it, waits
tool_window() {
	local fo=$1 fx=$2 label=$3 tp v
	shift 3
	"$@" >"$out/tool-$label.out" 2>&1 &
	tp=$!
	sleep "$SETTLE"
	v=$(window "$fo" "$fx" "$tp")
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
		base=$(window "$fo" "$fx")
		v=$(tool_window "$fo" "$fx" perf "$CLRTAP" profile --engine perf -F 99 -p "$fx" -d 600 -o "$out/p.folded")
		echo "$t perf $r $base $v" >>"$out/res"
		sleep "$SETTLE"
		base=$(window "$fo" "$fx")
		v=$(tool_window "$fo" "$fx" ep "$CLRTAP" profile --engine eventpipe -p "$fx" -d 600 -o "$out/e.folded")
		echo "$t eventpipe $r $base $v" >>"$out/res"
		sleep "$SETTLE"
		if [ -n "$DT" ]; then
			base=$(window "$fo" "$fx")
			v=$(tool_window "$fo" "$fx" dt "$DT" collect -p "$fx" --profile dotnet-sampled-thread-time \
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

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
echo "== throughput of 'sample busy --threads T' (Op calls per 250 ms round): tool windows"
echo "   of ${WIN}s alternating with no-tool windows, $ROUNDS rounds; cost = 1 - tool/no-tool"
for t in $THREADS; do
	run_threads "$t"
done
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs (far above the CPU count: the figures are noise)"
echo "cost = 1 - tool/no-tool, median of the rounds; per round: no-tool -> tool"
printf '%-7s %-13s %-10s %-10s %s\n' threads tool "wall cost" "cpu cost" "tool CPU s/window; ops per round (wall); ops per target CPU second"
for t in $THREADS; do
	for tool in perf eventpipe dotnet-trace; do
		grep -q "^$t $tool " "$out/res" 2>/dev/null || continue
		awk -v t="$t" -v tool="$tool" '
			function med(a, n,   i, j, x) {
				for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
				return n % 2 ? a[int(n / 2)] : (a[n / 2 - 1] + a[n / 2]) / 2 }
			BEGIN { n = 0 }
			$1 == t && $2 == tool {
				# fields: T tool round base_ops base_opscpu base_toolcpu ops opscpu toolcpu
				w[n] = $4 > 0 ? 1 - $7 / $4 : 0; c[n] = $5 > 0 ? 1 - $8 / $5 : 0; tc[n] = $9
				sw = sw sprintf("%d->%d ", $4, $7); sc = sc sprintf("%d->%d ", $5, $8); n++ }
			END { printf "%-7s %-13s %8.1f %% %8.1f %%  %.2f; %s; %s\n", t, tool, 100 * med(w, n), 100 * med(c, n), med(tc, n), sw, sc }' "$out/res"
	done
done
