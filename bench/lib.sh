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
