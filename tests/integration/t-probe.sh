#!/usr/bin/env bash
# clrtap probe on the fixture's probe targets: ReadyToRun framework code
# (uprobe), the fixture's JIT'd methods (hardware breakpoints), exact argument
# and return values from the TRUTH lines, listing, emitting, bad input.
. "$(dirname "$0")/lib.sh"

N=25

# Do hardware execute breakpoints fire here? (own check, no clrtap code.) Where
# they do not, clrtap must say so for JIT'd methods instead of counting 0.
HWBP=$("$TOOLS/hwbpcheck")
echo "    this machine: hardware execute breakpoints: $HWBP"
fires() { [[ $HWBP == fires* ]]; }
# how clrtap names its own proof: its self-test counted, or the kernel refused
SAID="(self-test: "
[[ $HWBP == refused* ]] && SAID="(perf_event_open refused it: "
# unseen LABEL ERRFILE: clrtap said plainly it cannot watch the JIT'd method
unseen() {
	contains "$1: breakpoints do not fire here, said so" "$(cat "$2")" \
		"hardware execute breakpoints do not fire on this machine $SAID"
	contains "$1: not traced (no false 0)" "$(cat "$2")" "NOT traced"
}

# probe_bg NAME ARGS...: starts clrtap probe on $FIX_PID in the background;
# output in $WORK/NAME.out / .err, pid in PROBE_PIDS.
PROBE_PIDS=()
probe_bg() {
	local name=$1
	shift
	"$CLRTAP" probe -p "$FIX_PID" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
	PROBE_PIDS+=($!)
	# armed once it says so
	wait_for_line "$WORK/$name.err" 'tracing|waiting' 20 $! >/dev/null || true
}

# run_probes TRIGGER: starts the workload and waits for the probes (-d) to end.
run_probes() {
	local p
	touch "$1"
	wait_for_line "$FIX_OUT" '^DONE ' 60 "$FIX_PID" >/dev/null
	for p in "${PROBE_PIDS[@]}"; do wait "$p"; done
	PROBE_PIDS=()
}

# expected lines for i = 0 .. N-1
expect_each() {
	local label=$1 file=$2 fmt=$3 i miss=0 line
	for ((i = 0; i < N; i++)); do
		# shellcheck disable=SC2059
		if [[ "$fmt" == *%d*%d* ]]; then
			line=$(printf "$fmt" "$i" "$((i + 1000))")
		else
			line=$(printf "$fmt" "$i")
		fi
		grep -qF -- "$line" "$file" || { miss=$((miss + 1)); [ $miss -eq 1 ] && echo "    first missing: $line"; }
	done
	equals "$label: all $N calls with exact values" "$miss" 0
}

# ---- A: R2R framework method + JIT'd static method with two ints ----
start_fixture probe-warm --calls "$N" --interval-ms 2 --trigger "$WORK/trig-a"
probe_bg r2r -d 4 --ret --latency 'System.Convert::ToString(int,int)'
probe_bg addints -d 4 --ret --stack 'Clrtap.Fixtures.ProbeTargets::AddInts'
probe_bg r2rjson -d 4 --json --args 'System.Convert::ToString(int,int)'
run_probes "$WORK/trig-a"
# --json: the task's result (docs/tasks/probe.md), one record per call with the arguments split
RJ=$(cat "$WORK/r2rjson.out")
equals "r2r --json: method, mechanism, counts" \
	"$(json_get "$RJ" '(d["task"], d["methods"][0]["name"], d["mechanism"], d["methods"][0]["calls"], d["calls_total"], d["calls_shown"], d["partial"])')" \
	"('probe', 'System.Convert::ToString', 'uprobe', $N, $N, $N, False)"
equals "r2r --json: every record's arguments exact, by name and type" \
	"$(json_get "$RJ" 'sorted(int(c["args"][0]["value"]) for c in d["calls"] if c["method"] == "System.Convert::ToString" and [(a["name"], a["type"]) for a in c["args"]] == [("value", "int32"), ("toBase", "int32")] and c["args"][1]["value"] == "16") == list(range('"$N"'))')" True
R2R=$(cat "$WORK/r2r.out")
contains "r2r: attached by uprobe to CoreLib's R2R code" "$(cat "$WORK/r2r.err")" \
	"[ReadyToRun] at System.Private.CoreLib.dll+0x"
contains "r2r: uprobe" "$(cat "$WORK/r2r.err")" "uprobe on entry"
equals "r2r: one line per call" "$(grep -c 'System.Convert::ToString(value=' "$WORK/r2r.out")" "$N"
contains "r2r: summary count" "$(cat "$WORK/r2r.err")" "System.Convert::ToString(int32, int32): $N calls"
expect_each "r2r args" "$WORK/r2r.out" 'System.Convert::ToString(value=%d, toBase=16)'
# returns are seen at the caller's return address (the method tail-calls)
if fires; then
contains "r2r: return site learned" "$(cat "$WORK/r2r.err")" "return site"
contains "r2r: hex return value" "$R2R" 'ToString(value=20, toBase=16) = "14"'
contains "r2r: hex return value a" "$R2R" 'ToString(value=10, toBase=16) = "a"'
else
	# the caller (the fixture's driver) is JIT'd code: its return site cannot be watched
	contains "r2r: unseen returns said" "$(cat "$WORK/r2r.err")" "which clrtap cannot watch on this machine: those returns are not seen"
