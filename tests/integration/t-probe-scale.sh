#!/usr/bin/env bash
# clrtap probe at scale (issue 16): a target with 500 threads that keep both
# cores busy. A ReadyToRun method (uprobe) and a JIT'd one (hardware
# breakpoint) are probed while the threads run; each thread then makes an
# exact number of calls: the counts clrtap prints are the fixture's, to the
# call. Uprobes are per CPU, filtered by pid, where this machine's kernel
# accepts and fires CPU-wide ones (tests/tools/cpuwidecheck, the test's own
# check); then calls of another process running the same code are not counted
# but dropped, and said. Breakpoints stay per thread. Attach and detach times are printed; both end.
#
# The test shell runs at real-time priority (as t-profile-scale.sh) so that
# its own waits are not starved by 500 busy threads; clrtap is started at
# SCHED_OTHER (chrt -o) and must raise its own priority.
. "$(dirname "$0")/lib.sh"
# test-run: alone

if [ "$(id -u)" -ne 0 ]; then
	skip "needs root (per-CPU perf events, SCHED_FIFO)"
	finish
fi
T=500
C=20
WANT=$((T * C))

# This machine: do CPU-wide uprobes and breakpoints open and fire?
CW=$("$TOOLS/cpuwidecheck")
HWBP=$("$TOOLS/hwbpcheck")
echo "    this machine: CPU-wide: $(echo "$CW" | tr '\n' ';') per-thread breakpoints: $HWBP"
UP_CPU=$(echo "$CW" | sed -n 's/^uprobe \([a-z]*\).*/\1/p')

# Nothing tiers up during the test (call-count threshold 0xffff above the
# calls made): ToString stays ReadyToRun code, Hit one JIT'd version; the
# counts are then exact by construction, not across a tier change.
FIX_ENV="DOTNET_TC_CallCountThreshold=ffff"
# A second process running the same code, triggered at the same time: its
# calls must not be counted.
start_fixture many-calls --threads 2 --calls 50 --trigger "$WORK/trig"
OTHER_PID=$FIX_PID
OTHER_OUT=$FIX_OUT
start_fixture many-calls --threads $T --calls $C --trigger "$WORK/trig"
equals "fixture: $T threads and more" "$(( $(ls /proc/$FIX_PID/task | wc -l) > T ))" 1
chrt -f -p 1 $$ || not_ok "test shell at SCHED_FIFO"
sleep 1

