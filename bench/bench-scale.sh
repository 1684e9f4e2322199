#!/usr/bin/env bash
# clrtap profile at scale (issue 16), before and after, side by side with
# perf record + perf script + FlameGraph:
#  (a) `profile -F 999 -d 5` on `sample many-threads` with 10, 100 and 500
#      busy threads: wall time and clrtap's own "processing" line, for the
#      clrtap built from BEFORE (default: main at 814e1b2, built in a temp
#      dir) and this tree's;
#  (b) the ASP.NET fixture (`web`) under curl load, 20 s at 99 Hz: clrtap
#      with a cold and then a warm symbol cache (its "processing": samples to
#      flame graph), beside perf record -g for the same 20 s followed by
#      perf script | stackcollapse-perf.pl | flamegraph.pl (FlameGraph from
#      FLAMEGRAPH=DIR, which must hold the two scripts; not committed);
#      unnamed frames of each;
#  (c) `probe` of an R2R method on the 500-thread target: attach and detach
#      times (from the "tracing" line and the exit).
# The harness runs at SCHED_FIFO (else a shell waits behind the busy target
# as long as the tools do); every tool (clrtap, perf, the FlameGraph scripts)
# is started at SCHED_OTHER. Figures are of one run on a shared machine.
# SKIP_A=1 leaves (a) out.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
CLRTAP=${CLRTAP:-$ROOT/build/clrtap}
DLL=$ROOT/build/fixtures/sample/sample.dll
BEFORE_REV=${BEFORE_REV:-814e1b2}
FLAMEGRAPH=${FLAMEGRAPH:-}
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
	echo "bench-scale: needs root (perf, SCHED_FIFO)"
	exit 0
fi

# rt OUTPREFIX CMD...: runs CMD at SCHED_OTHER; OUTPREFIX.out gets its output,
# OUTPREFIX.t "elapsed" and the arrival time of lines matching TRACE_LINE.
cat >"$out/rt.py" <<'EOF'
import os, re, subprocess, sys, time
pre, args = sys.argv[1], sys.argv[2:]
pat = re.compile(os.environ.get("TRACE_LINE", "^$^"))
t0 = time.monotonic()
p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                     preexec_fn=lambda: os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0)))
marks = []
with open(pre + ".out", "w") as f:
    for raw in p.stdout:
        line = raw.decode(errors="replace")
        f.write(line)
        if pat.search(line):
            marks.append(time.monotonic() - t0)
rc = p.wait()
with open(pre + ".t", "w") as f:
    f.write("elapsed %.3f rc %d marks %s\n" % (time.monotonic() - t0, rc, " ".join("%.3f" % m for m in marks)))
EOF
rt() { python3 "$out/rt.py" "$@"; }

# the clrtap of BEFORE_REV
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

start_many() { # N: starts many-threads with N threads (at SCHED_OTHER)
	chrt -o 0 dotnet "$DLL" many-threads --threads "$1" >"$out/fx" 2>&1 &
	fx=$!
	pids+=("$fx")
	wait_line "$out/fx" '^STARTED' 120 || { echo "fixture did not start" >&2; return 1; }
	sleep 2
}

chrt -f -p 1 $$ >/dev/null || echo "note: the harness could not take SCHED_FIFO: its own delays are in the figures"

[ -n "${SKIP_A:-}" ] || {
echo "== (a) profile -F 999 -d 5 on 'sample many-threads' (each thread: ~2 ms of CPU, then 5 ms asleep)"
printf '  %-7s %-7s %10s %12s %9s %8s  %s\n' threads build "wall s" "processing" samples threads events
for n in 10 100 500; do
	start_many "$n" || continue
	for which in before after; do
		bin=$CLRTAP
		[ "$which" = before ] && bin=$BEFORE
		[ -n "$bin" ] || continue
		rt "$out/a-$n-$which" timeout 600 "$bin" profile -p "$fx" -F 999 -d 5 -o "$out/a.folded"
		w=$(awk '{ print $2 }' "$out/a-$n-$which.t")
		pr=$(sed -n 's/^processing: \([0-9]*\) ms.*/\1 ms/p' "$out/a-$n-$which.out")
		sm=$(sed -n 's/^samples: \([0-9]*\) at .* from \([0-9]*\) threads/\1 \2/p' "$out/a-$n-$which.out")
		ev=$(sed -n 's/^events: \([0-9]*\).*/\1/p' "$out/a-$n-$which.out")
		printf '  %-7s %-7s %10s %12s %9s %8s  %s\n' "$n" "$which" "$w" "${pr:-?}" \
			"${sm% *}" "${sm#* }" "${ev:-(one per thread and CPU)}"
	done
	kill -TERM "$fx"
	wait "$fx" 2>/dev/null
done
}

