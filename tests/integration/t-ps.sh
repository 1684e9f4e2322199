#!/usr/bin/env bash
# clrtap ps: finds a host fixture and a namespaced one (private /tmp, own PID
# namespace) with both pids right; no non-.NET process; no stale socket as live.
. "$(dirname "$0")/lib.sh"
# test-run: alone

start_fixture idle
HOST_PID=$FIX_PID
start_fixture_ns idle
NS_PID=$FIX_PID
sleep 300 &
SLEEP_PID=$!
KILL_PIDS+=("$SLEEP_PID")

expect_exit "ps --json runs" 0 "$CLRTAP" ps --json
JSON=$OUT
row() { json_get "$JSON" "[r for r in d if r['pid']==$1]"; }

equals "host fixture listed once" "$(json_get "$JSON" "len([r for r in d if r['pid']==$HOST_PID])")" 1
equals "host fixture nspid = pid" "$(json_get "$JSON" "[r['nspid'] for r in d if r['pid']==$HOST_PID][0]")" "$HOST_PID"
equals "host fixture is live" "$(json_get "$JSON" "[r['live'] for r in d if r['pid']==$HOST_PID][0]")" True
equals "host fixture assembly" "$(json_get "$JSON" "[r['assembly'] for r in d if r['pid']==$HOST_PID][0]")" sample
equals "host fixture namespace marker" "$(json_get "$JSON" "[r['namespace'] for r in d if r['pid']==$HOST_PID][0]")" host

equals "namespaced fixture listed" "$(json_get "$JSON" "len([r for r in d if r['pid']==$NS_PID])")" 1
equals "namespaced fixture pid in its namespace is 1" "$(json_get "$JSON" "[r['nspid'] for r in d if r['pid']==$NS_PID][0]")" 1
equals "namespaced fixture is live" "$(json_get "$JSON" "[r['live'] for r in d if r['pid']==$NS_PID][0]")" True
equals "namespaced fixture marker" "$(json_get "$JSON" "[r['namespace'] for r in d if r['pid']==$NS_PID][0]")" pid+mnt
contains "namespaced socket reached through /proc/PID/root" \
	"$(json_get "$JSON" "[r['socket'] for r in d if r['pid']==$NS_PID][0]")" "/proc/$NS_PID/root/tmp/dotnet-diagnostic-1-"
want_rt=$(dotnet --list-runtimes | awk '/Microsoft.NETCore.App/ {print $2}' | tail -1)
equals "runtime version column" "$(json_get "$JSON" "[r['runtime'] for r in d if r['pid']==$HOST_PID][0]")" "$want_rt"
equals "non-.NET process not listed" "$(json_get "$JSON" "len([r for r in d if r['pid']==$SLEEP_PID])")" 0

expect_exit "ps table runs" 0 "$CLRTAP" ps
contains "table has the header" "$OUT" "ASSEMBLY"
contains "table shows the namespaced fixture" "$OUT" "$(printf '%7d %7d pid+mnt' "$NS_PID" 1)"

# Container identity: the namespaced fixture is moved into a cgroup named the
# way containerd names a Kubernetes container's (cgroup v2), as a container
# runtime would have put it; ps must show the container id and pod uid.
CG2=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
CID=3f4c1a2b9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b
POD_DIR="$CG2/clrtap-test-pod1a2b3c4d_5e6f_7a8b_9c0d_1e2f3a4b5c6d.slice"
if [ -n "$CG2" ] && mkdir -p "$POD_DIR/cri-containerd-$CID.scope" 2>/dev/null &&
	echo "$NS_PID" >"$POD_DIR/cri-containerd-$CID.scope/cgroup.procs" 2>/dev/null; then
	CLEANUP_CMD="rmdir '$POD_DIR/cri-containerd-$CID.scope' '$POD_DIR' 2>/dev/null"
	expect_exit "ps --json, fixture in a container's cgroup" 0 "$CLRTAP" ps --json
	equals "container id from the cgroup" "$(json_get "$OUT" "[r['container'] for r in d if r['pid']==$NS_PID][0]")" "$CID"
	equals "pod uid from the cgroup" "$(json_get "$OUT" "[r['pod_uid'] for r in d if r['pid']==$NS_PID][0]")" 1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d
	equals "host fixture has no container id" "$(json_get "$OUT" "[r['container'] for r in d if r['pid']==$HOST_PID][0]")" None
	expect_exit "ps table with a container" 0 "$CLRTAP" ps
	contains "table has a CONTAINER column" "$OUT" "CONTAINER"
	contains "table shows the short container id" "$OUT" "$(printf '%7d %7d pid+mnt  %s ' "$NS_PID" 1 "${CID:0:12}")"
	expect_exit "info on the containerised fixture" 0 "$CLRTAP" info -p "$NS_PID"
	contains "info shows container and pod" "$OUT" "container:        $CID, Kubernetes pod uid 1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d"
	expect_exit "info --json on it" 0 "$CLRTAP" info -p "$NS_PID" --json
	equals "info --json container" "$(json_get "$OUT" "d['container']")" "$CID"
	# back to the root cgroup, so the directories can go
	echo "$NS_PID" >"$CG2/cgroup.procs" 2>/dev/null
else
	skip "no writable cgroup v2 hierarchy here (${CG2:-none}): container id not checked"
fi

# A fixture killed with SIGKILL leaves its socket in /tmp: never shown as live.
start_fixture idle
DEAD_PID=$FIX_PID
kill -KILL "$DEAD_PID"
while kill -0 "$DEAD_PID" 2>/dev/null; do sleep 0.05; done
STALE=$(ls /tmp/dotnet-diagnostic-"$DEAD_PID"-*-socket 2>/dev/null | head -1)
check "killed fixture left a stale socket" test -S "$STALE"
expect_exit "ps with a stale socket" 0 "$CLRTAP" ps --json
equals "stale socket not listed by default" "$(json_get "$OUT" "len([r for r in d if r['nspid']==$DEAD_PID])")" 0
contains "stale sockets counted on stderr" "$ERR" "stale diagnostics socket"
expect_exit "ps --all with a stale socket" 0 "$CLRTAP" ps --all --json
JSON=$OUT
equals "dead process not shown as live" "$(json_get "$JSON" "len([r for r in d if r['nspid']==$DEAD_PID and r['live']])")" 0
equals "stale socket reported as stale" "$(json_get "$JSON" "[r['status'] for r in d if r['socket']=='$STALE'][0]")" "stale socket (process gone)"
rm -f "$STALE"

# Standard output errors are not hidden.
expect_exit "ps > /dev/full fails" 1 sh -c "\"$CLRTAP\" ps > /dev/full"
finish
