#!/usr/bin/env bash
# probe leaves the target's perf map as it found it: after --list, after
# Ctrl-C, after SIGKILL (its watcher), with no perf-map file it created left;
# two clrtap processes on one target do not switch the map off under each
# other (the lease in /run/clrtap); a map the user turned on stays on.
. "$(dirname "$0")/lib.sh"

start_fixture probe-warm --calls 100000 --interval-ms 2 --trigger "$WORK/trig"
touch "$WORK/trig"
MAP=/tmp/perf-$FIX_PID.map
state() { "$CLRTAP" perfmap -p "$FIX_PID" status 2>&1 | head -1; }
# the probe's own kind of session on JIT code or, where breakpoints do not fire, on R2R code
PAT='System.Convert::ToString(int32,int32)'

equals "found: off" "$(state)" "perf map: off"
check "found: no map file" test ! -e "$MAP"

expect_exit "--list" 0 "$CLRTAP" probe -p "$FIX_PID" --list '*::AddInts'
contains "--list saw the JIT code (map was on for it)" "$OUT" "    JIT  0x"
equals "--list: off again" "$(state)" "perf map: off"
check "--list: its map file removed" test ! -e "$MAP"

# SIGKILL mid-probe: the watcher restores
"$CLRTAP" probe -p "$FIX_PID" --count "$PAT" >/dev/null 2>"$WORK/k.err" &
K=$!
wait_for_line "$WORK/k.err" 'tracing' 20 "$K" >/dev/null
equals "probing: on" "$(state)" "perf map: on"
check "probing: map file there" test -e "$MAP"
W=$(pgrep -P "$K" -x clrtap-perfmap)
check "probing: a watcher runs" test -n "$W"
kill -KILL "$K"
wait "$K" 2>/dev/null
for _ in $(seq 1 50); do [ "$(state)" = "perf map: off" ] && break; sleep 0.1; done
equals "after SIGKILL: off again" "$(state)" "perf map: off"
check "after SIGKILL: no map file it created" test ! -e "$MAP"
check "after SIGKILL: the watcher is gone" bash -c "! kill -0 ${W:-0} 2>/dev/null || grep -q '^State:.*Z' /proc/${W:-0}/status"

# two clrtap processes: the first to end does not switch the map off under the second
"$CLRTAP" probe -p "$FIX_PID" -d 60 --count "$PAT" >/dev/null 2>"$WORK/a.err" &
A=$!
wait_for_line "$WORK/a.err" 'tracing' 20 "$A" >/dev/null
"$CLRTAP" probe -p "$FIX_PID" -d 60 --count "$PAT" >/dev/null 2>"$WORK/b.err" &
B=$!
wait_for_line "$WORK/b.err" 'tracing' 20 "$B" >/dev/null
expect_exit "a third one lists meanwhile" 0 "$CLRTAP" probe -p "$FIX_PID" --list '*::AddInts'
equals "two sessions + a --list: still on" "$(state)" "perf map: on"
kill -INT "$A"
wait "$A"
equals "first ended, second still probing: still on" "$(state)" "perf map: on"
check "first ended: map file kept for the second" test -e "$MAP"
kill -KILL "$B"
wait "$B" 2>/dev/null
for _ in $(seq 1 50); do [ "$(state)" = "perf map: off" ] && break; sleep 0.1; done
equals "last one killed: off" "$(state)" "perf map: off"
check "last one killed: no map file" test ! -e "$MAP"
check "no lease left" bash -c "! ls /run/clrtap/perfmap-$FIX_PID-* 2>/dev/null | grep -q ."

# the user's own setting is left alone
"$CLRTAP" perfmap -p "$FIX_PID" on >/dev/null
expect_exit "--list with the map on already" 0 "$CLRTAP" probe -p "$FIX_PID" --list '*::AddInts'
equals "user's map: still on" "$(state)" "perf map: on"
# ... also when the probe is SIGKILLed: its watcher leaves the map on, the file there
"$CLRTAP" probe -p "$FIX_PID" --count "$PAT" >/dev/null 2>"$WORK/u.err" &
U=$!
wait_for_line "$WORK/u.err" 'tracing' 20 "$U" >/dev/null
W=$(pgrep -P "$U" -x clrtap-perfmap)
check "user's map: a watcher runs" test -n "$W"
kill -KILL "$U"
wait "$U" 2>/dev/null
for _ in $(seq 1 50); do kill -0 "${W:-0}" 2>/dev/null || break; sleep 0.1; done
check "user's map, probe SIGKILLed: its watcher is gone" bash -c "! kill -0 ${W:-0} 2>/dev/null || grep -q '^State:.*Z' /proc/${W:-0}/status"
equals "user's map, probe SIGKILLed: still on" "$(state)" "perf map: on"
check "user's map, probe SIGKILLed: the map file kept" test -s "$MAP"
"$CLRTAP" perfmap -p "$FIX_PID" off >/dev/null
rm -f "$MAP" "/tmp/jit-$FIX_PID.dump"
stop_fixture "$FIX_PID"

finish
