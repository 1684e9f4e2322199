#!/usr/bin/env bash
# clrtap watch: a CPU spike rule fires within 2 s of the spike and its
# profile names the hot method; a first-chance exception rule fires on the
# only throw of a fixture, and on a throwing fixture its trace names the
# throwing method; the cooldown keeps a rule from firing twice; --all
# catches fixtures started after watch (host and namespaced); a target that
# dies while its action runs leaves a clear log line and watch goes on; a
# gc-heap-size rule on the leak fixture writes a gcdump naming the leaking
# type; hostile strings are escaped; SIGKILL of watch leaves the target
# unharmed and its action stops; bad rules and actions exit 2.
. "$(dirname "$0")/lib.sh"
# test-run: alone

# 1. CPU spike: cpu-split starts spinning when the trigger file appears.
start_fixture cpu-split --trigger "$WORK/go-cpu"
CPU_PID=$FIX_PID
"$CLRTAP" watch -p "$CPU_PID" 'cpu > 30% for 300ms count 1' --action profile:2s \
	-o "$WORK/cpu" -d 15 >"$WORK/cpu.jsonl" 2>"$WORK/cpu.err" &
W=$!
check "watch logs that it watches the target" wait_for_line "$WORK/cpu.jsonl" '"event":"watching"' 10 "$W"
sleep 1.5
check "no firing while the fixture idles" jl_true "$WORK/cpu.jsonl" "not any(l['event'] == 'fired' for l in L)"
T0=$(date +%s.%N)
touch "$WORK/go-cpu"
check "the cpu rule fires" wait_for_line "$WORK/cpu.jsonl" '"event":"fired"' 10 "$W"
check "the profile action ends" wait_for_line "$WORK/cpu.jsonl" '"event":"action-end"' 20 "$W"
kill -INT "$W"
wait "$W"
equals "watch exits 0 on Ctrl-C" "$?" "0"
DELAY=$(jl "$WORK/cpu.jsonl" "[__import__('datetime').datetime.strptime(l['time'], '%Y-%m-%dT%H:%M:%S.%fZ').replace(tzinfo=__import__('datetime').timezone.utc).timestamp() for l in L if l['event'] == 'fired'][0] - $T0")
check "fired within 2 s of the spike (${DELAY}s)" python3 -c "import sys; sys.exit(0 if $DELAY < 2.0 else 1)"
check "exactly one firing (count 1)" jl_true "$WORK/cpu.jsonl" "sum(l['event'] == 'fired' for l in L) == 1"
check "the firing names pid, rule and value" jl_true "$WORK/cpu.jsonl" \
	"[(l['pid'], l['trigger'], l['value'] > 30) for l in L if l['event'] == 'fired'] == [($CPU_PID, 'cpu', True)]"
check "the action ran clrtap profile and succeeded" jl_true "$WORK/cpu.jsonl" \
	"[(l['action'], l['exit_code'], l['target_alive']) for l in L if l['event'] == 'action-end'] == [('profile', 0, True)]"
PROF=$(ls "$WORK"/cpu/1-profile-"$CPU_PID"/profile.folded 2>/dev/null)
check "the profile task ran in a child (task_spawn) for 2 s" jl_true "$WORK/cpu.jsonl" \
	"[(l['task'], l['runs'], l['params']) for l in L if l['event'] == 'action-start'] == [('profile', 'child (task_spawn)', {'duration': '2s'})]"
check "the folded stacks are in the action's folder" test -s "$PROF"
check "the profile names the hot method CpuSplit::HotA" grep -q 'Clrtap.Fixtures.CpuSplit::HotA' "$PROF"
check "the log lists the folded stacks as an artifact" jl_true "$WORK/cpu.jsonl" \
	"any(a['file'].endswith('/profile.folded') and a['bytes'] > 0 for l in L if l['event'] == 'action-end' for a in l['artifacts'])"
stop_fixture "$CPU_PID"

# 1b. CPU below a threshold (a stall): cpu-split spins for 3 s, then idles.
start_fixture cpu-split --seconds 3
LOW_PID=$FIX_PID
"$CLRTAP" watch -p "$LOW_PID" 'cpu < 10% for 1s count 1' -o "$WORK/low" -d 20 >"$WORK/low.jsonl" 2>"$WORK/low.err" &
W=$!
check "the fixture finishes its spin" wait_for_line "$FIX_OUT" '^DONE ' 20 "$LOW_PID"
check "no 'cpu <' firing while it spun" jl_true "$WORK/low.jsonl" "not any(l['event'] == 'fired' for l in L)"
check "the 'cpu <' rule fires once it idles" wait_for_line "$WORK/low.jsonl" '"event":"fired"' 10 "$W"
kill -INT "$W"
wait "$W"
check "with a value below 10" jl_true "$WORK/low.jsonl" "[l['value'] < 10 for l in L if l['event'] == 'fired'] == [True]"
stop_fixture "$LOW_PID"

