#!/usr/bin/env bash
# bench-rejit.sh: cost per call of a probed .NET method, one run, side by
# side, measured inside the fixture (probe-bench mode: N calls in a tight
# loop, Stopwatch, ns/call):
#   1. no probe                                   (R2R framework method, JIT'd method)
#      and the JIT'd method after the profiler attached and detached again
#   2. clrtap agent probe (ReJIT, count only)     both methods
#   3. clrtap agent probe --args (ReJIT, args + return + latency, one event per call)
#      and --args --stack (the same event with the managed stack EventPipe walks)
#   4. clrtap probe --count (uprobe on R2R code)  the framework method
#   5. clrtap probe --count (hw breakpoint)       the JIT'd method
#      and clrtap probe --count with its defaults: the cost budget hands the
#      hot method over to ReJIT (what a user who runs the README's example gets)
#   6. perf probe + perf record (uprobe)          the R2R method's file offset
# Then the added cost per call of each mechanism as ratios to ReJIT's, the
# time from starting `clrtap agent probe` to the probe being in place (the
# next call is counted), and the target's RSS before attach and with the
# profiler attached and probing.
# Shared setup: bench/probe-common.sh.
# Usage: bench/bench-rejit.sh [CALLS]   (env CLRTAP, FIXTURE_DLL)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PERF_GROUP=clrtaprj
CALLS=${1:-2000000}
. "$ROOT/bench/probe-common.sh"

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$FPID/status"; }

agent_probe() { # METHOD OUT: starts clrtap agent probe, waits until the probe is in place
	local s e i
	s=$(date +%s%N)
	# shellcheck disable=SC2086
	"$CLRTAP" agent probe -p "$FPID" ${AGENT_ARGS:-} "$1" --json >"$2" 2>"$2.err" &
	TOOLPID=$!
	for ((i = 0; i < 300; i++)); do
		"$CLRTAP" agent status -p "$FPID" --json 2>/dev/null | grep -q '"state":"active"' && break
		sleep 0.05
	done
	e=$(date +%s%N)
	READY_MS=$(((e - s) / 1000000))
}

calls_in() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(p["calls"] for p in d["probes"]))' "$1" 2>/dev/null; }

# 1. no probe
start framework; finish_run; BASE_R2R=$NS
start jit; finish_run; BASE_JIT=$NS

# 1b. the same after the profiler attached and detached (agent run, no probe)
start jit
"$CLRTAP" agent run -p "$FPID" -d 1 >"$WORK/det.out" 2>&1
DETACHED=$(grep -c '^detached:' "$WORK/det.out")
finish_run; AFTER_DETACH=$NS

# 2. ReJIT count-only
start framework
RSS0=$(rss_kb)
agent_probe "$R2R" "$WORK/r1.json"
READY1=$READY_MS
RSS1=$(rss_kb)
finish_run; RJ_R2R=$NS; C1=$(calls_in "$WORK/r1.json")
start jit
agent_probe "$JIT" "$WORK/r2.json"
READY2=$READY_MS
finish_run; RJ_JIT=$NS; C2=$(calls_in "$WORK/r2.json")

# 3. ReJIT with arguments (one Call event per call; the tool reads them all)
start jit
AGENT_ARGS=--args agent_probe "$JIT" "$WORK/r3.json"
finish_run; RJA_JIT=$NS
C4=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("calls_recorded","?"))' "$WORK/r3.json" 2>/dev/null)

# 3b. ReJIT with arguments and stacks
start jit
AGENT_ARGS="--args --stack" agent_probe "$JIT" "$WORK/r4.json"
finish_run; RJS_JIT=$NS
C6=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("calls_recorded","?"))' "$WORK/r4.json" 2>/dev/null)