fi
if fires; then
equals "addints: $N lines" "$(grep -c 'AddInts(a=' "$WORK/addints.out")" "$N"
expect_each "addints args+ret" "$WORK/addints.out" 'ProbeTargets::AddInts(a=%d, b=1000) = %d '
contains "addints: JIT code by hw breakpoint" "$(cat "$WORK/addints.err")" "hw-breakpoint on entry, 1 of 1 ret site(s)"
# --stack: every call's caller is the fixture's driver loop, named from the perf map
equals "addints --stack: caller named on every call" \
	"$(grep -c '^    at Clrtap.Fixtures.ProbeDriver::Run\( \|$\)' "$WORK/addints.out")" "$N"
else
	unseen addints "$WORK/addints.err"
fi
lacks "fixture saw right results" "$(cat "$FIX_OUT")" "unexpected result"
stop_fixture "$FIX_PID"

if fires; then
# ---- B: long, double, bool, char, byte, short, float; instance method ----
start_fixture probe-warm --calls "$N" --interval-ms 2 --trigger "$WORK/trig-b"
# hardware breakpoints: 4 per thread for all sessions: Mix takes 3 (entry, the
# instruction after the prolog stored xmm0/xmm1, ret), Increment 1 (entry)
probe_bg mix -d 4 --ret 'Clrtap.Fixtures.ProbeTargets::Mix'
probe_bg inchist -d 4 --count --hist by 'Clrtap.Fixtures.Counter::Increment(int32)'
run_probes "$WORK/trig-b"
MIX=$(cat "$WORK/mix.out")
equals "mix: $N lines" "$(grep -c 'Mix(l=' "$WORK/mix.out")" "$N"
for i in 0 1 2 24; do
	b=false; r=$((1234567889519 + i))
	if ((i % 2 == 0)); then b=true; r=$((r + 1)); fi
	contains "mix i=$i exact" "$MIX" \
		"Mix(l=$((1234567890123 + i)), d=3.25, b=$b, c='Z', u8=200, s16=-1234, f=1.5) = $r "
done
contains "mix: floats read after the prolog" "$(cat "$WORK/mix.err")" "float arguments read where the prolog stores them"
contains "increment: histogram of by" "$(cat "$WORK/inchist.out")" "count $N, min 7, max 7"
contains "increment: --count summary" "$(cat "$WORK/inchist.err")" "Counter::Increment(int32): $N calls"
stop_fixture "$FIX_PID"

# ---- D: instance method with a running total, overload by signature, nested type ----
start_fixture probe-warm --calls "$N" --interval-ms 2 --trigger "$WORK/trig-d"
probe_bg inc -d 4 --ret 'Clrtap.Fixtures.Counter::Increment'
probe_bg ovl -d 4 --count 'Clrtap.Fixtures.ProbeTargets::Overloaded(string)'
probe_bg nested -d 4 --hist x 'Clrtap.Fixtures.Outer+Inner::Nested'
run_probes "$WORK/trig-d"
INC=$(cat "$WORK/inc.out")
contains "increment: this is an address" "$INC" "Counter::Increment(this=0x"
contains "increment: first ret" "$INC" "by=7) = 7 "
contains "increment: last ret" "$INC" "by=7) = $((7 * N)) "
contains "overload by signature, counted" "$(cat "$WORK/ovl.err")" \
	"Clrtap.Fixtures.ProbeTargets::Overloaded(string): $N calls"
equals "--count prints no call lines" "$(wc -l <"$WORK/ovl.out")" 0
equals "nested: $N lines" "$(grep -c 'Clrtap.Fixtures.Outer+Inner::Nested(x=5)' "$WORK/nested.out")" "$N"
contains "nested: histogram" "$(cat "$WORK/nested.out")" "count $N, min 5, max 5"
stop_fixture "$FIX_PID"

fi

# ---- E: a name with overloads traces all of them, saying which ----
if fires; then
start_fixture probe-warm --calls "$N" --interval-ms 2 --trigger "$WORK/trig-e"
probe_bg ovlall -d 4 --count 'Clrtap.Fixtures.ProbeTargets::Overloaded'
run_probes "$WORK/trig-e"
OV=$(cat "$WORK/ovlall.err")
contains "overloads: one line says which" "$OV" \
	"'Clrtap.Fixtures.ProbeTargets::Overloaded' matches 2 methods, tracing all: 'Clrtap.Fixtures.ProbeTargets::Overloaded(int32)', 'Clrtap.Fixtures.ProbeTargets::Overloaded(string)' (add '(signature)' to pick one)"