echo
echo "== (b) web fixture under curl load, 20 s at 99 Hz: samples -> flame graph"
port=$((20000 + RANDOM % 20000))
chrt -o 0 dotnet "$DLL" web --port "$port" >"$out/web" 2>&1 &
web=$!
pids+=("$web")
wait_line "$out/web" '^READY' 60
load() {
	local routes=("api/fibonacci?pos=30" "api/echo?echo=hello" "api/on-cpu" "api/exception/3" "healthz")
	while :; do
		for r in "${routes[@]}"; do curl -s "http://127.0.0.1:$port/$r" >/dev/null; done
	done
}
chrt -o 0 bash -c "$(declare -f load); port=$port; load" &
l1=$!
chrt -o 0 bash -c "$(declare -f load); port=$port; load" &
l2=$!
pids+=("$l1" "$l2")
sleep 3
cache=$out/symcache
for run in cold warm; do
	CLRTAP_CACHE_DIR=$cache rt "$out/b-$run" "$CLRTAP" profile -p "$web" -F 99 -d 20 -o "$out/b-$run.folded"
	pr=$(sed -n 's/^processing: \([0-9]*\) ms.*/\1/p' "$out/b-$run.out")
	un=$(sed -n 's/^unnamed frames: \(.*\)/\1/p' "$out/b-$run.out")
	sm=$(sed -n 's/^samples: \([0-9]*\).*/\1/p' "$out/b-$run.out")
	echo "  clrtap ($run symbol cache): $sm samples, processing ${pr} ms, unnamed frames $un"
	eval "proc_$run=$pr"
done
chrt -o 0 perf record -q -F 99 -g -p "$web" -o "$out/perf.data" -- sleep 20 >/dev/null 2>&1
s=$(date +%s%N)
chrt -o 0 perf script -i "$out/perf.data" >"$out/perf.txt" 2>/dev/null
m=$(date +%s%N)
if [ -n "$FLAMEGRAPH" ] && [ -x "$FLAMEGRAPH/stackcollapse-perf.pl" ]; then
	chrt -o 0 "$FLAMEGRAPH/stackcollapse-perf.pl" "$out/perf.txt" >"$out/perf.folded"
	chrt -o 0 "$FLAMEGRAPH/flamegraph.pl" "$out/perf.folded" >"$out/perf.svg"
	how="perf script | stackcollapse-perf.pl | flamegraph.pl"
else
	awk '/^[^ \t]/ { if (st != "") print st; st = ""; next }
	     /^[ \t]+[0-9a-f]+ / { f = $0; sub(/^[ \t]+[0-9a-f]+ /, "", f); sub(/ \(.*\)$/, "", f); st = (st == "") ? f : f ";" st; next }
	     END { if (st != "") print st }' "$out/perf.txt" | sort | uniq -c | awk '{ c = $1; $1 = ""; print substr($0, 2), c }' >"$out/perf.folded"
	how="perf script + awk fold (no FLAMEGRAPH=DIR given: no SVG step)"
fi
e=$(date +%s%N)
kill "$l1" "$l2" 2>/dev/null
ptotal=$(((e - s) / 1000000))
# (stackcollapse-perf.pl weighs a stack by its period: shares, not counts)
psamples=$(grep -c '^[^ \t]' "$out/perf.txt")
punk=$(awk '{ w = $NF; l = $0; sub(/ [0-9]+$/, "", l); n = split(l, a, ";"); t += n * w
	for (i = 1; i <= n; i++) if (a[i] ~ /^\[.*\]$/) u += w } END { printf "%.2f %%", t ? 100 * u / t : 0 }' "$out/perf.folded")
echo "  perf: $psamples samples; perf script $(((m - s) / 1000000)) ms + folding/rendering $(((e - m) / 1000000)) ms = $ptotal ms ($how); unnamed frames ([unknown], [module]): $punk"
awk -v c="${proc_warm:-0}" -v k="${proc_cold:-0}" -v p="$ptotal" 'BEGIN {
	if (k > 0) printf "  ratio perf pipeline / clrtap, cold cache: %.1fx\n", p / k
	if (c > 0) printf "  ratio perf pipeline / clrtap, warm cache: %.1fx (goal: >= 20x)\n", p / c }'

echo
echo "== (c) probe of an R2R method (System.Threading.Thread::Sleep(int32)) on 500 threads, -d 3"
start_many 500 && {
	TRACE_LINE="tracing [0-9]+ method" rt "$out/c" timeout 600 "$CLRTAP" probe -p "$fx" -d 3 --count \
		'System.Threading.Thread::Sleep(int32)'
	read -r _ el _ rc _ attach _ <"$out/c.t"
	echo "  exit $rc after $el s; attached (the 'tracing' line) at ${attach:-?} s; detach and report: $(awk -v e="$el" -v a="${attach:-0}" 'BEGIN { printf "%.2f", e - a - 3 }') s"
	grep -E 'uprobe|hw-breakpoint|calls' "$out/c.out" | head -6 | sed 's/^/    /'
}
