#!/usr/bin/env bash
# clrtap info: exact runtime version and an environment variable the test set,
# for a host fixture and a namespaced one; -n NAME selection.
. "$(dirname "$0")/lib.sh"
# test-run: alone

want_rt=$(dotnet --list-runtimes | awk '/Microsoft.NETCore.App/ {print $2}' | tail -1)
MARK="clrtap-mark-$RANDOM-ünï"
FIX_ENV="CLRTAP_TEST_MARK=$MARK" start_fixture idle
HOST_PID=$FIX_PID

expect_exit "info --json" 0 "$CLRTAP" info -p "$HOST_PID" --json --env
JSON=$OUT
equals "runtime version matches dotnet --list-runtimes" \
	"$(json_get "$JSON" "d['runtime_version'].split('+')[0]")" "$want_rt"
equals "entry assembly" "$(json_get "$JSON" "d['entry_assembly']")" sample
equals "os" "$(json_get "$JSON" "d['os']")" Linux
equals "arch" "$(json_get "$JSON" "d['arch']")" x64
equals "environment variable set by the test" "$(json_get "$JSON" "d['environment']['CLRTAP_TEST_MARK']")" "$MARK"
equals "nspid" "$(json_get "$JSON" "d['nspid']")" "$HOST_PID"
contains "command line names the fixture" "$(json_get "$JSON" "d['cmdline']")" "sample.dll idle"
equals "perf map off by default" "$(json_get "$JSON" "d['perfmap']")" off

expect_exit "info text --env" 0 "$CLRTAP" info -p "$HOST_PID" --env
contains "text shows the version" "$OUT" "runtime version:  $want_rt"
contains "text shows the variable" "$OUT" "CLRTAP_TEST_MARK=$MARK"

FIX_ENV="CLRTAP_TEST_MARK=ns-$MARK" start_fixture_ns idle
NS_PID=$FIX_PID
expect_exit "info on the namespaced fixture" 0 "$CLRTAP" info -p "$NS_PID" --json --env
JSON=$OUT
equals "namespaced: pid in namespace" "$(json_get "$JSON" "d['nspid']")" 1
equals "namespaced: own pid namespace" "$(json_get "$JSON" "d['other_pid_namespace']")" True
equals "namespaced: own mount namespace" "$(json_get "$JSON" "d['other_mount_namespace']")" True
equals "namespaced: runtime version" "$(json_get "$JSON" "d['runtime_version'].split('+')[0]")" "$want_rt"
equals "namespaced: env var" "$(json_get "$JSON" "d['environment']['CLRTAP_TEST_MARK']")" "ns-$MARK"

# -n picks by entry assembly name. Other 'sample' processes may be running
# (another test, a developer's own): count them, then expect what follows.
others() {
	"$CLRTAP" ps --json | python3 -c 'import json,sys; print(len([r for r in json.load(sys.stdin) if r["live"] and r["assembly"]=="sample"]))'
}
n=$(others)
expect_exit "info -n with $n 'sample' processes is ambiguous" 2 "$CLRTAP" info -n sample
contains "ambiguity says how many" "$ERR" "$n .NET processes are named 'sample'"
stop_fixture "$NS_PID"
if [ "$(others)" -eq 1 ]; then
	expect_exit "info -n sample" 0 "$CLRTAP" info -n sample --json
	equals "-n found the host fixture" "$(json_get "$OUT" "d['pid']")" "$HOST_PID"
else
	expect_exit "info -n sample, still ambiguous" 2 "$CLRTAP" info -n sample
fi
finish