# 1c. GC pauses: the gc fixture induces exactly 3 blocking GCs.
start_fixture gc --count 3 --trigger "$WORK/go-gc"
GC_PID=$FIX_PID
"$CLRTAP" watch -p "$GC_PID" 'gc-pause > 0ms cooldown 0' 'gc-pause > 10s' -o "$WORK/gc" -d 30 >"$WORK/gc.jsonl" 2>"$WORK/gc.err" &
W=$!
wait_for_line "$WORK/gc.jsonl" '"event":"watching"' 10 "$W" >/dev/null
sleep 2
touch "$WORK/go-gc"
check "the fixture induced its GCs" wait_for_line "$FIX_OUT" '^DONE induced=3' 20 "$GC_PID"
sleep 2
kill -INT "$W"
wait "$W"
check "gc-pause > 0ms fired once per GC (3), gc-pause > 10s never" jl_true "$WORK/gc.jsonl" \
	"[(l['rule'], l['fired'], l['value'] > 0) for l in L if l['event'] == 'fired'] == [(0, 1, True), (0, 2, True), (0, 3, True)]"
stop_fixture "$GC_PID"

# 2. First-chance exception: a fixture that throws exactly once.
start_fixture exceptions --count 1 --trigger "$WORK/go-one"
ONE_PID=$FIX_PID
printf '# a rules file\n\n  exception Clrtap.Fixtures.FixtureException\r\n' >"$WORK/rules.txt"
"$CLRTAP" watch -p "$ONE_PID" 'exception System.InvalidOperationException' --rules "$WORK/rules.txt" --no-stacks \
	--action 'exec:echo fired-for-$CLRTAP_WATCH_PID' -o "$WORK/one" -d 20 >"$WORK/one.jsonl" 2>"$WORK/one.err" &
W=$!
wait_for_line "$WORK/one.jsonl" '"event":"watching"' 10 "$W" >/dev/null
sleep 2 # the EventPipe session is up well within this
touch "$WORK/go-one"
check "the exception rule fires on the only throw" wait_for_line "$WORK/one.jsonl" '"event":"fired"' 10 "$W"
wait_for_line "$WORK/one.jsonl" '"event":"action-end"' 10 "$W" >/dev/null
kill -INT "$W"
wait "$W"
check "one firing, of rule 1 (from the rules file), with the exception's type and message" jl_true "$WORK/one.jsonl" \
	"[(l['rule'], l['rule_text'], l['type'], l['message']) for l in L if l['event'] == 'fired'] == [(1, 'exception Clrtap.Fixtures.FixtureException', 'Clrtap.Fixtures.FixtureException', 'clrtap fixture exception')]"
check "the exec action ran with CLRTAP_WATCH_PID" grep -qx "fired-for-$ONE_PID" "$WORK"/one/1-exec-"$ONE_PID"/stdout.txt
check "--no-stacks: no stack, and the line says why" jl_true "$WORK/one.jsonl" \
	"[('stack' in l, l['stack_note']) for l in L if l['event'] == 'fired'] == [(False, 'not collected (--no-stacks)')]"
check "and so does exception.txt" python3 -c '
import sys; l = open(sys.argv[1]).read().splitlines()
sys.exit(0 if l == ["Clrtap.Fixtures.FixtureException: clrtap fixture exception", "   (no stack: --no-stacks)"] else 1)' \
	"$WORK/one/1-exec-$ONE_PID/exception.txt"
stop_fixture "$ONE_PID"

# 3. A throwing fixture (many throws): the trace shows the throwing method;
#    the cooldown (60 s) keeps the rule from firing a second time.
start_fixture exceptions --count 300000 --trigger "$WORK/go-many"
MANY_PID=$FIX_PID
"$CLRTAP" watch -p "$MANY_PID" 'exception Clrtap.Fixtures.FixtureException cooldown 60s' \
	--action trace:1s -o "$WORK/many" -d 30 >"$WORK/many.jsonl" 2>"$WORK/many.err" &
