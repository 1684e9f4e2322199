#!/usr/bin/env bash
# clrtap watch, the triggers beyond t-watch.sh: a first-chance exception by
# type whose stacks hold the throwing method, by message (any type), the
# thread-pool queue, a Meter instrument, cgroup memory as a share of its
# limit (and the line that says there is none), the analyze action, and
# crash vs exit (the kernel's process-events connector, or "not known").
. "$(dirname "$0")/lib.sh"

# 0. a first-chance exception rule for a named type fires on the first (and
#    only) throw of throw-hold, and its stacks action, run at that moment,
#    holds the throwing method (the fixture stays in it).
start_fixture throw-hold --trigger "$WORK/go-hold"
HOLD_PID=$FIX_PID
"$CLRTAP" watch -p "$HOLD_PID" 'exception Clrtap.Fixtures.FixtureException' --action stacks \
	-o "$WORK/hold" -d 40 >"$WORK/hold.jsonl" 2>"$WORK/hold.err" &
W=$!
wait_for_line "$WORK/hold.jsonl" '"event":"watching"' 10 "$W" >/dev/null
sleep 2
touch "$WORK/go-hold"
check "the rule fires on the only throw" wait_for_line "$WORK/hold.jsonl" '"event":"fired"' 10 "$W"
check "the stacks action ends" wait_for_line "$WORK/hold.jsonl" '"event":"action-end"' 20 "$W"
kill -INT "$W"
wait "$W"
check "one firing, the first of its rule, with the type and message" jl_true "$WORK/hold.jsonl" \
	"[(l['fired'], l['type'], l['message']) for l in L if l['event'] == 'fired'] == [(1, 'Clrtap.Fixtures.FixtureException', 'clrtap fixture exception')]"
check "the stacks name the throwing method" grep -q 'Clrtap.Fixtures.ThrowHolder::ThrowAndHold' \
	"$WORK/hold/1-stacks-$HOLD_PID/result.json"
check "the fired line's stack is the throw's: the throwing method, then its caller" jl_true "$WORK/hold.jsonl" \
	"[l['stack'][:2] for l in L if l['event'] == 'fired'] == [['Clrtap.Fixtures.ThrowHolder::ThrowAndHold', 'Clrtap.Fixtures.ThrowHoldMode::Run']]"
check "exception.txt in the action's folder: type, message, the frames of the throw" python3 -c '
import sys; l = open(sys.argv[1]).read().splitlines()
sys.exit(0 if l[:3] == ["Clrtap.Fixtures.FixtureException: clrtap fixture exception", "   at Clrtap.Fixtures.ThrowHolder::ThrowAndHold", "   at Clrtap.Fixtures.ThrowHoldMode::Run"] else 1)' \
	"$WORK/hold/1-stacks-$HOLD_PID/exception.txt"
stop_fixture "$HOLD_PID"

# 0b. No storm by default (issue 33): on a spinning fixture, a rule without
#     a cooldown fires once (the default 60 s) and says so; with 'cooldown 0'
#     a rule still never fires while its last firing's action runs (a 2 s
#     sleep: exactly 2 firings in 4 s, never two of its actions at once); a
#     firing of 2 actions under --max-actions 1 runs one and logs the other
#     as skipped. Two watches at once on one fixture.
start_fixture cpu-split
SPIN_PID=$FIX_PID
"$CLRTAP" watch -p "$SPIN_PID" 'cpu > 5%' 'cpu > 5% cooldown 0 do "exec:sleep 2"' --action 'exec:true' \
	-o "$WORK/storm" -d 4 >"$WORK/storm.jsonl" 2>"$WORK/storm.err" &
W1=$!
"$CLRTAP" watch -p "$SPIN_PID" 'cpu > 5% do "exec:sleep 1" do "exec:sleep 1"' --max-actions 1 \
	-o "$WORK/cap" -d 2 >"$WORK/cap.jsonl" 2>"$WORK/cap.err" &
W2=$!
wait "$W1" "$W2"
check "the rule without a cooldown fired once in 4 s, its first line says the default cooldown" jl_true "$WORK/storm.jsonl" \
	"[(l['cooldown_s'], l['cooldown_default'], 'default cooldown' in l['note']) for l in L if l['event'] == 'fired' and l['rule'] == 0] == [(60, True, True)]"
check "then one suppressed line saying why" jl_true "$WORK/storm.jsonl" \
	"[l['why'].startswith('within the rule') for l in L if l['event'] == 'suppressed' and l['rule'] == 0] == [True]"
