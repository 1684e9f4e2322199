#!/usr/bin/env bash
# Runs every libFuzzer harness for a bounded time, seeded from its corpus in
# tests/data/<name>/ (committed real samples and corrupt variants).
# FUZZ_SECONDS (default 8) bounds each harness; FUZZ_JOBS (default: the
# number of CPUs) harnesses run at once, each on one core.
set -u
outdir=$1
shift
secs=${FUZZ_SECONDS:-8}
jobs=${FUZZ_JOBS:-$(nproc)}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1

# One harness: its verdict goes to $outdir/<name>.verdict.
run_one() {
	local f=$1 name corpus seeds=() runs
	name=$(basename "$f" _fuzz)
	corpus="$outdir/corpus/$name"
	mkdir -p "$corpus"
	[ -d "tests/data/$name" ] && seeds+=("tests/data/$name")
	if "$f" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=1024 -timeout=10 \
		-print_final_stats=0 "$corpus" "${seeds[@]}" >"$outdir/$name.log" 2>&1; then
		runs=$(grep -o 'Done [0-9]* runs' "$outdir/$name.log" | tail -1)
		echo "ok ${runs:-no count}" >"$outdir/$name.verdict"
	else
		echo "FAILED" >"$outdir/$name.verdict"
	fi
}

running=0
for f in "$@"; do
	rm -f "$outdir/$(basename "$f" _fuzz).verdict"
	run_one "$f" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
done
wait

pass=0
fail=0
for f in "$@"; do
	name=$(basename "$f" _fuzz)
	v=$(cat "$outdir/$name.verdict" 2>/dev/null || echo FAILED)
	if [ "${v%% *}" = ok ]; then
		echo "fuzz: $name: ok (${v#ok })"
		pass=$((pass + 1))
	else
		tail -40 "$outdir/$name.log"
		echo "fuzz: $name: FAILED (log $outdir/$name.log)"
		fail=$((fail + 1))
	fi
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
