#!/usr/bin/env bash
# -d 0 is one rule for every command that runs for a time (issue 19): it
# runs until Ctrl-C (or SIGTERM), which ends it normally: exit 0 and a
# complete result (docs/cmd/*.md, "the one rule for -d of every command").
# (analyze leaks, which compares snapshots over -d, refuses -d 0: t-analyze.sh.)
# The target is the sample
# app in `hostile` mode on the host: HostileThrower::Throw throws and
# catches an InvalidOperationException every 50 ms.
. "$(dirname "$0")/lib.sh"

# py_true FILE EXPR: EXPR over the JSON in FILE (d) is true.
py_true() {
	[ "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2")" == True ]
}

start_fixture hostile
P=$FIX_PID

# until_int NAME CMD...: CMD in the background; once it holds a socket (the
# session) or a perf event (sampling, breakpoints), 2.5 s more, then SIGINT;
# RC, OUT, ERR.
until_int() {
	local name=$1 c i
	shift
	"$@" >"$WORK/out" 2>"$WORK/err" &
	c=$!
	for ((i = 0; i < 600; i++)); do
		ls -l "/proc/$c/fd" 2>/dev/null | grep -qE 'socket:|perf_event' && break
		kill -0 "$c" 2>/dev/null || break
		sleep 0.05
	done
	sleep 2.5
	kill -INT "$c"
	wait "$c"
	RC=$?
	OUT=$(cat "$WORK/out")
	ERR=$(cat "$WORK/err")
	equals "$name: Ctrl-C ends it, exit 0" "$RC" 0
}

until_int "trace collect -d 0" "$CLRTAP" trace collect -p "$P" --profile exceptions -d 0 -o "$WORK/t.nettrace"
expect_exit "trace collect -d 0: the report" 0 "$CLRTAP" trace report "$WORK/t.nettrace" --json
equals "trace collect -d 0: the trace is complete" "$(json_get "$OUT" 'd["complete"]')" True
check "trace collect -d 0: exceptions in it" test "$(json_get "$OUT" 'd["exceptions"]["total"]')" -gt 10

until_int "counters collect -d 0" "$CLRTAP" counters collect -p "$P" -d 0 -o "$WORK/c.csv"
check "counters collect -d 0: values written" test "$(grep -c 'exception-count' "$WORK/c.csv")" -gt 0

# --wall: the fixture is mostly asleep, so on-CPU samples in 2.5 s may be none
until_int "profile -d 0" "$CLRTAP" profile -p "$P" -d 0 --wall -o "$WORK/p.folded"
check "profile -d 0: stacks written" test -s "$WORK/p.folded"
lacks "profile -d 0: not partial" "$ERR" "partial"

until_int "top -d 0" "$CLRTAP" top -p "$P" -d 0
contains "top -d 0: the process shown" "$OUT" "$P"

until_int "probe -d 0" "$CLRTAP" probe -p "$P" -d 0 'Clrtap.Fixtures.HostileThrower::Throw'
check "probe -d 0: calls seen" grep -qE 'Throw[^:]*: [1-9][0-9]* calls' "$WORK/err"

until_int "watch -d 0" "$CLRTAP" watch -p "$P" -d 0 'exception System.InvalidOperationException count 1'
check "watch -d 0: fired, then ended" jl_true "$WORK/out" \
	"[l['event'] for l in L if l['event'] in ('fired', 'end')] == ['fired', 'end']"

until_int "analyze -d 0" "$CLRTAP" analyze -p "$P" exceptions -d 0 --json
contains "analyze -d 0: says until Ctrl-C" "$ERR" "until Ctrl-C"
check "analyze -d 0: the exceptions counted, not partial" py_true "$WORK/out" \
	'd["result"]["total"] > 10 and not d["partial"]'

until_int "doctor -d 0" "$CLRTAP" doctor -p "$P" -d 0 --json
contains "doctor -d 0: says until Ctrl-C" "$ERR" "until Ctrl-C"
check "doctor -d 0: the exceptions found" py_true "$WORK/out" \
	'any(f["analyzer"] == "exceptions" for f in d["findings"]) and not d["partial"]'

for cmd in "trace collect" "counters collect" "counters monitor" profile top probe watch analyze doctor; do
	# shellcheck disable=SC2086
	expect_exit "$cmd -d -1 is a usage error" 2 "$CLRTAP" $cmd -p "$P" -d -1
done

stop_fixture "$P"
finish
