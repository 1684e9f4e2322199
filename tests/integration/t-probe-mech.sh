#!/usr/bin/env bash
# clrtap probe proves its attach mechanisms fire before showing a count made
# with them. The test finds out on its own (tests/tools/hwbpcheck, no clrtap
# code) whether hardware execute breakpoints fire on this machine, then
# asserts the matching fact: exact counts where they fire, clrtap's plain
# statement of what it cannot see where they don't. The "does not fire" path
# is also forced (CLRTAP_TEST_MECH_HWBP=broken) so it runs on every machine.
. "$(dirname "$0")/lib.sh"

HWBP=$("$TOOLS/hwbpcheck")
echo "    this machine: hardware execute breakpoints: $HWBP"
# how clrtap names its own proof: its self-test counted, or the kernel refused
SAID="(self-test: "
[[ $HWBP == refused* ]] && SAID="(perf_event_open refused it: "
# the cache in a directory of the test's own (a given one is copied: tests may preset it)
mkdir -p "$WORK/cache"
[ -n "${CLRTAP_CACHE_DIR:-}" ] && cp "$CLRTAP_CACHE_DIR"/mech-* "$WORK/cache/" 2>/dev/null
export CLRTAP_CACHE_DIR=$WORK/cache
N=25

# ---- the real mechanism on a JIT-only method ----
start_fixture probe-warm --calls "$N" --interval-ms 2 --trigger "$WORK/trig-a"
"$CLRTAP" probe -p "$FIX_PID" -d 4 --count 'Clrtap.Fixtures.ProbeTargets::AddInts' \
	>"$WORK/real.out" 2>"$WORK/real.err" &
P=$!
wait_for_line "$WORK/real.err" 'tracing|nothing to trace' 20 "$P" >/dev/null
touch "$WORK/trig-a"
wait_for_line "$FIX_OUT" '^DONE ' 60 "$FIX_PID" >/dev/null
wait "$P"
RC=$?
if [[ $HWBP == fires* ]]; then
	equals "breakpoints fire here: clrtap exits 0" "$RC" 0
	contains "breakpoints fire here: exact count" "$(cat "$WORK/real.err")" \
		"ProbeTargets::AddInts(int32, int32): $N calls"
	lacks "breakpoints fire here: no statement" "$(cat "$WORK/real.err")" "do not fire"
	equals "self-test cached for this boot: fires" \
		"$(cut -d' ' -f1,2 "$CLRTAP_CACHE_DIR/mech-hwbp")" "$(cat /proc/sys/kernel/random/boot_id) fires"
else
	equals "breakpoints do not fire here: clrtap exits 1" "$RC" 1
	contains "breakpoints do not fire here: said plainly" "$(cat "$WORK/real.err")" \
		"hardware execute breakpoints do not fire on this machine $SAID"
	contains "what cannot be seen" "$(cat "$WORK/real.err")" "What cannot be seen: calls to JIT-compiled code"
	if [[ $HWBP == refused* ]]; then WHY="Why: the kernel refuses hardware execute breakpoints here"
	else WHY="Why: the kernel accepts the breakpoint but the CPU never reports it"; fi
	contains "why, as this machine is" "$(cat "$WORK/real.err")" "$WHY"
	contains "not traced rather than 0" "$(cat "$WORK/real.err")" "AddInts(int32, int32): NOT traced"
	lacks "no silent zero" "$(cat "$WORK/real.err")" ": 0 calls"
	equals "self-test cached for this boot: silent" \
		"$(cut -d' ' -f1,2 "$CLRTAP_CACHE_DIR/mech-hwbp")" "$(cat /proc/sys/kernel/random/boot_id) silent"
fi

# ---- forced: breakpoints do not fire (every machine) ----
expect_exit "forced broken: JIT-only method is not traced" 1 \
	env CLRTAP_TEST_MECH_HWBP=broken "$CLRTAP" probe -p "$FIX_PID" -d 1 --count '*::AddInts'
contains "forced: says breakpoints do not fire" "$ERR" \
	"hardware execute breakpoints do not fire on this machine (forced by CLRTAP_TEST_MECH_HWBP)"