W=$!
wait_for_line "$WORK/many.jsonl" '"event":"watching"' 10 "$W" >/dev/null
sleep 2
touch "$WORK/go-many"
check "the rule fires" wait_for_line "$WORK/many.jsonl" '"event":"fired"' 10 "$W"
check "the trace action ends" wait_for_line "$WORK/many.jsonl" '"event":"action-end"' 30 "$W"
sleep 1
kill -INT "$W"
wait "$W"
check "the cooldown: one firing, later throws logged as suppressed" jl_true "$WORK/many.jsonl" \
	"sum(l['event'] == 'fired' for l in L) == 1 and sum(l['event'] == 'suppressed' for l in L) == 1"
TRACE=$WORK/many/1-trace-$MANY_PID/trace.nettrace
expect_exit "trace report reads the action's trace" 0 "$CLRTAP" trace report "$TRACE"
contains "the trace names the throwing method" "$OUT" "thrown in Clrtap.Fixtures.Thrower::ThrowOne"
stop_fixture "$MANY_PID"

# 4. A counter rule: gc-heap-size of the leak fixture crosses 40 MiB; the
#    gcdump taken then shows the leaking type on top.
start_fixture leak --per-second 20000 --trigger "$WORK/go-leak"
LEAK_PID=$FIX_PID
"$CLRTAP" watch -p "$LEAK_PID" 'System.Runtime/gc-heap-size > 40MB count 1' --action gcdump \
	-o "$WORK/leak" -d 40 >"$WORK/leak.jsonl" 2>"$WORK/leak.err" &
W=$!
wait_for_line "$WORK/leak.jsonl" '"event":"watching"' 10 "$W" >/dev/null
sleep 2
check "no firing before the leak starts" jl_true "$WORK/leak.jsonl" "not any(l['event'] == 'fired' for l in L)"
touch "$WORK/go-leak"
check "the gc-heap-size rule fires" wait_for_line "$WORK/leak.jsonl" '"event":"fired"' 30 "$W"
check "the gcdump action ends" wait_for_line "$WORK/leak.jsonl" '"event":"action-end"' 30 "$W"
kill -INT "$W"
wait "$W"
check "the firing value is over 40 MiB (the runtime's MB are 10^6 bytes)" jl_true "$WORK/leak.jsonl" \
	"[(l['units'], l['value'] * 1e6 > 40 * 1048576) for l in L if l['event'] == 'fired'] == [('MB', True)]"
check "the gcdump action ran the gcdump.collect task in a child (task_spawn)" jl_true "$WORK/leak.jsonl" \
	"[(l['task'], l['runs']) for l in L if l['event'] == 'action-start'] == [('gcdump.collect', 'child (task_spawn)')]"
check "its result.json is the task's result, naming its artifact" python3 -c '
import json, sys; d = json.load(open(sys.argv[1]))
sys.exit(0 if d["task"] == "gcdump.collect" and d["artifacts"] == ["snapshot.heap"] and d["pid"] == int(sys.argv[2]) and d["objects"] > 0 else 1)' \
	"$WORK/leak/1-gcdump-$LEAK_PID/result.json" "$LEAK_PID"
expect_exit "gcdump report reads the action's snapshot" 0 "$CLRTAP" gcdump report "$WORK/leak/1-gcdump-$LEAK_PID/snapshot.heap"
check "the leaking type retains the most" python3 -c '
import sys
rows = sys.argv[1].split("retained        shallow")[1].splitlines()[1]
sys.exit(0 if "Clrtap.Fixtures.LeakedItem" in rows else 1)' "$OUT"
stop_fixture "$LEAK_PID"

# 5. --all: fixtures started after watch, on the host and namespaced; the
#    host one dies while its profile runs, watch goes on to the other.
TAG="999.$((RANDOM % 900 + 100))"
"$CLRTAP" watch --all --match "--seconds $TAG" 'cpu > 30% for 300ms count 1' --action profile:4s \
	-o "$WORK/all" -d 60 >"$WORK/all.jsonl" 2>"$WORK/all.err" &
W=$!
sleep 1
start_fixture cpu-split --seconds "$TAG"
HOST_PID=$FIX_PID
check "--all: the host fixture started later is watched" wait_for_line "$WORK/all.jsonl" "\"event\":\"watching\",\"pid\":$HOST_PID," 10 "$W"
check "--all: its rule fires" wait_for_line "$WORK/all.jsonl" "\"event\":\"action-start\".*\"pid\":$HOST_PID," 10 "$W"
sleep 1
kill -KILL "$HOST_PID"
check "the action of the dead target ends with a clear line" wait_for_line "$WORK/all.jsonl" "\"event\":\"action-end\".*\"pid\":$HOST_PID," 20 "$W"
check "the log says the target exited while the action ran" jl_true "$WORK/all.jsonl" \
	"[(l['target_alive'], 'exited while the action ran' in l['note']) for l in L if l['event'] == 'action-end' and l['pid'] == $HOST_PID] == [(False, True)]"
