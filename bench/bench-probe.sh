#!/usr/bin/env bash
# bench-probe.sh: cost per call of a probed .NET method (ns/call), measured
# inside the fixture (probe-bench mode: N calls in a tight loop, Stopwatch):
#   1. no probe                     (framework method and JIT'd method)
#   2. clrtap --count on R2R code    System.Convert::ToString(int,int), uprobe
#   3. clrtap --count on JIT code    ProbeTargets::AddInts, hardware breakpoint
#   4. perf probe + perf record      the same R2R file offset, the same uprobe
#   5. bpftrace uprobe               the same offset, if bpftrace accepts it
#   6. clrtap start to armed, with the mechanism self-test run vs cached
# The fixture runs with DOTNET_TieredCompilation=0 so the framework method
# stays on its ReadyToRun code (with tiering it moves to JIT'd code after
# ~30 calls and a uprobe on the file stops firing).
# Usage: bench/bench-probe.sh [CALLS]   (env CLRTAP, FIXTURE_DLL)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
CLRTAP=${CLRTAP:-$ROOT/build/clrtap}
FIXTURE_DLL=${FIXTURE_DLL:-$ROOT/build/fixtures/sample/sample.dll}
CALLS=${1:-200000}
WORK=$(mktemp -d /tmp/clrtap-bench-probe.XXXXXX)
FPID=""
TOOLPID=""

cleanup() {
	[ -n "$TOOLPID" ] && kill -INT "$TOOLPID" 2>/dev/null
	[ -n "$FPID" ] && kill "$FPID" 2>/dev/null
	perf probe -q --del 'clrtapbench:*' >/dev/null 2>&1
	rm -rf "$WORK"
}
trap cleanup EXIT

start() { # TARGET
	rm -f "$WORK/trig" "$WORK/fix.out"
	DOTNET_TieredCompilation=0 dotnet "$FIXTURE_DLL" probe-bench --calls "$CALLS" --target "$1" \
		--trigger "$WORK/trig" >"$WORK/fix.out" 2>&1 &
	FPID=$!
	wait_line "$WORK/fix.out" '^READY' 60 || { echo "fixture did not start" >&2; exit 1; }
}

finish_run() { # sets NS to the fixture's ns/call
	touch "$WORK/trig"
	wait_line "$WORK/fix.out" '^DONE' 600 || { echo "fixture did not finish" >&2; exit 1; }
	NS=$(sed -n 's/.*ns_per_call=\([0-9.]*\).*/\1/p' "$WORK/fix.out")
	[ -n "$TOOLPID" ] && { kill -INT "$TOOLPID" 2>/dev/null; wait "$TOOLPID" 2>/dev/null; }
	TOOLPID=""
	kill "$FPID" 2>/dev/null
	wait "$FPID" 2>/dev/null
	local rc=$?
	[ "$rc" -ne 0 ] && { echo "fixture exit $rc:" >&2; tail -5 "$WORK/fix.out" >&2; }
	FPID=""
}

row() { printf '%-44s %12s %10s  %s\n' "$@"; }

# 1. no probe
start framework
finish_run; BASE_R2R=$NS
start jit
finish_run; BASE_JIT=$NS

# 2. clrtap on R2R
start framework
"$CLRTAP" probe -p "$FPID" --count 'System.Convert::ToString(int32,int32)' >"$WORK/c1.out" 2>"$WORK/c1.err" &
TOOLPID=$!
wait_line "$WORK/c1.err" 'tracing' 30
finish_run; CLRTAP_R2R=$NS
C1=$(sed -n 's/.*ToString(int32, int32): \([0-9]*\) calls.*/\1/p' "$WORK/c1.err")

# 3. clrtap on JIT
start jit
"$CLRTAP" probe -p "$FPID" --count 'Clrtap.Fixtures.ProbeTargets::AddInts' >"$WORK/c2.out" 2>"$WORK/c2.err" &
TOOLPID=$!
wait_line "$WORK/c2.err" 'tracing' 30
finish_run; CLRTAP_JIT=$NS
C2=$(sed -n 's/.*AddInts(int32, int32): \([0-9]*\) calls.*/\1/p' "$WORK/c2.err")