contains "forced: what cannot be seen" "$ERR" "What cannot be seen: calls to JIT-compiled code"
contains "forced: why" "$ERR" "Why: the kernel accepts the breakpoint but the CPU never reports it"
contains "forced: what would see it" "$ERR" "What would see them: the in-process ReJIT profiler ('--via rejit'"
contains "forced: the method is named" "$ERR" "Clrtap.Fixtures.ProbeTargets::AddInts(int32, int32): NOT traced"
lacks "forced: no count" "$ERR" " 0 calls"
check "forced: the start line says which mechanism the method gets" grep -qE \
	'^clrtap: Clrtap\.Fixtures\.ProbeTargets::AddInts\(int32, int32\): mechanism: JIT code \([A-Za-z0-9]+\): hardware breakpoint \(forced not to fire: its calls there are NOT seen\); --via rejit: every call on every tier' \
	<<<"$ERR"

# ---- --via uprobe|breakpoint: only that mechanism, and what it leaves unseen ----
expect_exit "--via uprobe: a JIT-only method is not traced" 1 \
	"$CLRTAP" probe -p "$FIX_PID" --via uprobe -d 1 --count 'Clrtap.Fixtures.ProbeTargets::AddInts'
contains "--via uprobe: says only the uprobe is used" "$ERR" \
	"but only the uprobe is used: with --via uprobe (hardware breakpoints not used)"
contains "--via uprobe: why not traced" "$ERR" \
	"Clrtap.Fixtures.ProbeTargets::AddInts(int32, int32): NOT traced: it has only JIT-compiled code, no code clrtap can watch with --via uprobe (hardware breakpoints not used)"
lacks "--via uprobe: no count" "$ERR" " 0 calls"
# where breakpoints fire, the method is traced (its JIT code, once it tiers
# up); where they do not, nothing of it can be watched: said, not counted
if [[ $HWBP == fires* ]]; then
	expect_exit "--via breakpoint on a ReadyToRun method" 0 \
		"$CLRTAP" probe -p "$FIX_PID" --via breakpoint -d 1 --count 'System.Convert::ToString(int32,int32)'
	contains "--via breakpoint: its ReadyToRun code is not watched, and said so" "$ERR" \
		"System.Convert::ToString(int32, int32) [ReadyToRun] at System.Private.CoreLib.dll+0x"
	contains "--via breakpoint: the reason" "$ERR" \
		": NOT WATCHED with --via breakpoint (uprobes not used), so calls to this code are not counted"
	contains "--via breakpoint: says only the breakpoint is used" "$ERR" \
		"but only the hardware breakpoint is used: with --via breakpoint (uprobes not used)"
else
	expect_exit "--via breakpoint on a ReadyToRun method, breakpoints do not fire" 1 \
		"$CLRTAP" probe -p "$FIX_PID" --via breakpoint -d 1 --count 'System.Convert::ToString(int32,int32)'
	contains "--via breakpoint: breakpoints do not fire, said" "$ERR" \
		"hardware execute breakpoints do not fire on this machine $SAID"
fi
# the same where breakpoints do not fire (forced: every machine)
expect_exit "--via breakpoint, forced broken: not traced" 1 env CLRTAP_TEST_MECH_HWBP=broken \
	"$CLRTAP" probe -p "$FIX_PID" --via breakpoint -d 1 --count 'System.Convert::ToString(int32,int32)'
contains "--via breakpoint, forced broken: says only the breakpoint is used" "$ERR" \
	"but only the hardware breakpoint is used: with --via breakpoint (uprobes not used)"
contains "--via breakpoint, forced broken: not traced, and why" "$ERR" \
	"System.Convert::ToString(int32, int32): NOT traced: it has no code clrtap can watch with --via breakpoint (uprobes not used)"
lacks "--via breakpoint, forced broken: no count" "$ERR" " 0 calls"
expect_exit "--via sideways is a usage error" 2 "$CLRTAP" probe -p "$FIX_PID" --via sideways '*::AddInts'

# ---- --list says which mechanism each method would get, and why ----
expect_exit "--list a JIT'd method" 0 "$CLRTAP" probe -p "$FIX_PID" --list 'Clrtap.Fixtures.ProbeTargets::AddInts'
if [[ $HWBP == fires* ]]; then WORD="fires here"; else WORD="does NOT fire here: its calls there are NOT seen"; fi
check "--list: JIT code gets a hardware breakpoint ($WORD)" grep -qxE \
	"    mechanism: JIT code \([A-Za-z0-9]+\): hardware breakpoint \($WORD\); --via rejit: every call on every tier \(in-process profiler\)" <<<"$OUT"
expect_exit "--list, breakpoints forced broken" 0 env CLRTAP_TEST_MECH_HWBP=broken \
	"$CLRTAP" probe -p "$FIX_PID" --list 'Clrtap.Fixtures.ProbeTargets::AddInts'
