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
equals "json is the dump task's result (docs/tasks/dump.md): its size, no crash report" \
	"$(json_get "$OUT" "(d['task'], d['type'], d['bytes'] == __import__('os').path.getsize('$WORK/host.core'), d['crash_report'], d['partial'])")" \
	"('dump', 'heap', True, False, False)"
# The core's NT_PRPSINFO note carries the process's pid.
check "host core belongs to the fixture" sh -c "readelf -n '$WORK/host.core' | grep -q 'NT_PRPSINFO'"
kill -0 "$FIX_PID" && ok "fixture still running after the dump" || not_ok "fixture still running after the dump"
rm -f "$WORK/host.core"

expect_exit "mini dump, relative path" 0 sh -c "cd '$WORK' && '$CLRTAP' dump -p $FIX_PID --type mini -o rel.core"
check "relative path resolved against clrtap's cwd" core_is_elf "$WORK/rel.core"
rm -f "$WORK/rel.core"

# dump -o PATH never destroys what is at PATH (issue 19): the runtime only
# ever sees a fresh name clrtap made; PATH is replaced by a complete dump only.
expect_exit "dump over an existing regular file" 0 "$CLRTAP" dump -p "$FIX_PID" --type mini -o "$WORK/old.core"
echo KEEP >"$WORK/old.core"
expect_exit "dump replaces an existing regular file" 0 "$CLRTAP" dump -p "$FIX_PID" --type mini -o "$WORK/old.core"
check "the replaced file is the new dump" core_is_elf "$WORK/old.core"
equals "no temporary file left next to it" "$(ls -A "$WORK" | grep -c 'clrtap-.*\.tmp')" 0
rm -f "$WORK/old.core"
if mknod "$WORK/fullnode" c 1 7 2>/dev/null; then
	expect_exit "dump -o a device node is refused (an output clrtap cannot write: 1)" 1 "$CLRTAP" dump -p "$FIX_PID" --type mini -o "$WORK/fullnode"
	contains "says why" "$ERR" "is not a regular file"
	check "the device node is still there" test -c "$WORK/fullnode"
	equals "the device node is unchanged" "$(stat -c '%t:%T' "$WORK/fullnode")" "1:7"
else
	skip "mknod test: this machine does not let the test make a device node"
fi
# full_fs NAME CODE: a dump to a full tmpfs over an existing file fails with
# CODE and leaves the existing file and the directory as they were.
SMALL=$WORK/small
mkdir "$SMALL"
full_fs() {
	if ! mount -t tmpfs -o size=2m clrtap-test-full "$SMALL" 2>/dev/null; then
		skip "$1: this machine does not let the test mount a tmpfs"
		return
	fi
	CLEANUP_CMD="umount '$SMALL' 2>/dev/null"
	echo KEEP >"$SMALL/existing.dmp"
	dd if=/dev/zero of="$SMALL/filler" bs=64k 2>/dev/null
	expect_exit "$1: dump to a full file system fails" "$2" "$CLRTAP" dump -p "$FIX_PID" --type mini -o "$SMALL/existing.dmp"
	contains "$1: says the disk is full" "$ERR" "No space left on device"
	equals "$1: the existing dump is as it was" "$(cat "$SMALL/existing.dmp")" "KEEP"
	equals "$1: nothing else is left behind" "$(ls -A "$SMALL" | sort | tr '\n' ' ')" "existing.dmp filler "
	kill -0 "$FIX_PID" && ok "$1: fixture still running" || not_ok "$1: fixture still running"
	umount "$SMALL"
}
# The runtime's createdump fails writing (exit 7, its own message).
full_fs "host" 7


start_fixture_ns idle
expect_exit "heap dump of a namespaced fixture" 0 "$CLRTAP" dump -p "$FIX_PID" --type heap -o "$WORK/ns.core" --json
check "namespaced dump is an ELF core" core_is_elf "$WORK/ns.core"
equals "copied out of the namespace" "$(json_get "$OUT" "d['copied_out_of_namespace']")" True
check "no dump left in the target's /tmp" sh -c "! ls /proc/$FIX_PID/root/tmp/ | grep -q clrtap-dump"
rm -f "$WORK/ns.core"
# Ctrl-C while the runtime writes: clrtap waits for the runtime, then removes
# both files it made (exit 130).
mkdir "$WORK/int"
"$CLRTAP" dump -p "$FIX_PID" --type full -o "$WORK/int/full.core" 2>"$WORK/int.err" &
DPID=$!
for ((i = 0; i < 100; i++)); do
	ls /proc/"$FIX_PID"/root/tmp/ | grep -q '^clrtap-dump' && break
	sleep 0.02
done
kill -INT "$DPID"
wait "$DPID"
RC=$?
equals "interrupted dump exits 130 (or finished first: 0)" "$(
	[ "$RC" -eq 130 ] || [ "$RC" -eq 0 ] && echo yes || echo "no: $RC"
)" yes
equals "interrupted dump: no temporary file next to PATH" "$(ls -A "$WORK/int" | grep -c '\.tmp$')" 0
check "interrupted dump: nothing left in the target's /tmp" sh -c "! ls /proc/$FIX_PID/root/tmp/ | grep -q clrtap-dump"

# The target writes inside its own /tmp; the copy out fails (exit 1) and the
# target's copy is removed.
full_fs "namespaced" 1
check "no dump left in the target's /tmp after the failed copy" sh -c "! ls /proc/$FIX_PID/root/tmp/ | grep -q clrtap-dump"

expect_exit "unknown dump type" 2 "$CLRTAP" dump -p "$FIX_PID" --type huge
expect_exit "unwritable output" 1 "$CLRTAP" dump -p "$FIX_PID" --type mini -o /proc/nonexistent/x.core
finish