contains "overloads: int32 counted" "$OV" "ProbeTargets::Overloaded(int32): $N calls"
contains "overloads: string counted" "$OV" "ProbeTargets::Overloaded(string): $N calls"
stop_fixture "$FIX_PID"
else
start_fixture probe-warm --calls "$N" --interval-ms 2 --trigger "$WORK/trig-e"
expect_exit "overloads: JIT-only methods, breakpoints do not fire" 1 \
	"$CLRTAP" probe -p "$FIX_PID" -d 1 --count 'Clrtap.Fixtures.ProbeTargets::Overloaded'
contains "overloads: one line says which" "$ERR" \
	"'Clrtap.Fixtures.ProbeTargets::Overloaded' matches 2 methods, tracing all: 'Clrtap.Fixtures.ProbeTargets::Overloaded(int32)', 'Clrtap.Fixtures.ProbeTargets::Overloaded(string)' (add '(signature)' to pick one)"
contains "overloads: int32 not traced, said" "$ERR" "ProbeTargets::Overloaded(int32): NOT traced"
contains "overloads: string not traced, said" "$ERR" "ProbeTargets::Overloaded(string): NOT traced"
lacks "overloads: no false 0" "$ERR" " 0 calls"
stop_fixture "$FIX_PID"
fi

# ---- C: strings (non-ASCII), instance + static, overloads, nested type ----
start_fixture probe-warm --calls "$N" --interval-ms 2 --trigger "$WORK/trig-c"
if fires; then
probe_bg echo -d 4 --ret 'Clrtap.Fixtures.ProbeTargets::StaticEcho'
probe_bg greet -d 4 --ret '*::Greet'
run_probes "$WORK/trig-c"
equals "echo: $N exact lines" \
	"$(grep -cF 'StaticEcho(s="héllo wörld ✓") = "héllo wörld ✓"' "$WORK/echo.out")" "$N"
equals "greet: $N exact lines" \
	"$(grep -cF 'name="Zoë") = "Hello, Zoë"' "$WORK/greet.out")" "$N"
contains "greet: instance (this)" "$(cat "$WORK/greet.out")" "Greet(this=0x"

else
	expect_exit "echo: JIT-only method, breakpoints do not fire" 1 \
		"$CLRTAP" probe -p "$FIX_PID" -d 1 'Clrtap.Fixtures.ProbeTargets::StaticEcho'
	echo "$ERR" >"$WORK/echo.err"
	unseen echo "$WORK/echo.err"
	touch "$WORK/trig-c"
	wait_for_line "$FIX_OUT" '^DONE ' 60 "$FIX_PID" >/dev/null
fi

# resolution and bad input (same process, compiled targets)
expect_exit "unknown method" 1 "$CLRTAP" probe -p "$FIX_PID" -d 1 'Clrtap.Fixtures.ProbeTargets::AddInt'
contains "unknown: suggestion" "$ERR" "did you mean Clrtap.Fixtures.ProbeTargets::AddInts"
expect_exit "unknown type" 1 "$CLRTAP" probe -p "$FIX_PID" -d 1 'Clrtap.Fixture.Outer+Inner::Nestd'
contains "unknown: nested suggestion" "$ERR" "Clrtap.Fixtures.Outer+Inner::Nested"
expect_exit "list nested" 0 "$CLRTAP" probe -p "$FIX_PID" --list 'Clrtap.Fixtures.Outer+Inner::*'
contains "list: nested name and signature" "$OUT" "Clrtap.Fixtures.Outer+Inner::Nested(int32) int32 [sample]"
contains "list: JIT address and tier" "$OUT" "QuickJitted"
expect_exit "list R2R" 0 "$CLRTAP" probe -p "$FIX_PID" --list 'System.Convert::ToString(int32, int32)'
contains "list: R2R image and offset" "$OUT" "R2R  /usr/share/dotnet/shared/Microsoft.NETCore.App/"
contains "list: R2R file" "$OUT" "System.Private.CoreLib.dll+0x"
expect_exit "emit perf" 0 "$CLRTAP" probe -p "$FIX_PID" --emit perf 'System.Convert::ToString(int,int)'
contains "emit perf: command" "$OUT" "perf probe -x /usr/share/dotnet/shared/Microsoft.NETCore.App/"
contains "emit perf: offset" "$OUT" "--add 0x"
expect_exit "emit bpftrace" 0 "$CLRTAP" probe -p "$FIX_PID" --emit bpftrace 'System.Convert::ToString(int,int)'
contains "emit bpftrace: uprobe" "$OUT" "uprobe:/usr/share/dotnet/shared/"
expect_exit "emit for a JIT-only method says so" 0 "$CLRTAP" probe -p "$FIX_PID" --emit perf '*::AddInts'
contains "emit: no R2R code" "$OUT" "no ReadyToRun code"
expect_exit "bad --emit" 2 "$CLRTAP" probe -p "$FIX_PID" --emit dtrace '*::AddInts'
expect_exit "no pattern" 2 "$CLRTAP" probe -p "$FIX_PID"
expect_exit "bad --hist argument" 2 "$CLRTAP" probe -p "$FIX_PID" --hist nope '*::AddInts'
DEAD=$FIX_PID
stop_fixture "$FIX_PID"
expect_exit "dead pid" 3 "$CLRTAP" probe -p "$DEAD" '*::AddInts'

finish
