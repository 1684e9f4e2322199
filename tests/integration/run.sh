#!/usr/bin/env bash
# Runs every tests/integration/t-*.sh (or those named on the command line),
# each in its own process, and prints a closing "N passed, N failed, N
# skipped" line counted over all assertions. A skipped check (lib.sh's skip:
# TAP "# SKIP", something this machine cannot do) is counted apart, never as
# a pass.
#
# TEST_JOBS tests run at once (default: two per CPU, at most 4: most of a
# test's time is spent waiting for a target's duration, not on a CPU).
# A test whose file has the line "# test-run: alone" runs with no other test
# beside it: its facts depend on having the machine's CPUs (shares of
# samples, time bounds) or on the set of .NET processes on the host (ps,
# --all, -n). Alone tests run first, then the others in parallel; each
# test's output is printed whole when it ends.
set -u
cd "$(dirname "$0")"
export CLRTAP TOOLS

tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
	tests=(t-*.sh)
fi
jobs=${TEST_JOBS:-}
if [ -z "$jobs" ]; then
	jobs=$(($(nproc 2>/dev/null || echo 1) * 2))
	[ "$jobs" -gt 4 ] && jobs=4
fi
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1

outdir=$(mktemp -d /tmp/clrtap-run.XXXXXX)
trap 'rm -rf "$outdir"' EXIT

alone=()
shared=()
for t in "${tests[@]}"; do
	if grep -qx '# test-run: alone' "$t" 2>/dev/null; then alone+=("$t"); else shared+=("$t"); fi
done

# run_one T: runs test T, leaves its output, exit code and seconds in $outdir.
run_one() {
	local t=$1 start rc
	start=$(date +%s)
	bash "$t" >"$outdir/$t.out" 2>&1
	rc=$?
	echo "$rc $(($(date +%s) - start))" >"$outdir/$t.rc"
}

pass=0
fail=0
skipped=0
broken=()
# report T: prints test T's lines and adds up its counts.
report() {
	local t=$1 out rc secs line p f s
	out=$(cat "$outdir/$t.out")
	read -r rc secs <"$outdir/$t.rc"
	printf '%s\n' "$out" | grep -E '^(ok|not ok|    )'
	line=$(printf '%s\n' "$out" | grep -E '^[a-z0-9-]+: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' | tail -1)
	p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')
	f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
	s=$(echo "$line" | sed -E 's/.* ([0-9]+) skipped$/\1/')
	p=${p:-0}
	f=${f:-0}
	s=${s:-0}
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		# died before counting its failures
		f=1
		printf '%s\n' "$out" | tail -20
	fi
	pass=$((pass + p))
	fail=$((fail + f))
	skipped=$((skipped + s))
	[ "$rc" -ne 0 ] && broken+=("$t")
	echo "# $t: $p passed, $f failed, $s skipped (${secs}s)"
}

for t in "${alone[@]}"; do
	run_one "$t"
	report "$t"
done

# the others, $jobs at a time, reported as they end
declare -A running=()
# reap N: waits until fewer than N tests run, reporting those that ended.
reap() {
	local r
	while [ ${#running[@]} -ge "$1" ]; do
		wait -n
		for r in "${!running[@]}"; do
			if [ -e "$outdir/$r.rc" ]; then
				wait "${running[$r]}" 2>/dev/null
				unset "running[$r]"
				report "$r"
			fi
		done
	done
}
for t in "${shared[@]}"; do
	reap "$jobs"
	run_one "$t" &
	running[$t]=$!
done
reap 1

[ ${#broken[@]} -gt 0 ] && echo "# failing: ${broken[*]}"
echo "integration: $pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
