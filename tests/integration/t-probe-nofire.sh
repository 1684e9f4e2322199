#!/usr/bin/env bash
# The probe tests' "hardware breakpoints do not fire here" branches, run on
# every machine. t-probe, t-probe-sigs, t-probe-tier and t-probe-budget ask tests/tools/
# hwbpcheck which kind of machine they are on and assert the matching facts;
# where breakpoints fire, their other branch never runs, and a mistake in it
# would show only on a machine of the other kind. Here they run as on such a
# machine: hwbpcheck answers "silent 0/1000" and clrtap finds its own
# self-test result for this boot, "silent" (the per-boot cache in
# CLRTAP_CACHE_DIR, the file clrtap itself writes), so clrtap's real code
# path (not the CLRTAP_TEST_MECH_HWBP override) prints what it cannot see.
. "$(dirname "$0")/lib.sh"

DIR=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$WORK/tools" "$WORK/cache"
for f in "$TOOLS"/*; do ln -s "$f" "$WORK/tools/"; done
rm -f "$WORK/tools/hwbpcheck"
printf '#!/bin/sh\necho "silent 0/1000"\n' >"$WORK/tools/hwbpcheck"
chmod 755 "$WORK/tools/hwbpcheck"
echo "$(cat /proc/sys/kernel/random/boot_id) silent 1000 0 0" >"$WORK/cache/mech-hwbp"

for t in t-probe t-probe-sigs t-probe-tier t-probe-budget; do
	env TOOLS="$WORK/tools" CLRTAP_CACHE_DIR="$WORK/cache" bash "$DIR/$t.sh" >"$WORK/$t.out" 2>&1
	rc=$?
	contains "$t: ran as on a machine where breakpoints do not fire" "$(cat "$WORK/$t.out")" \
		"this machine: hardware execute breakpoints: silent 0/1000"
	line=$(grep -E "^$t: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$" "$WORK/$t.out")
	if [ "$rc" -eq 0 ] && [[ $line == *" 0 failed, "* ]]; then
		ok "$t, breakpoints not firing: ${line#"$t: "}"
	else
		not_ok "$t, breakpoints not firing: exit $rc, ${line:-no count}" \
			"$(grep -A3 '^not ok' "$WORK/$t.out" | head -40)"
	fi
done
check "the cached self-test result left as written (clrtap read it, did not redo it)" \
	grep -qx "$(cat /proc/sys/kernel/random/boot_id) silent 1000 0 0" "$WORK/cache/mech-hwbp"
finish
