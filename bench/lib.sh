#!/usr/bin/env bash
# Helpers the bench scripts share (sourced, not run): tool install, waiting
# for a fixture's line, median timing. bench/run.sh runs bench-*.sh only.

# need_tool NAME: installs the dotnet global tool NAME into $TOOLS from NuGet
# when missing; says so (and returns 1) when the registry does not serve it.
need_tool() {
	[ -x "$TOOLS/$1" ] && return 0
	dotnet tool install --tool-path "$TOOLS" "$1" >/dev/null 2>&1 && return 0
	echo "note: $1 is not served by the NuGet registry here; left out"
	return 1
}

# wait_line FILE PATTERN SECONDS: until FILE has a line matching PATTERN.
wait_line() {
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# median_ms CMD...: median wall time of RUNS runs of CMD, in milliseconds.
median_ms() {
	local t=() i s e
	for ((i = 0; i < RUNS; i++)); do
		s=$(date +%s%N)
		"$@" >/dev/null 2>&1
		e=$(date +%s%N)
		t+=($(((e - s) / 1000)))
	done
	printf '%s\n' "${t[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'
}

# bench_setup: sets CLRTAP, DLL (the fixture) and TOOLS (dotnet tools) unless
# given, $out (a temporary directory) and pids=() (processes the script
# starts); at exit the processes get SIGTERM, then SIGKILL, and $out goes.
# Needs ROOT.
bench_setup() {
	CLRTAP=${CLRTAP:-$ROOT/build/clrtap}
	DLL=${DLL:-$ROOT/build/fixtures/sample/sample.dll}
	TOOLS=${TOOLS:-$ROOT/build/tools}
	out=$(mktemp -d)
	pids=()
	trap bench_cleanup EXIT
}

bench_cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 1
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$out"
}