check "--list: what cannot be seen when breakpoints do not fire" grep -qxE \
	"    mechanism: JIT code \([A-Za-z0-9]+\): hardware breakpoint \(forced not to fire: its calls there are NOT seen\); --via rejit: every call on every tier \(in-process profiler\)" <<<"$OUT"
expect_exit "--list a ReadyToRun method" 0 env CLRTAP_TEST_MECH_UPROBE=broken CLRTAP_TEST_MECH_HWBP=works \
	"$CLRTAP" probe -p "$FIX_PID" --list 'System.Convert::ToString(int32,int32)'
check "--list: R2R code gets a uprobe (unseen when uprobes do not fire), JIT code a breakpoint" grep -qE \
	"^    mechanism: ReadyToRun code: uprobe \(forced not to fire: its calls there are NOT seen\); JIT code (after tier-up|\([A-Za-z0-9]+\)): hardware breakpoint \(forced to fire\); --via rejit: every call on every tier" <<<"$OUT"
expect_exit "--list a method not compiled yet" 0 env CLRTAP_TEST_MECH_HWBP=works \
	"$CLRTAP" probe -p "$FIX_PID" --list 'Clrtap.Fixtures.ProbeBench::Run'
check "--list: a method without code gets a breakpoint once compiled" grep -qxF \
	"    mechanism: JIT code once compiled (not yet; or inlined into callers): hardware breakpoint (forced to fire); --via rejit: every call on every tier (in-process profiler)" <<<"$OUT"
stop_fixture "$FIX_PID"

# ---- forced: R2R code is counted until the method tiers up to JIT code ----
start_fixture probe-warm --calls 600 --interval-ms 5 --trigger "$WORK/trig-b"
env CLRTAP_TEST_MECH_HWBP=broken "$CLRTAP" probe -p "$FIX_PID" -d 60 --count \
	'System.Convert::ToString(int32,int32)' >"$WORK/tier.out" 2>"$WORK/tier.err" &
P=$!
wait_for_line "$WORK/tier.err" 'tracing' 20 "$P" >/dev/null
touch "$WORK/trig-b"
wait_for_line "$FIX_OUT" '^DONE ' 60 "$FIX_PID" >/dev/null
kill -INT "$P"
wait "$P"
equals "forced tier-up: clrtap exits 0" "$?" 0
T=$(cat "$WORK/tier.err")
contains "forced tier-up: R2R armed by uprobe" "$T" "[ReadyToRun] at System.Private.CoreLib.dll+0x"
check "forced tier-up: live line says from when calls are not counted" \
	grep -qE 'ToString\(int32, int32\): new code [A-Za-z0-9]+ at 0x[0-9a-f]+ size [0-9]+ \(\+[0-9.]+s, [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}\): clrtap cannot watch it on this machine; calls that run it from now on are NOT counted' "$WORK/tier.err"
check "forced tier-up: summary says until when calls were counted" \
	grep -qE 'ToString\(int32, int32\): [0-9]+ calls counted until \+[0-9.]+s; from then on calls ran \[[A-Za-z0-9]+\] code that clrtap cannot watch on this machine and are NOT counted' "$WORK/tier.err"
R2R=$(sed -n 's/.*\[ReadyToRun\] \([0-9]*\) calls (uprobe).*/\1/p' "$WORK/tier.err")
echo "    forced tier-up: $R2R calls counted on ReadyToRun code before tier-up"
check "forced tier-up: R2R calls counted (30+ before tier-up, at most 600)" \
	test "${R2R:-0}" -ge 30 -a "${R2R:-0}" -le 600
contains "forced tier-up: JIT version not watched, not 0" "$T" "not watched: hardware execute breakpoints do not fire on this machine; its calls are not counted"
stop_fixture "$FIX_PID"

# ---- the cache: a hostile or broken file is ignored and rewritten ----
printf 'garbage\n' >"$CLRTAP_CACHE_DIR/mech-hwbp"
start_fixture probe-warm --calls 5 --interval-ms 2 --trigger "$WORK/trig-c"
WANT=1
[[ $HWBP == fires* ]] && WANT=0
expect_exit "corrupt cache: probe answers as before" "$WANT" "$CLRTAP" probe -p "$FIX_PID" -d 1 --count '*::AddInts'
check "corrupt cache replaced by a new self-test" \
	grep -qE "^$(cat /proc/sys/kernel/random/boot_id) (fires|silent) 1000 [0-9]+ -?[0-9]+( [0-9]+)?$" "$CLRTAP_CACHE_DIR/mech-hwbp"
stop_fixture "$FIX_PID"

finish
