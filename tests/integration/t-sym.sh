#!/usr/bin/env bash
# lib/sym against real .NET processes, through tests/tools/symcheck: JIT code
# named from the perf map (turned on with `clrtap perfmap on`), ReadyToRun
# code of System.Private.CoreLib.dll named through lib/pe, libcoreclr.so and
# libc named from their ELF symbols, and runtime stubs; on the host and in a
# PID + mount namespace (files read through /proc/PID/root).
# The expected values come from elsewhere: the perf map file read here with
# awk, the target's memory compared with the file bytes, readelf's symbols.
source "$(dirname "$0")/lib.sh"

SYMCHECK=$TOOLS/symcheck
[ -x "$SYMCHECK" ] || { not_ok "symcheck built" "no $SYMCHECK"; finish; }

# field N (1-based, tab-separated) of the first line of $1 matching $2
field() { printf '%s\n' "$1" | grep -m1 -E "$2" | cut -f"$3"; }

# wait_perfmap FILE PATTERN: until FILE has a line matching PATTERN (30 s)
wait_perfmap() {
	local i
	for ((i = 0; i < 600; i++)); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# The JIT, R2R and native checks on one process ($1 host pid, $2 perf map as
# seen from here, $3 label).
check_process() {
	local pid=$1 map=$2 tag=$3 line addr size mid out

	check "$tag: HotA in the perf map" wait_perfmap "$map" 'Clrtap\.Fixtures\.CpuSplit::HotA\(\)\[OptimizedTier1\]'
	# The newest HotA code, from the file itself: "0xSTART SIZE ... ::HotA()[Tier]"
	line=$(grep -E ' Clrtap\.Fixtures\.CpuSplit::HotA\(\)\[' "$map" | tail -1)
	addr=$(awk '{print $1}' <<<"$line")
	size=$(awk '{print $2}' <<<"$line")
	mid=$(printf '%x' $((addr + 0x$size / 2)))
	expect_exit "$tag: symcheck JIT address" 0 "$SYMCHECK" "$pid" "$addr" "$mid"
	equals "$tag: JIT name at the start" "$(field "$OUT" "^$addr" 4)" "Clrtap.Fixtures.CpuSplit::HotA"
	equals "$tag: JIT name in the middle" "$(field "$OUT" "^0x$mid" 4)" "Clrtap.Fixtures.CpuSplit::HotA"
	equals "$tag: JIT kind" "$(field "$OUT" "^0x$mid" 2)" "JIT"
	equals "$tag: JIT offset" "$(field "$OUT" "^0x$mid" 5)" "+0x$(printf '%x' $((0x$size / 2)))"
	equals "$tag: JIT signature" "$(field "$OUT" "^0x$mid" 6)" "()"
	equals "$tag: JIT tier" "$(field "$OUT" "^0x$mid" 7)" "$(sed -E 's/.*\[([A-Za-z0-9]+)\]$/\1/' <<<"$line")"
	equals "$tag: JIT module" "$(field "$OUT" "^0x$mid" 3)" "sample"

	# ReadyToRun: String.Concat(string, string) of CoreLib, placed by lib/pe
	expect_exit "$tag: symcheck R2R" 0 "$SYMCHECK" "$pid" --r2r System.Private.CoreLib.dll \
		'System.String::Concat(string, string)'
	local maddr foff
	maddr=$(field "$OUT" '^method' 2)
	foff=$(field "$OUT" '^method' 5)
	equals "$tag: R2R name at the entry" "$(field "$OUT" "^$maddr" 4)" "System.String::Concat"
	equals "$tag: R2R kind" "$(field "$OUT" "^$maddr" 2)" "R2R"
	equals "$tag: R2R module" "$(field "$OUT" "^$maddr" 3)" "System.Private.CoreLib.dll"
	equals "$tag: R2R signature" "$(field "$OUT" "^$maddr" 6)" "(string, string)"
	equals "$tag: R2R last byte" "$(printf '%s\n' "$OUT" | grep -c -E $'\tR2R\tSystem.Private.CoreLib.dll\tSystem.String::Concat\t')" "2"
	# the bytes at that address in the target are the method's bytes in the file
	local corelib
	corelib=$(awk '/System.Private.CoreLib.dll$/ {print $6; exit}' "/proc/$pid/maps")
	check "$tag: target's code bytes equal the file's" python3 - "$pid" "$maddr" "$foff" "/proc/$pid/root$corelib" <<'EOF'
import sys
pid, addr, off, path = sys.argv[1], int(sys.argv[2], 16), int(sys.argv[3], 16), sys.argv[4]
with open(f"/proc/{pid}/mem", "rb") as m:
    m.seek(addr)
    live = m.read(32)
with open(path, "rb") as f:
    f.seek(off)
    disk = f.read(32)
sys.exit(0 if live == disk and len(live) == 32 else 1)
EOF

	# libcoreclr.so: coreclr_initialize from readelf, placed through the maps
	local coreclr caddr
	coreclr=$(awk '/libcoreclr\.so$/ {print $6; exit}' "/proc/$pid/maps")
	caddr=$(python3 - "$pid" "/proc/$pid/root$coreclr" <<'EOF'
import re, subprocess, sys
pid, path = sys.argv[1], sys.argv[2]
syms = subprocess.run(["readelf", "-W", "--dyn-syms", path], capture_output=True, text=True).stdout
vaddr = next(int(l.split()[1], 16) for l in syms.splitlines()
             if l.split()[-1:] and l.split()[-1].split("@")[0] == "coreclr_initialize"
             and " FUNC " in l)
ph = subprocess.run(["readelf", "-W", "-l", path], capture_output=True, text=True).stdout
off = None
for l in ph.splitlines():
    f = l.split()
    if f and f[0] == "LOAD":
        o, v, fs = int(f[1], 16), int(f[2], 16), int(f[4], 16)
        if v <= vaddr < v + fs:
            off = vaddr - v + o
for l in open(f"/proc/{pid}/maps"):
    f = l.split()
    if len(f) >= 6 and f[5].endswith("/libcoreclr.so"):
        s, e = (int(x, 16) for x in f[0].split("-"))
        pg = int(f[2], 16)
        if pg <= off < pg + (e - s):
            print(hex(s + off - pg + 5))
            break
EOF
	)
	expect_exit "$tag: symcheck libcoreclr.so" 0 "$SYMCHECK" "$pid" "$caddr"
	equals "$tag: libcoreclr.so export named" "$(field "$OUT" "^$caddr" 4)" "coreclr_initialize"
	equals "$tag: libcoreclr.so offset" "$(field "$OUT" "^$caddr" 5)" "+0x5"
	equals "$tag: libcoreclr.so kind and module" "$(field "$OUT" "^$caddr" 2-3)" $'NATIVE\tlibcoreclr.so'
	# An unexported libcoreclr.so function (the shipped file has no .symtab)
	# is named by its start from .eh_frame_hdr; readelf's FDE list must have
	# an FDE starting exactly there.
	local inner iname
	inner=$(printf '0x%x' $((caddr + 0x100000)))
	expect_exit "$tag: symcheck unexported libcoreclr.so code" 0 "$SYMCHECK" "$pid" "$inner"
	iname=$(field "$OUT" "^$inner" 4)
	check "$tag: unexported function named sub_<start> ($iname)" grep -qE '^sub_[0-9a-f]+$' <<<"$iname"
	check "$tag: sub_ start is an FDE start in readelf" \
		grep -qE "pc=0*${iname#sub_}\.\." <(readelf -W --debug-dump=frames "/proc/$pid/root$coreclr")

	# Threads blocked in system calls: their pc is in libc, and named
	"$SYMCHECK" "$pid" --threads >"$WORK/threads" 2>&1
	out=$(grep -E $'\tNATIVE\tlibc\\.so\\.6\t[^-]' "$WORK/threads")
	check "$tag: blocked threads' pc named in libc.so.6" test -n "$out"

	# The [vdso] has no file: its code is named from the kernel's vDSO image
	local vstart addrs
	vstart=$(awk '/\[vdso\]$/ {split($1, r, "-"); print r[1]; exit}' "/proc/$pid/maps")
	addrs=$(for ((o = 0; o < 8192; o += 64)); do printf '0x%x ' $((0x$vstart + o)); done)
	# shellcheck disable=SC2086
	"$SYMCHECK" "$pid" $addrs >"$WORK/vdso" 2>&1
	check "$tag: [vdso] code named (__vdso_clock_gettime)" \
		grep -qE $'\tNATIVE\t\\[vdso\\]\t__vdso_clock_gettime\t' "$WORK/vdso"
}

# ---- on the host ----
start_fixture cpu-split
expect_exit "perfmap on" 0 "$CLRTAP" perfmap -p "$FIX_PID" on
check_process "$FIX_PID" "/tmp/perf-$FIX_PID.map" host
expect_exit "symcheck on a gone process" 3 "$SYMCHECK" 999999999 1000
expect_exit "symcheck unmapped address is unnamed" 1 "$SYMCHECK" "$FIX_PID" 1000
equals "unmapped address kind" "$(cut -f2,4 <<<"$OUT")" $'UNKNOWN\t-'
HOST_PID=$FIX_PID

# Kernel: a text symbol with an address of its own, from /proc/kallsyms
ksym=$(python3 - <<'EOF2'
import collections
rows = [l.split() for l in open("/proc/kallsyms")]
text = [r for r in rows if len(r) >= 3 and r[1] in "tTwW" and int(r[0], 16)]
count = collections.Counter(r[0] for r in rows)
addrs = sorted({int(r[0], 16) for r in rows})
for r in text:
    a = int(r[0], 16)
    if count[r[0]] == 1 and len(r) == 3 and r[2] in ("vfs_read", "do_sys_open", "schedule", "ksys_read"):
        i = addrs.index(a)
        if i + 1 < len(addrs) and addrs[i + 1] > a + 1:
            print(hex(a + 1), r[2])
            break
EOF2
)
if [ -n "$ksym" ]; then
	expect_exit "kernel: symcheck --kernel" 0 "$SYMCHECK" --kernel "$FIX_PID" "${ksym% *}"
	equals "kernel: named from kallsyms" "$(field "$OUT" "^${ksym% *}" 2-5)" \
		"KERNEL"$'\t'"[kernel.kallsyms]"$'\t'"${ksym#* }"$'\t'"+0x1"
	expect_exit "kernel: without --kernel unnamed" 1 "$SYMCHECK" "$FIX_PID" "${ksym% *}"
else
	skip "kernel: kallsyms addresses hidden"
fi

# ---- in its own PID + mount namespace: the perf map is its /tmp/perf-1.map ----
start_fixture_ns cpu-split
expect_exit "ns: perfmap on" 0 "$CLRTAP" perfmap -p "$FIX_PID" on
contains "ns: perf map named through /proc/PID/root" "$OUT" "/proc/$FIX_PID/root/tmp/perf-1.map"
check_process "$FIX_PID" "/proc/$FIX_PID/root/tmp/perf-1.map" ns
stop_fixture "$HOST_PID"

# ---- stubs: written when the perf map is on from the start ----
FIX_ENV="DOTNET_PerfMapEnabled=1" start_fixture idle
MAP=/tmp/perf-$FIX_PID.map
check "stubs: a stub in the perf map" wait_perfmap "$MAP" ' stub [A-Za-z]+<[A-Za-z_]+>$'
# the newest stub: no later entry can cover its address
line=$(grep -E '^0x[0-9a-f]+ [0-9a-f]+ stub [A-Za-z]+<[A-Za-z_]+>$' "$MAP" | tail -1)
addr=$(awk '{print $1}' <<<"$line")
expect_exit "stubs: symcheck" 0 "$SYMCHECK" "$FIX_PID" "$addr"
equals "stubs: kind" "$(field "$OUT" "^$addr" 2)" "STUB"
equals "stubs: name" "$(field "$OUT" "^$addr" 4)" "$(sed -E 's/.* stub //' <<<"$line")"

finish