contains "stderr says the cooldown in force" "$(cat "$WORK/storm.err")" "pid $SPIN_PID: cpu > 5%; cooldown 60 s (the default)"
check "'cooldown 0' with a 2 s action: exactly 2 firings in 4 s" jl_true "$WORK/storm.jsonl" \
	"sum(l['event'] == 'fired' and l['rule'] == 1 for l in L) == 2"
check "its own action only (per-rule actions), never two at once" jl_true "$WORK/storm.jsonl" \
	"[(l['event'], l['argv'][2] if l['event'] == 'action-start' else '') for l in L if l['event'] in ('action-start', 'action-end') and l['fire'] != 1] == [('action-start', 'sleep 2'), ('action-end', ''), ('action-start', 'sleep 2'), ('action-end', '')]"
check "the firings in between were suppressed because its action ran" jl_true "$WORK/storm.jsonl" \
	"len([l for l in L if l['event'] == 'suppressed' and l['rule'] == 1]) >= 1 and all(l['why'].startswith('the actions of the rule') for l in L if l['event'] == 'suppressed' and l['rule'] == 1)"
check "the rule without 'do' ran the --action" jl_true "$WORK/storm.jsonl" \
	"[l['argv'][2] for l in L if l['event'] == 'action-start' and l['fire'] == 1] == ['true']"
check "--max-actions 1: one of the firing's 2 actions ran, the other was skipped" jl_true "$WORK/cap.jsonl" \
	"[('child' in l, l.get('error', '').startswith('skipped: 1 actions run already')) for l in L if l['event'] == 'action-start'] == [(True, False), (False, True)]"
stop_fixture "$SPIN_PID"

# 1. exception by message, any type; a message rule that matches nothing
#    stays quiet; the analyze action's report names the throwing method.
start_fixture exceptions --count 300000 --trigger "$WORK/go-exc"
EXC_PID=$FIX_PID
"$CLRTAP" watch -p "$EXC_PID" 'exception * message "fixture exception" count 1' \
	'exception Clrtap.Fixtures.FixtureException message "no such text"' \
	--action analyze:exceptions:2s -o "$WORK/exc" -d 40 >"$WORK/exc.jsonl" 2>"$WORK/exc.err" &
W=$!
wait_for_line "$WORK/exc.jsonl" '"event":"watching"' 10 "$W" >/dev/null
sleep 2
touch "$WORK/go-exc"
check "the message rule fires" wait_for_line "$WORK/exc.jsonl" '"event":"fired"' 10 "$W"
check "the analyze action ends" wait_for_line "$WORK/exc.jsonl" '"event":"action-end"' 30 "$W"
kill -INT "$W"
wait "$W"
check "one firing, of rule 0, with the thrown type and message" jl_true "$WORK/exc.jsonl" \
	"[(l['rule'], l['type'], l['message']) for l in L if l['event'] == 'fired'] == [(0, 'Clrtap.Fixtures.FixtureException', 'clrtap fixture exception')]"
check "the analyze action ran clrtap analyze exceptions and succeeded" jl_true "$WORK/exc.jsonl" \
	"[(l['action'], l['exit_code']) for l in L if l['event'] == 'action-end'] == [('analyze', 0)]"
check "it ran the analyze task with the analyzer and the duration" jl_true "$WORK/exc.jsonl" \
	"[(l['task'], l['params']['analyzer'], l['params']['duration']) for l in L if l['event'] == 'action-start'] == [('analyze', 'exceptions', '2s')]"
REPORT="$WORK/exc/1-analyze-$EXC_PID/report.md"
check "the report is in the action's folder" test -s "$REPORT"
check "the report names the exception type" grep -q 'Clrtap.Fixtures.FixtureException' "$REPORT"
check "and the throwing method" grep -q 'Clrtap.Fixtures.Thrower::ThrowOne' "$REPORT"
stop_fixture "$EXC_PID"

# 1b. exception rate: a fixture throwing without pause is far above 100/s
#     and far below 10^9/s.
start_fixture exceptions --count 100000000
RATE_PID=$FIX_PID
"$CLRTAP" watch -p "$RATE_PID" 'exception-rate > 100 count 1' 'exception-rate > 1000000000' -o "$WORK/rate" -d 6 \
	>"$WORK/rate.jsonl" 2>"$WORK/rate.err"
check "exception-rate > 100 fires once (System.Runtime/exception-count per 1 s), > 10^9 never" jl_true "$WORK/rate.jsonl" \
	"[(l['rule'], l['value'] > 100) for l in L if l['event'] == 'fired'] == [(0, True)]"
stop_fixture "$RATE_PID"

