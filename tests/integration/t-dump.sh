#!/usr/bin/env bash
# clrtap dump: a heap dump is an ELF core, for a host fixture and for one in
# its own mount namespace (copied out through /proc/PID/root).
. "$(dirname "$0")/lib.sh"

core_is_elf() {
	readelf -h "$1" 2>/dev/null | grep -q 'Type:.*CORE'
}

start_fixture idle
expect_exit "heap dump of a host fixture" 0 "$CLRTAP" dump -p "$FIX_PID" --type heap -o "$WORK/host.core" --json
check "host dump is an ELF core" core_is_elf "$WORK/host.core"
equals "json names the path" "$(json_get "$OUT" "d['path']")" "$WORK/host.core"
# The core's NT_PRPSINFO note carries the process's pid.
check "host core belongs to the fixture" sh -c "readelf -n '$WORK/host.core' | grep -q 'NT_PRPSINFO'"
kill -0 "$FIX_PID" && ok "fixture still running after the dump" || not_ok "fixture still running after the dump"
rm -f "$WORK/host.core"

expect_exit "mini dump, relative path" 0 sh -c "cd '$WORK' && '$CLRTAP' dump -p $FIX_PID --type mini -o rel.core"
check "relative path resolved against clrtap's cwd" core_is_elf "$WORK/rel.core"
rm -f "$WORK/rel.core"

start_fixture_ns idle
expect_exit "heap dump of a namespaced fixture" 0 "$CLRTAP" dump -p "$FIX_PID" --type heap -o "$WORK/ns.core" --json
check "namespaced dump is an ELF core" core_is_elf "$WORK/ns.core"
equals "copied out of the namespace" "$(json_get "$OUT" "d['copied_out_of_namespace']")" True
check "no dump left in the target's /tmp" sh -c "! ls /proc/$FIX_PID/root/tmp/ | grep -q clrtap-dump"
rm -f "$WORK/ns.core"

expect_exit "unknown dump type" 2 "$CLRTAP" dump -p "$FIX_PID" --type huge
expect_exit "unwritable output" 1 "$CLRTAP" dump -p "$FIX_PID" --type mini -o /proc/nonexistent/x.core
finish
