#!/usr/bin/env bash
# clrtap trace collect: an EventPipe session written to a complete .nettrace
# file; stopped by duration or Ctrl-C; SIGKILL of clrtap leaves the target
# healthy and a new session possible; works on a namespaced fixture.
. "$(dirname "$0")/lib.sh"

MSG="clrtap fixture exception"
complete_nettrace() {
	[ "$(head -c 8 "$1")" = "Nettrace" ] && [ "$(tail -c 1 "$1" | od -An -tu1 | tr -d ' ')" = 1 ]
}
# Exceptions as lib/nettrace decodes them from the file (tests/tools/ntcount).
count_msgs() {
	"$TOOLS/ntcount" "$1" | grep -c "^exception Clrtap.Fixtures.FixtureException: $MSG\$"
}
reads_clean() {
	"$TOOLS/ntcount" "$1" | grep -q '^end ok$'
}

# 1. N exceptions thrown during the session: all of them are in the file.
N=37
start_fixture exceptions --count $N --trigger "$WORK/go1"
( sleep 1.5; touch "$WORK/go1" ) &
expect_exit "collect exceptions for 4 s" 0 "$CLRTAP" trace collect -p "$FIX_PID" --profile exceptions -d 4 -o "$WORK/ex.nettrace"
wait_for_line "$FIX_OUT" "^DONE thrown=$N" 5
check "file is a complete nettrace stream" complete_nettrace "$WORK/ex.nettrace"
check "lib/nettrace reads the whole file without error" reads_clean "$WORK/ex.nettrace"
equals "all $N exceptions decoded with type and message" "$(count_msgs "$WORK/ex.nettrace")" $N
contains "the exception type is recorded" "$(strings -el "$WORK/ex.nettrace" | grep -m1 FixtureException)" "Clrtap.Fixtures.FixtureException"

# 2. Ctrl-C (SIGINT) stops cleanly with a complete file.
"$CLRTAP" trace collect -p "$FIX_PID" --providers "Microsoft-Windows-DotNETRuntime:0x8018:4" -o "$WORK/int.nettrace" 2>"$WORK/int.err" &
COL=$!
sleep 2
kill -INT "$COL"
wait "$COL"
equals "SIGINT: exit code" "$?" 0
check "SIGINT: file is complete" complete_nettrace "$WORK/int.nettrace"
check "SIGINT: lib/nettrace reads it cleanly" reads_clean "$WORK/int.nettrace"

# 3. SIGKILL of clrtap mid-session: the target keeps running and answering,
#    and a new session works.
"$CLRTAP" trace collect -p "$FIX_PID" --profile cpu-sampling -o "$WORK/killed.nettrace" 2>/dev/null &
COL=$!
sleep 2
kill -KILL "$COL"
wait "$COL" 2>/dev/null
sleep 1
kill -0 "$FIX_PID" && ok "target alive after clrtap was killed" || not_ok "target alive after clrtap was killed"
expect_exit "target still answers" 0 "$CLRTAP" info -p "$FIX_PID" --json
expect_exit "a new session after the kill" 0 "$CLRTAP" trace collect -p "$FIX_PID" --profile gc-collect -d 2 -o "$WORK/after.nettrace"
check "new session file complete" complete_nettrace "$WORK/after.nettrace"
stop_fixture "$FIX_PID"

# 4. A fixture in its own PID + mount namespace, traced from the host.
# (its /tmp is private: the trigger file is made through /proc/PID/root)
start_fixture_ns exceptions --count 11 --trigger /tmp/go2
( sleep 1.5; touch "/proc/$FIX_PID/root/tmp/go2" ) &
expect_exit "collect from a namespaced fixture" 0 "$CLRTAP" trace collect -p "$FIX_PID" --profile exceptions -d 4 -o "$WORK/ns.nettrace"
check "namespaced: complete file" complete_nettrace "$WORK/ns.nettrace"
equals "namespaced: all 11 exceptions decoded" "$(count_msgs "$WORK/ns.nettrace")" 11

# 5. Bad input.
expect_exit "unknown profile" 2 "$CLRTAP" trace collect -p "$FIX_PID" --profile nope
expect_exit "bad provider level" 2 "$CLRTAP" trace collect -p "$FIX_PID" --providers "X:0x1:9"
expect_exit "bad provider keywords" 2 "$CLRTAP" trace collect -p "$FIX_PID" --providers "X:zz"
expect_exit "unwritable output" 1 "$CLRTAP" trace collect -p "$FIX_PID" -d 1 -o /proc/none/x.nettrace
sh -c 'exit 0' &
DEAD=$!
wait "$DEAD"
expect_exit "dead pid" 3 "$CLRTAP" trace collect -p "$DEAD" -d 1 -o "$WORK/dead.nettrace"
expect_exit "list profiles" 0 "$CLRTAP" trace collect --list-profiles
contains "profiles listed" "$OUT" "gc-verbose"
finish
