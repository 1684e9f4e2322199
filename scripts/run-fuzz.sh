#!/usr/bin/env bash
# Runs every libFuzzer harness for a bounded time, seeded from its corpus in
# tests/data/<name>/ (committed real samples and corrupt variants).
# FUZZ_SECONDS (default 15) bounds each harness.
set -u
outdir=$1
shift
secs=${FUZZ_SECONDS:-15}
pass=0
fail=0
for f in "$@"; do
	name=$(basename "$f" _fuzz)
	corpus="$outdir/corpus/$name"
	mkdir -p "$corpus"
	seeds=()
	[ -d "tests/data/$name" ] && seeds+=("tests/data/$name")
	if "$f" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=1024 -timeout=10 \
		-print_final_stats=0 "$corpus" "${seeds[@]}" >"$outdir/$name.log" 2>&1; then
		runs=$(grep -o 'Done [0-9]* runs' "$outdir/$name.log" | tail -1)
		echo "fuzz: $name: ok (${runs:-no count})"
		pass=$((pass + 1))
	else
		tail -40 "$outdir/$name.log"
		echo "fuzz: $name: FAILED (log $outdir/$name.log)"
		fail=$((fail + 1))
	fi
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
