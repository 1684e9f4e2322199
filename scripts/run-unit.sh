#!/usr/bin/env bash
# Runs each cmocka unit test binary given on the command line and prints a
# closing "N passed, N failed" line (counted per test case).
set -u
pass=0
fail=0
for t in "$@"; do
	out=$("$t" 2>&1)
	rc=$?
	p=$(printf '%s\n' "$out" | grep -c '^\[       OK \]')
	f=$(printf '%s\n' "$out" | grep -c '^\[  FAILED  \] [^0-9]')
	pass=$((pass + p))
	if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
	fi
	fail=$((fail + f))
	if [ $rc -ne 0 ]; then
		printf '%s\n' "$out"
		echo "unit: $t failed (exit $rc)"
	else
		echo "unit: $(basename "$t"): $p ok"
	fi
done
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