# 4. clrtap's uprobe on the R2R code, 5. its hardware breakpoint on the JIT code
start framework; clrtap_count "$R2R" 'ToString(int32, int32)' "$WORK/u"; UP_R2R=$NS; C3=$CALLS_SEEN
start jit; clrtap_count "$JIT" 'AddInts(int32, int32)' "$WORK/h"; HW_JIT=$NS; C5=$CALLS_SEEN
# 5b. clrtap probe --count with its defaults (budget 5%: handed to ReJIT)
start jit
PROBE_ARGS=" " clrtap_count "$JIT" 'AddInts(int32, int32)' "$WORK/d"; DEF_JIT=$NS
C7=$(sed -n 's/.*AddInts(int32, int32): \([0-9]*\) calls in all.*/\1/p' "$WORK/d.err" | head -1)
DEF_HOW=$(grep -q 'handed to ReJIT' "$WORK/d.err" && echo "handed to ReJIT" || echo "not handed over")

# 6. perf probe + perf record, same offset
start framework
r2r_location
perf_uprobe; PERF_R2R=$PERF_NS; PC=$PERF_CALLS

echo "probe cost per call, $CALLS calls each ($(uname -r), $(nproc) CPUs)"
row "case" "ns/call" "added ns" "calls counted"
row "no probe: CallFramework -> Convert.ToString (R2R)" "$BASE_R2R" "" ""
row "no probe: AddInts (JIT)" "$BASE_JIT" "" ""
row "AddInts after attach + detach (agent run)" "$AFTER_DETACH" "$(net "$AFTER_DETACH" "$BASE_JIT")" "$([ "$DETACHED" = 1 ] && echo 'detach confirmed' || echo 'detach NOT confirmed')"
row "ReJIT count-only, Convert.ToString (R2R)" "$RJ_R2R" "$(net "$RJ_R2R" "$BASE_R2R")" "${C1:-?}"
row "ReJIT count-only, AddInts (JIT)" "$RJ_JIT" "$(net "$RJ_JIT" "$BASE_JIT")" "${C2:-?}"
row "ReJIT with args+return+latency, AddInts (JIT)" "$RJA_JIT" "$(net "$RJA_JIT" "$BASE_JIT")" "${C4:-?} recorded"
row "ReJIT with args+return+latency+stack, AddInts" "$RJS_JIT" "$(net "$RJS_JIT" "$BASE_JIT")" "${C6:-?} recorded"
row "clrtap probe --count (uprobe), Convert.ToString" "$UP_R2R" "$(net "$UP_R2R" "$BASE_R2R")" "${C3:-?}"
row "clrtap probe --count (hw breakpoint), AddInts" "$HW_JIT" "$(net "$HW_JIT" "$BASE_JIT")" "${C5:-?}"
row "clrtap probe --count, defaults (budget), AddInts" "$DEF_JIT" "$(net "$DEF_JIT" "$BASE_JIT")" "${C7:-?} ($DEF_HOW)"
row "perf probe + perf record (uprobe), same offset" "$PERF_R2R" "$(net "$PERF_R2R" "$BASE_R2R")" "${PC:-?}"
# The ReJIT row on the R2R method compares fresh optimized JIT code with the
# ReadyToRun code it replaces (it can even be faster), so ReJIT's own cost is
# read on the JIT'd method, where the code is the same with and without.
A1=$(net "$RJ_JIT" "$BASE_JIT"); A2=$(net "$UP_R2R" "$BASE_R2R"); A3=$(net "$PERF_R2R" "$BASE_R2R")
A4=$(net "$HW_JIT" "$BASE_JIT"); A5=$(net "$RJA_JIT" "$BASE_JIT"); A6=$(net "$RJS_JIT" "$BASE_JIT")
echo "added cost per call: ReJIT count-only ${A1} ns, ReJIT with args ${A5} ns, ReJIT with args and stack ${A6} ns, clrtap uprobe ${A2} ns, clrtap hw breakpoint ${A4} ns, perf uprobe ${A3} ns"
echo "ratios to ReJIT count-only: clrtap uprobe $(ratio "$A2" "$A1"), clrtap hw breakpoint $(ratio "$A4" "$A1"), perf uprobe $(ratio "$A3" "$A1"), ReJIT with args $(ratio "$A5" "$A1")"
echo "note: the R2R ReJIT row runs freshly JIT-optimized code instead of ReadyToRun code"
echo "time from 'clrtap agent probe' to the probe in place: ${READY1} ms (R2R), ${READY2} ms (JIT)"
echo "target RSS: ${RSS0} kB before attach, ${RSS1} kB attached and probing (+$((RSS1 - RSS0)) kB)"