now() { date +%s.%N; }
secs() { python3 -c 'import sys; print("%.2f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$1" "$2"; }

# probe_bg NAME PATTERN: clrtap probe -c at SCHED_OTHER; pid in P_NAME
declare -A PP STARTED
probe_bg() {
	STARTED[$1]=$(now)
	chrt -o 0 "$CLRTAP" probe -p "$FIX_PID" -c "$2" >"$WORK/$1.out" 2>"$WORK/$1.err" &
	PP[$1]=$!
}
probe_bg r2r 'System.Convert::ToString(int,int)'
probe_bg jit 'Clrtap.Fixtures.ManyCalls::Hit'
# where breakpoints do not fire the JIT'd method is not traced: clrtap says
# so and exits 1 at once (checked below); only the uprobe session runs
KINDS=(r2r jit)
if [[ $HWBP != fires* ]]; then
	KINDS=(r2r)
	wait "${PP[jit]}"
	equals "jit: breakpoints do not fire here: not traced, exit 1" "$?" 1
fi
for k in "${KINDS[@]}"; do
	if wait_for_line "$WORK/$k.err" 'tracing' 120 "${PP[$k]}"; then
		ok "$k: attach finished ($(secs "${STARTED[$k]}" "$(now)") s from start to tracing)"
	else
		not_ok "$k: attach finished" "$(cat "$WORK/$k.err")"
	fi
	grep 'attached in' "$WORK/$k.err" | sed 's/^/    | /'
done
touch "$WORK/trig"
wait_for_line "$FIX_OUT" '^DONE ' 300 "$FIX_PID" || not_ok "fixture made its calls"
wait_for_line "$OTHER_OUT" '^DONE ' 60 "$OTHER_PID" || not_ok "other process made its calls"
equals "fixture: every call made" "$(sed -n 's/^DONE calls=\([0-9]*\) .* hits=\([0-9]*\)$/\1 \2/p' "$FIX_OUT")" "$WANT $WANT"
sleep 0.5
for k in "${KINDS[@]}"; do
	S=$(now)
	kill -INT "${PP[$k]}"
	wait "${PP[$k]}"
	RC=$?
	echo "    $k: from SIGINT to exit $(secs "$S" "$(now)") s; $(grep 'detached in' "$WORK/$k.err")"
	equals "$k: exit 0 at SIGINT" "$RC" 0
	contains "$k: detach finished" "$(cat "$WORK/$k.err")" "clrtap: detached in "
	contains "$k: priority raised" "$(cat "$WORK/$k.err")" "clrtap priority: raised to SCHED_FIFO 1"
	lacks "$k: no sample lost" "$(cat "$WORK/$k.err")" "samples lost"
done
R2R=$(cat "$WORK/r2r.err")
JIT=$(cat "$WORK/jit.err")

# ---- ReadyToRun code: uprobes ----
contains "r2r: uprobe on CoreLib's R2R code" "$R2R" "[ReadyToRun] at System.Private.CoreLib.dll+0x"
contains "r2r: exactly $WANT calls (the fixture's count)" "$R2R" \
	"System.Convert::ToString(int32, int32): $WANT calls"
if [ "$UP_CPU" = fires ]; then
	contains "r2r: uprobes per CPU, filtered by pid" "$R2R" "uprobes per CPU (filtered by pid)"
	# the other process's 100 calls (and any other .NET process's) took the trap
	FOREIGN=$(sed -n 's/^clrtap: \([0-9]*\) hits in other processes dropped.*/\1/p' "$WORK/r2r.err")
	check "r2r: the other process's 100 calls dropped and said (${FOREIGN:-none})" \
		test "${FOREIGN:-0}" -ge 100
else
	contains "r2r: uprobes per thread where CPU-wide ones are $UP_CPU" "$R2R" "uprobes per thread"
fi

# ---- JIT'd code: hardware breakpoints ----
if [[ $HWBP == fires* ]]; then
	contains "jit: hardware breakpoint on the JIT'd code" "$JIT" "hw-breakpoint on entry"
	contains "jit: exactly $WANT calls (the fixture's count)" "$JIT" \
		"Clrtap.Fixtures.ManyCalls::Hit(int32): $WANT calls"
	# per thread whatever the kernel allows (a CPU-wide one takes a debug
	# register from every task); cheap: the attach line gives the time
	contains "jit: breakpoints per thread (inherited)" "$JIT" "breakpoints per thread"
else
	contains "jit: breakpoints do not fire here, said so" "$JIT" \
		"hardware execute breakpoints do not fire on this machine"
	contains "jit: the method is not traced, not counted 0" "$JIT" \
		"Clrtap.Fixtures.ManyCalls::Hit(int32): NOT traced"
	lacks "jit: no false 0" "$JIT" " 0 calls"
fi

# ---- the target as found: no uprobe left ----
[ -e /sys/kernel/tracing/uprobe_events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
if [ -e /sys/kernel/tracing/uprobe_events ]; then
	equals "no uprobe left in tracefs" "$(cat /sys/kernel/tracing/uprobe_events)" ""
fi
check "target still running" kill -0 "$FIX_PID"
stop_fixture "$FIX_PID"
stop_fixture "$OTHER_PID"

# ---- the fallback where CPU-wide events are refused: per-thread uprobes ----
# (forced here: this machine's kernel accepts CPU-wide ones) exact too, on a
# small target (each per-thread uprobe costs a grace period to close)
start_fixture many-calls --threads 4 --calls 25 --trigger "$WORK/trig2"
chrt -o 0 env CLRTAP_TEST_PROBE_SCOPE=thread "$CLRTAP" probe -p "$FIX_PID" -c \
	'System.Convert::ToString(int,int)' >"$WORK/pt.out" 2>"$WORK/pt.err" &
PT=$!
wait_for_line "$WORK/pt.err" 'tracing' 60 "$PT" || not_ok "per-thread: attached"
touch "$WORK/trig2"
wait_for_line "$FIX_OUT" '^DONE ' 60 "$FIX_PID" || not_ok "per-thread: fixture made its calls"
sleep 0.5
kill -INT "$PT"
wait "$PT"
equals "per-thread: exit 0 at SIGINT" "$?" 0
PTE=$(cat "$WORK/pt.err")
contains "per-thread: said so" "$PTE" "uprobes per thread, breakpoints per thread"
contains "per-thread: exactly 100 calls" "$PTE" "System.Convert::ToString(int32, int32): 100 calls"
lacks "per-thread: no other process's hit can reach a per-thread event" "$PTE" "hits in other processes"
stop_fixture "$FIX_PID"
finish
