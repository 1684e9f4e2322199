#!/usr/bin/env bash
# Bad input: dead pid, non-.NET pid, a pid of another user while clrtap runs
# unprivileged, and a fake diagnostics server answering with corrupt or
# oversized frames. Each gives one clear line and a documented exit code,
# never a crash or a hang.
. "$(dirname "$0")/lib.sh"

# Exit codes (docs/cmd/exit-codes.md)
E_USAGE=2 E_NOPROC=3 E_NOTNET=4 E_PERM=5 E_PROTO=6 E_RUNTIME=7

one_line() {
	local n
	n=$(printf '%s\n' "$ERR" | grep -c .)
	if [ "$n" -eq 1 ] && [[ "$ERR" == clrtap:* ]]; then ok "$1: one clear line"; else not_ok "$1: one clear line" "stderr: $ERR"; fi
}

# A dead pid.
sh -c 'exit 0' &
DEAD=$!
wait "$DEAD"
for cmd in info "perfmap on" "dump --type mini"; do
	# shellcheck disable=SC2086
	expect_exit "$cmd: dead pid" $E_NOPROC "$CLRTAP" $cmd -p "$DEAD"
	one_line "$cmd: dead pid"
	contains "$cmd: dead pid message" "$ERR" "no process with pid $DEAD"
done

# A live process that is not .NET.
sleep 300 &
SLEEPER=$!
KILL_PIDS+=("$SLEEPER")
expect_exit "info: non-.NET pid" $E_NOTNET "$CLRTAP" info -p "$SLEEPER"
one_line "non-.NET pid"
contains "non-.NET message" "$ERR" "is not a .NET process"
expect_exit "-n with no such name" $E_NOPROC "$CLRTAP" info -n no-such-process-name-xyz
expect_exit "-n matching only non-.NET processes" $E_NOTNET "$CLRTAP" info -n sleep

# Usage errors.
expect_exit "no target" $E_USAGE "$CLRTAP" info
expect_exit "bad pid" $E_USAGE "$CLRTAP" info -p 12abc
expect_exit "unknown option" $E_USAGE "$CLRTAP" info --bogus
expect_exit "unknown command" $E_USAGE "$CLRTAP" inof
contains "suggests the near command" "$ERR" "did you mean 'info'?"

# Another user's process while clrtap runs unprivileged.
if id nobody >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
	start_fixture idle
	expect_exit "unprivileged info on root's process" $E_PERM \
		setpriv --reuid=nobody --regid=nogroup --clear-groups "$CLRTAP" info -p "$FIX_PID"
	one_line "permission"
	contains "permission message names the fix" "$ERR" "CAP_SYS_PTRACE"
	expect_exit "unprivileged ps" 0 \
		setpriv --reuid=nobody --regid=nogroup --clear-groups "$CLRTAP" ps --json
	equals "unprivileged ps lists root's fixture as not reachable" \
		"$(json_get "$OUT" "[r['status'] for r in d if r['pid']==$FIX_PID][0]")" "permission denied"
	stop_fixture "$FIX_PID"
else
	not_ok "permission tests need root and a 'nobody' user"
fi

# A fake server with broken replies.
fake() {
	local mode=$1
	local out="$WORK/fake-$mode-$RANDOM.out"
	"$TOOLS/fakeds" "$mode" >"$out" 2>&1 &
	FAKE_PID=$!
	KILL_PIDS+=("$FAKE_PID")
	wait_for_line "$out" '^READY' 10 "$FAKE_PID"
}
for spec in "garbage:$E_PROTO" "truncated:$E_PROTO" "oversize:$E_PROTO" "hang:$E_PROTO" \
	"close:$E_PROTO" "badstring:$E_PROTO" "error:$E_RUNTIME" "wrongset:$E_PROTO"; do
	mode=${spec%%:*}
	want=${spec##*:}
	fake "$mode"
	start=$(date +%s)
	expect_exit "fake server '$mode'" "$want" timeout 20 "$CLRTAP" info -p "$FAKE_PID" --timeout 1s
	one_line "fake server '$mode'"
	took=$(($(date +%s) - start))
	[ "$took" -le 5 ] && ok "fake server '$mode' answered within the timeout" || not_ok "fake server '$mode' took ${took}s"
	kill -TERM "$FAKE_PID"
	wait "$FAKE_PID" 2>/dev/null
done
contains "unknown HRESULT is shown in hex" "$(fake error; "$CLRTAP" info -p "$FAKE_PID" 2>&1; kill -TERM $FAKE_PID)" "0x8badf00d"

# A runtime whose ProcessInfo names another pid is not the target (exit 10):
# both pids named, nothing of it shown.
fake wrongpid
expect_exit "ProcessInfo naming another pid" 10 "$CLRTAP" info -p "$FAKE_PID" --timeout 1s
one_line "ProcessInfo naming another pid"
contains "names both pids" "$ERR" "says it is pid 424242, the target is pid $FAKE_PID"
lacks "shows nothing of it" "$OUT" "fake"
expect_exit "ps lists it as refused" 0 "$CLRTAP" ps --json --timeout 1s
equals "ps: not the target's socket" "$(json_get "$OUT" "[r['status'] for r in d if r['pid']==$FAKE_PID][0]")" "refused: not the target's socket"
kill -TERM "$FAKE_PID"
wait "$FAKE_PID" 2>/dev/null

fake hugeenv
expect_exit "oversized environment block refused" $E_PROTO "$CLRTAP" info -p "$FAKE_PID" --env --timeout 1s
kill -TERM "$FAKE_PID"
wait "$FAKE_PID" 2>/dev/null

# ps shows a server that does not answer as not responding, not live.
fake hang
expect_exit "ps with a hanging server" 0 timeout 20 "$CLRTAP" ps --json --timeout 500ms
equals "hanging server listed as not responding" "$(json_get "$OUT" "[r['status'] for r in d if r['pid']==$FAKE_PID][0]")" "not responding"
finish