contains "and so does stderr" "$(cat "$WORK/all.err")" "pid $HOST_PID exited while its profile action ran"
check "the partial artifact is kept: the flame graph of what was sampled before it died" \
	test -s "$(ls "$WORK"/all/*-profile-"$HOST_PID"/profile.folded 2>/dev/null | head -1)"
start_fixture_ns cpu-split --seconds "$TAG"
NS_PID=$FIX_PID
check "--all: the namespaced fixture started later is watched" wait_for_line "$WORK/all.jsonl" "\"event\":\"watching\",\"pid\":$NS_PID," 10 "$W"
check "--all: its rule fires (watch kept watching)" wait_for_line "$WORK/all.jsonl" "\"event\":\"action-end\".*\"pid\":$NS_PID," 20 "$W"
kill -INT "$W"
wait "$W"
equals "watch --all exits 0 on Ctrl-C" "$?" "0"
check "the namespaced target: its own pid namespace, nspid 1" jl_true "$WORK/all.jsonl" \
	"[(l['other_pidns'], l['nspid']) for l in L if l['event'] == 'watching' and l['pid'] == $NS_PID] == [(True, 1)]"
check "its profile succeeded and names HotA" grep -q 'Clrtap.Fixtures.CpuSplit::HotA' "$WORK"/all/*-profile-"$NS_PID"/profile.folded
check "only the two tagged fixtures were watched" jl_true "$WORK/all.jsonl" \
	"sorted(l['pid'] for l in L if l['event'] == 'watching') == sorted([$HOST_PID, $NS_PID])"
stop_fixture "$NS_PID"

# 6. Strings the target chooses (exception message, command line) reach the
#    log only escaped by the JSON writer, and stderr only through cli_safe.
start_fixture hostile-strings --count 2 --tag $'\e[2J\x9b' --trigger "$WORK/go-hostile"
HOS_PID=$FIX_PID
"$CLRTAP" watch -p "$HOS_PID" 'exception Clrtap.Fixtures.HostileException count 1' \
	-o "$WORK/hostile" -d 20 >"$WORK/hostile.jsonl" 2>"$WORK/hostile.err" &
W=$!
wait_for_line "$WORK/hostile.jsonl" '"event":"watching"' 10 "$W" >/dev/null
sleep 2
touch "$WORK/go-hostile"
check "the hostile exception fires" wait_for_line "$WORK/hostile.jsonl" '"event":"fired"' 10 "$W"
kill -INT "$W"
wait "$W"
check "no raw ESC or C1 byte in the log" python3 -c '
import sys; b = open(sys.argv[1], "rb").read(); sys.exit(1 if b"\x1b" in b or b"\xc2\x9b" in b else 0)' "$WORK/hostile.jsonl"
check "no raw ESC in stderr" python3 -c '
import sys; b = open(sys.argv[1], "rb").read(); sys.exit(1 if b"\x1b" in b else 0)' "$WORK/hostile.err"
check "the message comes back exactly from the JSON" jl_true "$WORK/hostile.jsonl" \
	"[l['message'].startswith('boom\x1b[31m \"q\" \\\\ a\r\nb\u2028c ') and l['message'].endswith(' d \U0001F600 end') for l in L if l['event'] == 'fired'] == [True]"
check "the command line too" jl_true "$WORK/hostile.jsonl" \
	"[l['cmdline'].endswith('\x1b[2J\udc9b --trigger $WORK/go-hostile') for l in L if l['event'] == 'watching'] == [True]"
stop_fixture "$HOS_PID"

# 7. SIGKILL of watch while its action runs: the action gets Ctrl-C (it
#    keeps what it has: task_spawn's PDEATHSIG), the target goes on unharmed.
start_fixture cpu-split
K_PID=$FIX_PID
"$CLRTAP" watch -p "$K_PID" 'cpu > 30% for 300ms count 1' --action profile:60s \
	-o "$WORK/kill" >"$WORK/kill.jsonl" 2>"$WORK/kill.err" &
W=$!
check "the profile action starts" wait_for_line "$WORK/kill.jsonl" '"event":"action-start"' 15 "$W"
sleep 2
CHILD=$(pgrep -P "$W" -f '__task profile' | head -1) # task_spawn's child
check "the action is a task_spawn child of watch" test -n "$CHILD"
kill -KILL "$W"
wait "$W" 2>/dev/null
gone=1
for ((i = 0; i < 200; i++)); do
	kill -0 "$CHILD" 2>/dev/null || { gone=0; break; }
	sleep 0.05
done
check "the action (pid $CHILD) ends within 10 s of watch's SIGKILL" test "$gone" -eq 0
check "it wrote the profile of what it had" grep -q 'Clrtap.Fixtures.CpuSplit::HotA' "$WORK"/kill/1-profile-"$K_PID"/profile.folded
check "the target is alive" kill -0 "$K_PID"
expect_exit "and answers clrtap stacks" 0 "$CLRTAP" stacks -p "$K_PID"
contains "its hot thread is still in CpuSplit" "$OUT" "Clrtap.Fixtures.CpuSplit::Run"
stop_fixture "$K_PID"

# 8. A diagnostics server whose session fails (tests/tools/fakeds): one
#    clear session-end line, the /proc rules go on, watch ends at -d.
for mode in stream-close stream-random; do
	"$TOOLS/fakeds" "$mode" >"$WORK/fakeds-$mode.out" 2>&1 &
	FD=$!
	KILL_PIDS+=("$FD")
	wait_for_line "$WORK/fakeds-$mode.out" '^READY' 10 "$FD" >/dev/null
	expect_exit "$mode: watch runs to its -d" 0 timeout 30 "$CLRTAP" watch -p "$FD" 'exception X' 'rss > 1' -d 3 -o "$WORK/fd-$mode"
	printf '%s\n' "$OUT" >"$WORK/fd-$mode.jsonl"
	check "$mode: one session-end line that says the session did not start" jl_true "$WORK/fd-$mode.jsonl" \
		"[l['error'].startswith('the session did not start: ') for l in L if l['event'] == 'session-end'] == [True]"
	check "$mode: the rss rule still fired" jl_true "$WORK/fd-$mode.jsonl" "any(l['event'] == 'fired' and l['trigger'] == 'rss' for l in L)"
	contains "$mode: stderr says the exception rules are off" "$ERR" "its counter and exception rules are off"
	kill "$FD"
done

# 9. Bad input: exit 2, a clear message, nothing run.
expect_exit "unknown trigger" 2 "$CLRTAP" watch -p 1 'gpu > 5'
contains "names the bad word" "$ERR" "rule 'gpu > 5': 'gpu': unknown trigger"
expect_exit "threshold missing" 2 "$CLRTAP" watch -p 1 'cpu >'
expect_exit "'for' on an instant trigger" 2 "$CLRTAP" watch -p 1 'exception X for 2s'
contains "says why" "$ERR" "'for' does not apply to 'exception'"
expect_exit "bad duration" 2 "$CLRTAP" watch -p 1 'cpu > 5 for 2y'
expect_exit "control byte in a rule" 2 "$CLRTAP" watch -p 1 $'cpu > 5\x1b[2J'
lacks "the control byte is not echoed raw" "$ERR" $'\x1b'
expect_exit "unknown action" 2 "$CLRTAP" watch -p 1 'cpu > 5' --action reboot
contains "lists the actions" "$ERR" "unknown action (profile[:DUR], stacks"
printf 'cpu > 5\ngpu > 5\n' >"$WORK/bad-rules.txt"
expect_exit "a bad rule in a rules file" 2 "$CLRTAP" watch -p 1 --rules "$WORK/bad-rules.txt"
contains "names file and line" "$ERR" "$WORK/bad-rules.txt:2: rule 'gpu > 5'"
expect_exit "a rules file over 64 KiB" 2 "$CLRTAP" watch -p 1 --rules /dev/zero
expect_exit "no rule" 2 "$CLRTAP" watch -p 1
expect_exit "no target" 2 "$CLRTAP" watch 'cpu > 5'
mkdir -p "$WORK/cwd"
cd "$WORK/cwd" || exit 1
expect_exit "-n of no process: exit 3" 3 "$CLRTAP" watch -n clrtap-no-such-process-$$ 'cpu > 5'
expect_exit "a pid that is not .NET: exit 4" 4 "$CLRTAP" watch -p "$$" 'cpu > 99 for 10s' -d 1
equals "no default output folder left behind when nothing fired" "$(ls -A "$WORK/cwd")" ""
cd - >/dev/null || exit 1
expect_exit "--match without --all" 2 "$CLRTAP" watch -p 1 --match x 'cpu > 5'
expect_exit "--all with -p" 2 "$CLRTAP" watch --all -p 1 'cpu > 5'

finish
