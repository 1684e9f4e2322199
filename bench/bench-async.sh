#!/usr/bin/env bash
# What `profile --async` (the TPL event source: a resumed method's logical
# callers) costs the target, side by side with plain profiling: the sample
# fixture's async-chain mode (Run -> Checkout -> Order -> Price, a yield at
# every await) prints its Checkout calls per 250 ms round (--rounds 1). One
# fixture per spin runs the whole time while windows alternate: no tool,
# profile --engine eventpipe, no tool, profile --engine eventpipe --async
# logical (ABAB...). Each tool window is compared with the no-tool window just
# before it; ROUNDS rounds, the median of the per-round costs is printed.
# SPINS: Price's spin in us: 2000 (CPU-bound: 4 awaits per 2 ms) and 20
# (await-bound: the TPL events' cost shows). The machine is shared and small:
# the figures are of one run.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
bench_setup
WIN=${WIN:-5}        # seconds measured per window
SETTLE=${SETTLE:-2}  # seconds after a tool starts / stops before measuring
ROUNDS=${ROUNDS:-3}
SPINS=${SPINS:-"2000 20"}

ops_between() { # FILE FROM TO -> average ops per round of lines FROM+1..TO
	awk -v a="$2" -v b="$3" 'NR > a && NR <= b && /^ROUND / { sub(/.*ops=/, ""); s += $0; n++ }
		END { printf "%.0f", n ? s / n : 0 }' "$1"
}

window() { # FIX_OUT: average ops per round over WIN seconds
	local a b
	a=$(wc -l <"$1")
	sleep "$WIN"
	b=$(wc -l <"$1")
	ops_between "$1" "$a" "$b"
}

tool_window() { # FIX_OUT LABEL CMD...: starts CMD, settles, measures, stops it
	local fo=$1 label=$2 tp v
	shift 2
	"$@" >"$out/tool-$label.out" 2>&1 &
	tp=$!
	sleep "$SETTLE"
	v=$(window "$fo")
	kill -INT "$tp" 2>/dev/null
	wait "$tp" 2>/dev/null
	echo "$v"
}

run_spin() {
	local s=$1 fx fo r base v
	fo=$out/fx-$s
	dotnet "$DLL" async-chain --spin-us "$s" --rounds 1 >"$fo" 2>&1 &
	fx=$!
	pids+=("$fx")
	wait_line "$fo" '^ROUND 8 ' 60 || { echo "fixture did not start" >&2; return 1; }
	for ((r = 1; r <= ROUNDS; r++)); do
		base=$(window "$fo")
		v=$(tool_window "$fo" ep "$CLRTAP" profile --engine eventpipe -p "$fx" -d 600 -o "$out/e.folded")
		echo "$s eventpipe $r $base $v" >>"$out/res"
		sleep "$SETTLE"
		base=$(window "$fo")
		v=$(tool_window "$fo" async "$CLRTAP" profile --engine eventpipe --async -p "$fx" -d 600 -o "$out/a.folded")
		echo "$s eventpipe+async $r $base $v" >>"$out/res"
		sleep "$SETTLE"
	done
	grep -h "^async:" "$out/tool-async.out" | sed 's/^/    last run: /'
	kill -TERM "$fx" 2>/dev/null
	wait "$fx" 2>/dev/null
}

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
for s in $SPINS; do
	run_spin "$s"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
echo "cost = 1 - tool/no-tool (Checkout calls per 250 ms), median of $ROUNDS rounds; per round: no-tool -> tool"
printf '%-6s %-16s %-8s %s\n' spin-us tool cost rounds
for s in $SPINS; do
	for tool in eventpipe eventpipe+async; do
		awk -v s="$s" -v tool="$tool" '
			function med(a, n,   i, j, x) {
				for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
				return n % 2 ? a[int(n / 2)] : (a[n / 2 - 1] + a[n / 2]) / 2 }
			$1 == s && $2 == tool { w[n] = $4 > 0 ? 1 - $5 / $4 : 0; sw = sw sprintf("%d->%d ", $4, $5); n++ }
			END { if (n) printf "%-6s %-16s %6.1f %%  %s\n", s, tool, 100 * med(w, n), sw }' "$out/res"
	done
done
