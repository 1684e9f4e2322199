#!/usr/bin/env bash
# Runs every tests/integration/t-*.sh (or those named on the command line),
# each in its own process, and prints a closing "N passed, N failed" line
# counted over all assertions.
set -u
cd "$(dirname "$0")"
export CLRTAP TOOLS

tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
	tests=(t-*.sh)
fi

pass=0
fail=0
broken=()
for t in "${tests[@]}"; do
	start=$(date +%s)
	out=$(bash "$t" 2>&1)
	rc=$?
	secs=$(($(date +%s) - start))
	printf '%s\n' "$out" | grep -E '^(ok|not ok|    )' 
	line=$(printf '%s\n' "$out" | grep -E '^[a-z0-9-]+: [0-9]+ passed, [0-9]+ failed$' | tail -1)
	p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')
	f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed$/\1/')
	p=${p:-0}
	f=${f:-0}
	if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
		# died before counting its failures
		f=1
		printf '%s\n' "$out" | tail -20
	fi
	pass=$((pass + p))
	fail=$((fail + f))
	[ $rc -ne 0 ] && broken+=("$t")
	echo "# $t: $p passed, $f failed (${secs}s)"
done
[ ${#broken[@]} -gt 0 ] && echo "# failing: ${broken[*]}"
echo "integration: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