# where the R2R code is (clrtap --emit perf gives the command)
start framework
EMIT=$("$CLRTAP" probe -p "$FPID" --emit perf 'System.Convert::ToString(int32,int32)' 2>/dev/null | head -1)
IMAGE=$(echo "$EMIT" | awk '{print $4}')
OFF=$(echo "$EMIT" | awk '{print $6}')

# 4. perf probe + perf record on the same offset
PERF_R2R=n/a
PC=""
if command -v perf >/dev/null && [ -n "$IMAGE" ] &&
	perf probe -q -x "$IMAGE" --add "clrtapbench:tostring=$OFF" >"$WORK/pp.log" 2>&1; then
	perf record -q -e clrtapbench:tostring -p "$FPID" -o "$WORK/perf.data" >"$WORK/pr.log" 2>&1 &
	TOOLPID=$!
	sleep 2
	finish_run; PERF_R2R=$NS
	PC=$(perf script -i "$WORK/perf.data" -F event 2>/dev/null | grep -c .)
	perf probe -q --del 'clrtapbench:*' >/dev/null 2>&1
else
	echo "perf probe failed: $(head -3 "$WORK/pp.log" 2>/dev/null)" >&2
	finish_run
fi

# 5. bpftrace
BPF_R2R=n/a
BC=""
if command -v bpftrace >/dev/null && [ -n "$IMAGE" ]; then
	start framework
	ulimit -l unlimited 2>/dev/null
	bpftrace -e "uprobe:$IMAGE:$OFF /pid == $FPID/ { @calls = count(); }" >"$WORK/bt.out" 2>&1 &
	TOOLPID=$!
	if wait_line "$WORK/bt.out" 'Attaching' 30 && sleep 2 && kill -0 "$TOOLPID" 2>/dev/null; then
		finish_run; BPF_R2R=$NS
		sleep 0.5
		BC=$(sed -n 's/^@calls: \([0-9]*\).*/\1/p' "$WORK/bt.out")
	else
		echo "bpftrace failed: $(head -3 "$WORK/bt.out")" >&2
		kill "$TOOLPID" 2>/dev/null
		TOOLPID=""
		finish_run
	fi
fi

# 6. time to armed: the mechanism self-test (first run this boot) vs its cached answer
ms_to_tracing() { # CACHE_DIR -> ms from start to the 'tracing' line
	local t0 t1
	t0=$(date +%s%N)
	CLRTAP_CACHE_DIR=$1 "$CLRTAP" probe -p "$FPID" --count 'Clrtap.Fixtures.ProbeTargets::AddInts' \
		>/dev/null 2>"$WORK/m.err" &
	TOOLPID=$!
	wait_line "$WORK/m.err" 'tracing' 30
	t1=$(date +%s%N)
	kill -INT "$TOOLPID" 2>/dev/null
	wait "$TOOLPID" 2>/dev/null
	TOOLPID=""
	echo $(((t1 - t0) / 1000000))
}
start jit
FRESH=() CACHED=()
for i in 1 2 3; do
	rm -rf "$WORK/mc"
	FRESH+=("$(ms_to_tracing "$WORK/mc")")
	CACHED+=("$(ms_to_tracing "$WORK/mc")")
done
finish_run

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "" || b == 0) print "n/a"; else printf "%.2fx", a / b }'; }
echo "probe cost per call, $CALLS calls each ($(uname -r), $(nproc) CPUs); R2R target $IMAGE+$OFF"
row "case" "ns/call" "vs clrtap" "calls seen"
row "no probe: Convert.ToString via CallFramework" "$BASE_R2R" "" ""
row "no probe: AddInts (JIT)" "$BASE_JIT" "" ""
row "clrtap, R2R (uprobe)" "$CLRTAP_R2R" "1.00x" "${C1:-?}"
row "clrtap, JIT (hw breakpoint)" "$CLRTAP_JIT" "$(ratio "$CLRTAP_JIT" "$CLRTAP_R2R")" "${C2:-?}"
row "perf probe + perf record, same offset" "$PERF_R2R" "$(ratio "$PERF_R2R" "$CLRTAP_R2R")" "${PC:-?}"
row "bpftrace uprobe, same offset" "$BPF_R2R" "$(ratio "$BPF_R2R" "$CLRTAP_R2R")" "${BC:-?}"
echo "start to armed (ms, 3 runs): self-test run ${FRESH[*]}; cached this boot ${CACHED[*]}"
