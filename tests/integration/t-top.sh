#!/usr/bin/env bash
# clrtap top: the live view on cpu-split names the hot method with a
# plausible share, refreshes once per second (-i/-n iterations), stops
# with -d, and restores the perf map.
. "$(dirname "$0")/lib.sh"
# test-run: alone

start_fixture cpu-split
expect_exit "top -i 3 (not a TTY: plain lines)" 0 "$CLRTAP" top -p "$FIX_PID" -i 3
echo "$OUT" | sed 's/^/    | /'
equals "three refreshes" "$(echo "$OUT" | grep -c '^clrtap top - pid ')" 3
equals "iteration markers" "$(echo "$OUT" | grep '^-- ' | tr '\n' ' ')" "-- 1 -- 2 -- 3 "
contains "header" "$OUT" "SELF%"
contains "hot method named" "$OUT" "Clrtap.Fixtures.CpuSplit::HotA"
# The last refresh: HotA's self share of HotA+HotB, about 75 %.
LAST=$(echo "$OUT" | awk '/^clrtap top/ { blk = "" } { blk = blk $0 "\n" } END { printf "%s", blk }')
A=$(echo "$LAST" | awk '$3 == "Clrtap.Fixtures.CpuSplit::HotA" { print $1 }')
B=$(echo "$LAST" | awk '$3 == "Clrtap.Fixtures.CpuSplit::HotB" { print $1 }')
echo "    last refresh: HotA $A %, HotB $B %"
check "HotA ranks above HotB" python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2] or 0) else 1)' "${A:-0}" "${B:-0}"
check "no kernel frames ranked by default" bash -c '! grep -q "\[k\] " <<<"$1"' _ "$OUT"

expect_exit "top -n 2 (a count, with -p)" 0 "$CLRTAP" top -p "$FIX_PID" -n 2
equals "-n 2: two refreshes" "$(echo "$OUT" | grep -c '^clrtap top - pid ')" 2
expect_exit "top -d 2" 0 "$CLRTAP" top -p "$FIX_PID" -d 2
equals "-d 2: two refreshes" "$(echo "$OUT" | grep -c '^clrtap top - pid ')" 2
# The one -d rule: a fraction is fine, -d 0 is "until Ctrl-C".
expect_exit "top -d 1.5" 0 "$CLRTAP" top -p "$FIX_PID" -d 1.5
equals "-d 1.5: a refresh at 1 s and the last one at 1.5 s" "$(echo "$OUT" | grep -c '^clrtap top - pid ')" 2
"$CLRTAP" top -p "$FIX_PID" -d 0 >"$WORK/top0.out" 2>&1 &
TOP0=$!
sleep 2.5
kill -INT "$TOP0"
wait "$TOP0"
equals "-d 0 runs until Ctrl-C, then exits 0" "$?" 0
check "-d 0: refreshed until Ctrl-C" test "$(grep -c '^clrtap top - pid ' "$WORK/top0.out")" -ge 2
expect_exit "top -d 1.5x is a usage error" 2 "$CLRTAP" top -p "$FIX_PID" -d 1.5x
ST=$("$CLRTAP" perfmap -p "$FIX_PID" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["perfmap"])')
equals "perf map off after top" "$ST" off
stop_fixture "$FIX_PID"
expect_exit "top on a dead pid" 3 "$CLRTAP" top -p "$FIX_PID" -i 1
finish
