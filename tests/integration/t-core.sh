#!/usr/bin/env bash
# lib/core (the core-file reader under `dump analyze`, issue 32) on a real
# dump: the runtime's createdump full dump of the `crash` fixture, read by
# tests/tools/coreinfo, checked against ClrMD (tests/tools/clrmd-ref) and
# against what the fixture printed; then the same dump damaged (cut, notes
# cut, random bytes) and moved "from another machine" (its mapped paths
# pointing nowhere here), which the reader must read from the file alone.
. "$(dirname "$0")/lib.sh"

CI=$TOOLS/coreinfo
CLRMD=$TOOLS/clrmd-ref/clrmd-ref.dll
D=$WORK/crash.core

if ! pm_crash_dump "$D"; then
	not_ok "the runtime's createdump wrote a dump of the crash fixture"
	finish
fi
ok "the runtime's createdump wrote a dump of the crash fixture"

expect_exit "coreinfo reads it" 0 "$CI" "$D"
INFO=$OUT
contains "the dump is the fixture's process" "$INFO" "pid $PM_CRASH_PID comm dotnet machine 62"
lacks "not truncated" "$INFO" "truncated"
# createdump puts the signal on the crashing thread only
crash_tid=$(awk '$1 == "thread" && $4 == "6" { print $2 }' <<<"$INFO")
equals "one thread carries SIGABRT" "$(wc -w <<<"$crash_tid")" 1
contains "the runtime's libcoreclr.so is among the mapped files" "$INFO" "/libcoreclr.so"
# the crash thread's registers point into the dump's memory
sp=$(awk -v t="$crash_tid" '$1 == "thread" && $2 == t { print $8 }' <<<"$INFO")
expect_exit "the crashing thread's stack is in the dump" 0 "$CI" "$D" "$sp" 64
contains "64 bytes at its sp" "$OUT" "read $sp 64 bytes: "

if [ -f "$CLRMD" ]; then
	REF=$(dotnet "$CLRMD" "$D" 2>"$WORK/clrmd.err")
	if [ -n "$REF" ]; then
		# every thread ClrMD knows (the runtime's own list) is a thread of the dump,
		# and the one with the unhandled exception is the one with the signal
		cmp=$(python3 - "$REF" "$INFO" <<'PY'
import json, sys
ref = json.loads(sys.argv[1])
tids = {int(l.split()[1]) for l in sys.argv[2].splitlines() if l.startswith("thread ")}
sig = [int(l.split()[1]) for l in sys.argv[2].splitlines() if l.startswith("thread ") and l.split()[3] == "6"]
alive = [t["os_tid"] for t in ref["threads"] if t["alive"]]
exc = [t for t in ref["threads"] if t["exception"]]
print("missing=%s" % sorted(set(alive) - tids))
print("exc_tid_is_signalled=%s" % (len(exc) == 1 and sig == [exc[0]["os_tid"]]))
print("exc=%s/%s" % (exc[0]["exception"]["type"], exc[0]["exception"]["inner"]["type"]) if exc else "exc=none")
print("top=%s" % (exc[0]["frames"][0] if exc and exc[0]["frames"] else "none"))
PY
)
		contains "every managed thread ClrMD lists is in the dump's NT_PRSTATUS notes" "$cmp" "missing=[]"
		contains "the thread with the unhandled exception (ClrMD) is the one createdump signalled" "$cmp" "exc_tid_is_signalled=True"
		contains "ClrMD sees the fixture's exception and its inner one" "$cmp" "exc=Crash.CrashException/System.InvalidOperationException"
		contains "ClrMD's top frame is the throwing method" "$cmp" "top=Crash.Thrower::Throw"
	else
		not_ok "clrmd-ref read the dump" "$(cat "$WORK/clrmd.err")"
	fi
else
	skip "ClrMD cross-check: $CLRMD not built (scripts/build-fixtures.sh needs Microsoft.Diagnostics.Runtime from NuGet)"
fi