# 2. thread-pool queue: the starve fixture keeps about 200 items queued.
start_fixture starve --items 200 --trigger "$WORK/go-starve"
ST_PID=$FIX_PID
"$CLRTAP" watch -p "$ST_PID" 'threadpool-queue > 50 for 2s count 1' -o "$WORK/starve" -d 40 \
	>"$WORK/starve.jsonl" 2>"$WORK/starve.err" &
W=$!
wait_for_line "$WORK/starve.jsonl" '"event":"watching"' 10 "$W" >/dev/null
sleep 3
check "no firing before the starvation" jl_true "$WORK/starve.jsonl" "not any(l['event'] == 'fired' for l in L)"
touch "$WORK/go-starve"
check "the threadpool-queue rule fires" wait_for_line "$WORK/starve.jsonl" '"event":"fired"' 30 "$W"
kill -INT "$W"
wait "$W"
check "with a queue over 50 (System.Runtime/threadpool-queue-length)" jl_true "$WORK/starve.jsonl" \
	"[(l['trigger'], l['value'] > 50) for l in L if l['event'] == 'fired'] == [('counter', True)]"
stop_fixture "$ST_PID"

# 3. a Meter instrument (System.Diagnostics.Metrics, the runtime's own
#    System.Runtime meter) and cgroup memory, on one idle fixture.
start_fixture idle
ID_PID=$FIX_PID
"$CLRTAP" watch -p "$ID_PID" 'meter System.Runtime/dotnet.process.memory.working_set > 1MB count 1' \
	'cgroup-memory > 0.001%' -o "$WORK/idle" -d 8 >"$WORK/idle.jsonl" 2>"$WORK/idle.err"
equals "watch runs to its -d" "$?" "0"
check "the meter rule fires with the working set in bytes" jl_true "$WORK/idle.jsonl" \
	"[(l['units'], l['value'] > 1048576) for l in L if l['event'] == 'fired' and l['rule'] == 0] == [('By', True)]"
# What the machine says about the fixture's memory cgroup decides the fact.
LIMIT=$(python3 - "$ID_PID" <<'PY'
import os, sys
pid = sys.argv[1]
lines = open(f'/proc/{pid}/cgroup').read().splitlines()
v1 = [l.split(':', 2)[2] for l in lines if 'memory' in l.split(':')[1].split(',')]
if v1:
    base, fmax = '/sys/fs/cgroup/memory', 'memory.limit_in_bytes'
    path = v1[0]
elif os.path.exists('/sys/fs/cgroup/cgroup.controllers'):
    base, fmax = '/sys/fs/cgroup', 'memory.max'
    path = [l[3:] for l in lines if l.startswith('0::')][0]
else:
    print('none'); sys.exit()
best = 0
while True:
    try:
        v = open(base + (path if path != '/' else '') + '/' + fmax).read().strip()
        if v != 'max' and int(v) < 1 << 62 and (not best or int(v) < best):
            best = int(v)
    except OSError:
        pass
    if path == '/':
        break
    path = path.rsplit('/', 1)[0] or '/'
print(best)
PY
)
if [ "$LIMIT" = none ]; then
	check "no memory cgroup: one line says the rule never fires" jl_true "$WORK/idle.jsonl" \
		"[l['note'].startswith('no memory cgroup') for l in L if l['event'] == 'cgroup-memory'] == [True]"
elif [ "$LIMIT" = 0 ]; then
	check "no memory limit: one line says so, the rule never fires" jl_true "$WORK/idle.jsonl" \
		"[l['note'].startswith('no memory limit') for l in L if l['event'] == 'cgroup-memory'] == [True] and not any(l['event'] == 'fired' and l['rule'] == 1 for l in L)"
	contains "and stderr says so" "$(cat "$WORK/idle.err")" "its cgroup has no memory limit"
else
	check "a limit of $LIMIT bytes: the rule fires with it" jl_true "$WORK/idle.jsonl" \
		"any(l['event'] == 'fired' and l['rule'] == 1 and ' of $LIMIT bytes' in l['detail'] for l in L)"
fi
stop_fixture "$ID_PID"

# 4. cgroup memory with a limit: a memory cgroup of our own (v1, or v2) with
#    a 256 MiB limit; the fixture starts inside it (so all its memory is charged
#    there); the share is usage / limit.
CGDIR="" LIMF=""
if grep -q ':memory:' /proc/self/cgroup; then
	CGDIR=/sys/fs/cgroup/memory$(grep ':memory:' /proc/self/cgroup | cut -d: -f3)/clrtap-t-$$
	LIMF=memory.limit_in_bytes
elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	CGDIR=/sys/fs/cgroup$(grep '^0::' /proc/self/cgroup | cut -d: -f3)/clrtap-t-$$
	LIMF=memory.max
fi
CGDIR=${CGDIR//\/\//\/}
if [ -n "$CGDIR" ] && mkdir "$CGDIR" 2>/dev/null && echo $((256 << 20)) >"$CGDIR/$LIMF" 2>/dev/null; then
	CLEANUP_CMD="rmdir '$CGDIR' 2>/dev/null"
	FIX_OUT=$WORK/fixture-cg.out
	sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$CGDIR" \
		env DOTNET_CLI_TELEMETRY_OPTOUT=1 dotnet "$FIXTURE_DLL" idle >"$FIX_OUT" 2>&1 &
	CG_PID=$!
	KILL_PIDS+=("$CG_PID")
	wait_for_line "$FIX_OUT" '^READY ' 60 "$CG_PID" >/dev/null
	"$CLRTAP" watch -p "$CG_PID" 'cgroup-memory > 1% count 1' 'cgroup-memory > 99%' -o "$WORK/cg" -d 4 \
		>"$WORK/cg.jsonl" 2>"$WORK/cg.err"
	check "cgroup-memory > 1% of 256 MiB fires once, > 99% never" jl_true "$WORK/cg.jsonl" \
		"[(l['rule'], ' of 268435456 bytes (cgroup ' in l['detail']) for l in L if l['event'] == 'fired'] == [(0, True)]"
	check "the value is usage / limit in %" jl_true "$WORK/cg.jsonl" \
		"[1 < l['value'] < 99 for l in L if l['event'] == 'fired'] == [True]"
	stop_fixture "$CG_PID"
	rmdir "$CGDIR" 2>/dev/null
else
	ok "no memory cgroup could be made here: the limited case is not run (the rule's no-limit line is checked above)"
	[ -n "$CGDIR" ] && rmdir "$CGDIR" 2>/dev/null
fi

# 5. crash vs exit: how a process ended comes from the kernel's
#    process-events connector (watch is not the parent). FailFast aborts
#    (SIGABRT): a crash; SIGTERM: exit code 0, no crash; where the kernel
#    does not answer, the status is unknown and watch says so.
PORT=$(free_port)
start_fixture web --port "$PORT"
WEB_PID=$FIX_PID
"$CLRTAP" watch -p "$WEB_PID" exit crash --action 'exec:echo crashed-$CLRTAP_WATCH_PID' -o "$WORK/crash" -d 30 \
	>"$WORK/crash.jsonl" 2>"$WORK/crash.err" &
W=$!
wait_for_line "$WORK/crash.jsonl" '"event":"watching"' 10 "$W" >/dev/null
curl -s -m 5 "http://127.0.0.1:$PORT/api/fail" >/dev/null
wait "$W"
equals "watch ends 0 once its target is gone" "$?" "0"
check "the status is known (the connector opened)" jl_true "$WORK/crash.jsonl" \
	"[l['known'] for l in L if l['event'] == 'exit-status'] == [True]"
check "gone: killed by SIGABRT, a crash" jl_true "$WORK/crash.jsonl" \
	"[(l['signal'], l['signal_name'], l['crash']) for l in L if l['event'] == 'gone'] == [(6, 'ABRT', True)]"
check "both exit and crash fire, each saying SIGABRT" jl_true "$WORK/crash.jsonl" \
	"[(l['trigger'], l['detail'].startswith('killed by signal 6 (SIGABRT)')) for l in L if l['event'] == 'fired'] == [('exit', True), ('crash', True)]"
check "the exec action of the crash firing ran" grep -qx "crashed-$WEB_PID" "$WORK/crash/2-exec-$WEB_PID/stdout.txt"

start_fixture idle
TERM_PID=$FIX_PID
"$CLRTAP" watch -p "$TERM_PID" exit crash -o "$WORK/term" -d 30 >"$WORK/term.jsonl" 2>"$WORK/term.err" &
W=$!
wait_for_line "$WORK/term.jsonl" '"event":"watching"' 10 "$W" >/dev/null
kill -TERM "$TERM_PID"
wait "$W"
check "SIGTERM: exit code 0, exit fires, crash does not" jl_true "$WORK/term.jsonl" \
	"[(l['trigger'], l['value'], l['detail']) for l in L if l['event'] == 'fired'] == [('exit', 0, 'exited with code 0')]"

# Without CAP_NET_ADMIN: kernels from 6.6 answer any listener in the initial
# namespaces, older ones refuse; the log says which happened here.
start_fixture idle
NOCAP_PID=$FIX_PID
BND=$((16#$(awk '/^CapBnd:/ { print $2 }' /proc/self/status)))
CAPS=""
i=0
for c in $(setpriv --list-caps); do
	(( (BND >> i) & 1 )) && [ "$c" != net_admin ] && CAPS+=",+$c"
	i=$((i + 1))
done
setpriv --inh-caps="-all$CAPS" --bounding-set="-all$CAPS" -- "$CLRTAP" watch -p "$NOCAP_PID" exit crash \
	-o "$WORK/nocap" -d 30 >"$WORK/nocap.jsonl" 2>"$WORK/nocap.err" &
W=$!
wait_for_line "$WORK/nocap.jsonl" '"event":"watching"' 10 "$W" >/dev/null
kill -KILL "$NOCAP_PID"
wait "$W"
if [ "$(jl "$WORK/nocap.jsonl" "[l['known'] for l in L if l['event'] == 'exit-status']")" = "[True]" ]; then
	check "without CAP_NET_ADMIN this kernel ($(uname -r)) answers: SIGKILL seen, crash fires" jl_true "$WORK/nocap.jsonl" \
		"[l['trigger'] for l in L if l['event'] == 'fired'] == ['exit', 'crash'] and [l['signal'] for l in L if l['event'] == 'gone'] == [9]"
else
	check "without CAP_NET_ADMIN this kernel refuses, and the log says it needs it" jl_true "$WORK/nocap.jsonl" \
		"[('CAP_NET_ADMIN' in l['note']) for l in L if l['event'] == 'exit-status'] == [True]"
fi

# Outside the initial user and PID namespaces the kernel does not answer:
# fixture and watch together in a new user + PID namespace; the status is
# not known, exit fires saying so, crash never; stderr says why. The fixture
# is pid 2 there and shares the host's /tmp: its TMPDIR is in $WORK, so the
# socket the SIGKILLed runtime leaves (dotnet-diagnostic-2-...) goes with it.
mkdir "$WORK/nstmp"
timeout 60 unshare --user --map-root-user --pid --fork --mount-proc sh -c '
	TMPDIR="$2/nstmp" dotnet "$1" idle >"$2/nsfix.out" 2>&1 &
	P=$!
	for i in $(seq 100); do grep -q "^READY " "$2/nsfix.out" && break; sleep 0.1; done
	(sleep 2; kill -KILL $P) &
	"$3" watch -p $P exit crash -o "$2/nsw" -d 30 >"$2/nsw.jsonl" 2>"$2/nsw.err"' \
	sh "$FIXTURE_DLL" "$WORK" "$CLRTAP"
equals "the namespaced run ends 0" "$?" "0"
check "the namespaced runtime's socket was in its TMPDIR (\$WORK), not the host's /tmp" \
	sh -c "ls '$WORK/nstmp' | grep -q '^dotnet-diagnostic-2-.*-socket\$'"
check "in other namespaces: status not known, and why" jl_true "$WORK/nsw.jsonl" \
	"[(l['known'], 'initial user and PID namespaces' in l['note']) for l in L if l['event'] == 'exit-status'] == [(False, True)]"
check "exit fires saying how it ended is not known; crash never" jl_true "$WORK/nsw.jsonl" \
	"[(l['trigger'], 'how is not known' in l['detail']) for l in L if l['event'] == 'fired'] == [('exit', True)]"
contains "stderr says crash rules never fire" "$(cat "$WORK/nsw.err")" "crash rules never fire"

# 6. bad rules of these triggers exit 2
expect_exit "'exception *' without a message" 2 "$CLRTAP" watch -p 1 'exception *'
contains "says what it needs" "$ERR" "needs 'message TEXT'"
expect_exit "'for' on crash" 2 "$CLRTAP" watch -p 1 'crash for 1s'
expect_exit "cgroup-memory without %" 2 "$CLRTAP" watch -p 1 'cgroup-memory > 5'
expect_exit "an unterminated quote" 2 "$CLRTAP" watch -p 1 'exception * message "abc'
expect_exit "analyze without a name" 2 "$CLRTAP" watch -p 1 'exit' --action analyze
expect_exit "an analyzer name with odd bytes" 2 "$CLRTAP" watch -p 1 'exit' --action 'analyze:../x'
expect_exit "a bad per-rule action" 2 "$CLRTAP" watch -p 1 'exit do reboot'
contains "names it" "$ERR" "'do reboot': unknown action"
expect_exit "status of no class" 2 "$CLRTAP" watch -p 1 'status 6xx'
expect_exit "--max-actions 0" 2 "$CLRTAP" watch -p 1 'exit' --max-actions 0

finish
