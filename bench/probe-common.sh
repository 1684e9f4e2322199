#!/usr/bin/env bash
# probe-common.sh: what bench-probe.sh and bench-rejit.sh share (sourced, not
# run; bench/run.sh runs bench-*.sh only): the probe-bench fixture (N calls
# of one method in a tight loop, timed inside the fixture with Stopwatch),
# starting and finishing a run, the clrtap and perf probe runs, the output
# rows. Before sourcing set ROOT and PERF_GROUP (perf probe's group name);
# CLRTAP and FIXTURE_DLL may be given in the environment.
# The fixture runs with DOTNET_TieredCompilation=0 so the framework method
# stays on its ReadyToRun code (with tiering it moves to JIT'd code after
# ~30 calls and a uprobe on the file stops firing; ReJIT does not care).
. "$ROOT/bench/lib.sh"
CLRTAP=${CLRTAP:-$ROOT/build/clrtap}
FIXTURE_DLL=${FIXTURE_DLL:-$ROOT/build/fixtures/sample/sample.dll}
WORK=$(mktemp -d /tmp/clrtap-bench-probe.XXXXXX)
FPID=""
TOOLPID=""
R2R='System.Convert::ToString(int32,int32)'
JIT='Clrtap.Fixtures.ProbeTargets::AddInts'

probe_cleanup() {
	[ -n "$TOOLPID" ] && kill -INT "$TOOLPID" 2>/dev/null
	[ -n "$FPID" ] && kill "$FPID" 2>/dev/null
	perf probe -q --del "$PERF_GROUP:*" >/dev/null 2>&1
	rm -rf "$WORK"
}
trap probe_cleanup EXIT

# start TARGET (framework|jit): the fixture, waiting for its trigger
start() {
	rm -f "$WORK/trig" "$WORK/fix.out"
	DOTNET_TieredCompilation=0 dotnet "$FIXTURE_DLL" probe-bench --calls "$CALLS" --target "$1" \
		--trigger "$WORK/trig" >"$WORK/fix.out" 2>&1 &
	FPID=$!
	wait_line "$WORK/fix.out" '^READY' 60 || { echo "fixture did not start" >&2; exit 1; }
}

# finish_run: triggers the calls, sets NS to the fixture's ns/call, stops
# the tool (Ctrl-C) and the fixture
finish_run() {
	touch "$WORK/trig"
	wait_line "$WORK/fix.out" '^DONE' 600 || { echo "fixture did not finish" >&2; exit 1; }
	NS=$(sed -n 's/.*ns_per_call=\([0-9.]*\).*/\1/p' "$WORK/fix.out")
	[ -n "$TOOLPID" ] && { kill -INT "$TOOLPID" 2>/dev/null; wait "$TOOLPID" 2>/dev/null; }
	TOOLPID=""
	kill "$FPID" 2>/dev/null
	wait "$FPID" 2>/dev/null
	local rc=$?
	[ "$rc" -ne 0 ] && [ "$rc" -ne 143 ] && { echo "fixture exit $rc:" >&2; tail -5 "$WORK/fix.out" >&2; }
	FPID=""
}

# clrtap_count METHOD NAME_IN_SUMMARY OUT: clrtap probe --count (uprobe on
# R2R code, hardware breakpoint on JIT code) over one run; sets NS and CALLS_SEEN.
# PROBE_ARGS: its options (default: the mechanism itself, never handed to
# ReJIT by the cost budget: --no-rejit --budget 1000)
clrtap_count() {
	# shellcheck disable=SC2086
	"$CLRTAP" probe -p "$FPID" --count ${PROBE_ARGS:---no-rejit --budget 1000} "$1" >"$3.out" 2>"$3.err" &
	TOOLPID=$!
	wait_line "$3.err" 'tracing' 30
	finish_run
	CALLS_SEEN=$(sed -n "s/.*$2: \([0-9]*\) calls.*/\1/p" "$3.err" | head -1)
}

# r2r_location: IMAGE and OFF of the R2R method's code (clrtap --emit perf)
r2r_location() {
	local emit
	emit=$("$CLRTAP" probe -p "$FPID" --emit perf "$R2R" 2>/dev/null | head -1)
	IMAGE=$(echo "$emit" | awk '{print $4}')
	OFF=$(echo "$emit" | awk '{print $6}')
}

# perf_uprobe: perf probe + perf record on IMAGE+OFF over one run of the
# started fixture; sets PERF_NS (n/a if perf cannot) and PERF_CALLS
perf_uprobe() {
	PERF_NS=n/a
	PERF_CALLS=""
	if command -v perf >/dev/null && [ -n "$IMAGE" ] &&
		perf probe -q -x "$IMAGE" --add "$PERF_GROUP:tostring=$OFF" >"$WORK/pp.log" 2>&1; then
		perf record -q -e "$PERF_GROUP:tostring" -p "$FPID" -o "$WORK/perf.data" >"$WORK/pr.log" 2>&1 &
		TOOLPID=$!
		sleep 2
		finish_run
		PERF_NS=$NS
		PERF_CALLS=$(perf script -i "$WORK/perf.data" -F event 2>/dev/null | grep -c .)
		perf probe -q --del "$PERF_GROUP:*" >/dev/null 2>&1
	else
		echo "perf probe unavailable: $(head -2 "$WORK/pp.log" 2>/dev/null)" >&2
		finish_run
	fi
}

# ratio A B: A/B as "N.Nx", n/a when either is missing
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || a == "" || b == "" || b == "n/a" || b <= 0) print "n/a"; else printf "%.1fx", a / b }'; }
# net A B: A-B, n/a when A is missing
net() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || a == "") print "n/a"; else printf "%.1f", a - b }'; }
row() { printf '%-50s %10s %10s  %s\n' "$@"; }