# ---- damaged copies: one line, exit 8 (bad-input), or read with what is missing said ----
size=$(stat -c %s "$D")
head -c $((size / 2)) "$D" >"$WORK/half.core"
expect_exit "a dump cut in half is read" 0 "$CI" "$WORK/half.core"
contains "and says it is truncated, by how much" "$OUT" "truncated: the file has $((size / 2)) bytes, its headers describe $size"
# 200 bytes into the notes (the PT_NOTE's p_offset is the first program header's)
notes=$(python3 -c 'import struct,sys; h=open(sys.argv[1],"rb").read(4096); print(struct.unpack_from("<Q", h, struct.unpack_from("<Q", h, 32)[0] + 8)[0])' "$D")
head -c $((notes + 200)) "$D" >"$WORK/notes-cut.core"
expect_exit "a dump cut inside its notes: bad input" 8 "$CI" "$WORK/notes-cut.core"
contains "says the notes end past the file" "$ERR" "coreinfo: truncated or corrupt: the notes"
equals "in one line" "$(wc -l <<<"$ERR")" 1
head -c 65536 /dev/urandom >"$WORK/random.core"
expect_exit "random bytes: bad input" 8 "$CI" "$WORK/random.core"
contains "says it is not a core file" "$ERR" "not an ELF core file: no ELF magic"
# a PT_LOAD made huge (the first one: p_memsz at e_phoff + 56 + 40)
cp "$D" "$WORK/huge.core"
python3 - "$WORK/huge.core" <<'PY'
import struct, sys
f = open(sys.argv[1], "r+b")
h = f.read(64)
phoff, phnum = struct.unpack_from("<Q", h, 32)[0], struct.unpack_from("<H", h, 56)[0]
assert phnum != 0xFFFF  # under 65535 segments: the count is in the ELF header
for i in range(phnum):
    f.seek(phoff + 56 * i)
    if struct.unpack("<I", f.read(4))[0] == 1:  # PT_LOAD
        f.seek(phoff + 56 * i + 40)
        f.write(struct.pack("<Q", 1 << 62))
        break
PY
expect_exit "a PT_LOAD of 2^62 bytes: bad input" 8 "$CI" "$WORK/huge.core"
contains "says which" "$ERR" "corrupt PT_LOAD"
rm -f "$WORK/half.core" "$WORK/huge.core"

# ---- from another machine: the runtime's paths in NT_FILE point nowhere here ----
python3 - "$D" "$WORK/moved.core" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
old = b"/usr/share/dotnet/"
new = b"/nonexistent/dotn/"
assert len(old) == len(new)
open(sys.argv[2], "wb").write(b.replace(old, new))
PY
rm -f "$D"
if [ -e /nonexistent ]; then
	not_ok "/nonexistent exists on this machine: the moved-dump check needs it absent"
else
	"$CI" "$WORK/moved.core" >"$WORK/moved.out" 2>&1
	equals "a dump whose runtime is not here is read the same" "$(grep -v '^file' "$WORK/moved.out" | md5sum)" "$(grep -v '^file' <<<"$INFO" | md5sum)"
	contains "its mapped files are reported as the dump says" "$(cat "$WORK/moved.out")" "/nonexistent/dotn/shared/Microsoft.NETCore.App/"
	# what the kernel was asked, where this machine allows ptrace
	if strace -f -qq -o /dev/null true 2>/dev/null; then
		strace -f -qq -e trace=%file -o "$WORK/strace.out" "$CI" "$WORK/moved.core" >/dev/null 2>&1
		contains "strace saw the dump opened" "$(cat "$WORK/strace.out")" "moved.core"
		equals "and none of its mapped paths opened or looked up" "$(grep -c nonexistent "$WORK/strace.out")" 0
	else
		skip "strace cannot trace here: the mapped paths' system calls are not checked"
	fi
fi

# ---- a musl process (Alpine's runtime): the same format, musl's files mapped ----
pm_musl_dump "$WORK/musl.core"
case $? in
0)
	expect_exit "coreinfo reads a musl process's dump" 0 "$CI" "$WORK/musl.core"
	contains "the process's first thread is its main thread" "$OUT" "thread $PM_MUSL_PID signo 0 "
	contains "musl's C library is mapped" "$OUT" "$(readlink -f /lib/ld-musl-x86_64.so.1)"
	contains "the runtime is the musl build's" "$OUT" "$ROOT/build/fixtures/matrix/musl-net10/libcoreclr.so"
	;;
77) skip "the musl dump: $PM_MUSL_WHY" ;;
*) not_ok "clrtap dump of the musl fixture" ;;
esac

finish
