#!/usr/bin/env bash
# bench-probe.sh: cost per call of a probed .NET method (ns/call), measured
# inside the fixture (probe-bench mode: N calls in a tight loop, Stopwatch):
#   1. no probe                     (framework method and JIT'd method)
#   2. clrtap --count on R2R code    System.Convert::ToString(int,int), uprobe
#   3. clrtap --count on JIT code    ProbeTargets::AddInts, hardware breakpoint
#   4. perf probe + perf record      the same R2R file offset, the same uprobe
#   5. bpftrace uprobe               the same offset, if bpftrace accepts it
#   6. clrtap start to armed, with the mechanism self-test run vs cached
# Shared setup: bench/probe-common.sh.
# Usage: bench/bench-probe.sh [CALLS]   (env CLRTAP, FIXTURE_DLL)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PERF_GROUP=clrtapbench
CALLS=${1:-200000}
. "$ROOT/bench/probe-common.sh"

# 1. no probe
start framework; finish_run; BASE_R2R=$NS
start jit; finish_run; BASE_JIT=$NS

# 2. clrtap on R2R (uprobe), 3. clrtap on JIT (hardware breakpoint)
start framework; clrtap_count "$R2R" 'ToString(int32, int32)' "$WORK/c1"; CLRTAP_R2R=$NS; C1=$CALLS_SEEN
start jit; clrtap_count "$JIT" 'AddInts(int32, int32)' "$WORK/c2"; CLRTAP_JIT=$NS; C2=$CALLS_SEEN

# 4. perf probe + perf record on the same offset
start framework
r2r_location
perf_uprobe; PERF_R2R=$PERF_NS; PC=$PERF_CALLS

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

echo "probe cost per call, $CALLS calls each ($(uname -r), $(nproc) CPUs); R2R target $IMAGE+$OFF"
row "case" "ns/call" "vs clrtap" "calls seen"
row "no probe: Convert.ToString via CallFramework" "$BASE_R2R" "" ""
row "no probe: AddInts (JIT)" "$BASE_JIT" "" ""
row "clrtap, R2R (uprobe)" "$CLRTAP_R2R" "1.00x" "${C1:-?}"
row "clrtap, JIT (hw breakpoint)" "$CLRTAP_JIT" "$(ratio "$CLRTAP_JIT" "$CLRTAP_R2R")" "${C2:-?}"
row "perf probe + perf record, same offset" "$PERF_R2R" "$(ratio "$PERF_R2R" "$CLRTAP_R2R")" "${PC:-?}"
row "bpftrace uprobe, same offset" "$BPF_R2R" "$(ratio "$BPF_R2R" "$CLRTAP_R2R")" "${BC:-?}"
echo "start to armed (ms, 3 runs): self-test run ${FRESH[*]}; cached this boot ${CACHED[*]}"
