#!/usr/bin/env bash
# clrtap perfmap on/off: a named fixture method appears in the runtime's perf
# map after 'on'; after 'off' newly compiled methods do not.
. "$(dirname "$0")/lib.sh"

run_case() {
	local label=$1 map=$2
	local port=$PORT
	curl -sf "http://127.0.0.1:$port/api/fibonacci?pos=3" >/dev/null
	expect_exit "$label: perfmap on" 0 "$CLRTAP" perfmap -p "$FIX_PID" on
	contains "$label: on reported" "$OUT" "perf map: on"
	contains "$label: map path from here" "$OUT" "$map"
	check "$label: map file exists" test -s "$map"
	contains "$label: JIT'd fixture method in the map" "$(cat "$map")" "Clrtap.Fixtures.FibonacciProvider::CalculateFibonacciValue"
	expect_exit "$label: perfmap status" 0 "$CLRTAP" perfmap -p "$FIX_PID" status --json
	equals "$label: status on" "$(json_get "$OUT" "d['perfmap']")" on
	expect_exit "$label: perfmap off" 0 "$CLRTAP" perfmap -p "$FIX_PID" off
	contains "$label: off reported" "$OUT" "perf map: off"
	curl -sf "http://127.0.0.1:$port/api/jit-late" >/dev/null
	sleep 0.5
	lacks "$label: method compiled after 'off' is not in the map" "$(cat "$map")" "LateJitTarget"
	expect_exit "$label: perfmap on again" 0 "$CLRTAP" perfmap -p "$FIX_PID" on --type perfmap
	contains "$label: 'on' writes methods compiled while off" "$(cat "$map")" "Clrtap.Fixtures.LateJit::LateJitTarget"
	expect_exit "$label: perfmap off again" 0 "$CLRTAP" perfmap -p "$FIX_PID" off
}

PORT=$(free_port)
start_fixture web --port "$PORT"
run_case host "/tmp/perf-$FIX_PID.map"
rm -f "/tmp/perf-$FIX_PID.map" "/tmp/jit-$FIX_PID.dump"

PORT=$(free_port)
start_fixture_ns web --port "$PORT"
# the namespace has its own network stack? no: unshare keeps the host's network.
run_case namespaced "/proc/$FIX_PID/root/tmp/perf-1.map"

expect_exit "bad action" 2 "$CLRTAP" perfmap -p "$FIX_PID" sideways
expect_exit "bad type" 2 "$CLRTAP" perfmap -p "$FIX_PID" on --type nope
finish
