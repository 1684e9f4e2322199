#!/usr/bin/env bash
# contain-hostile.sh HOSTDIR NEWROOT DLL [ARGS...]: runs `dotnet DLL ARGS...`
# the way a container that has been taken over would look to clrtap (issue 10):
#
#  - PID 1 of its own PID and mount namespaces, after a real pivot_root into
#    a minimal tree on NEWROOT (an empty host directory; a tmpfs is mounted on
#    it inside the namespace): /usr (with the dotnet install under it), /dev
#    and the DLL's directory (on /mnt) bind-mounted, /bin /lib /lib64 /sbin as
#    links into /usr, a fresh /proc, a copy of a few /etc files, a private
#    tmpfs on /tmp. The container's "/" is not the host's, so a symlink that
#    escapes is observable.
#  - its /tmp holds what a hostile container plants where clrtap looks. Every
#    link is absolute and names a path under HOSTDIR, a host directory where
#    the test keeps its sentinel files (inside the container that path is an
#    ordinary directory of its own tmpfs):
#      TMPDIR=/tmp/odd, and /tmp/odd -> HOSTDIR/tmpdir (the runtime's socket
#        really lives in the container's HOSTDIR/tmpdir; the host's
#        HOSTDIR/tmpdir holds a decoy socket);
#      /tmp/perf-1.map -> HOSTDIR/sentinel-perfmap;
#      /tmp/perfinfo-1.map -> HOSTDIR/sentinel-perfinfo;
#      /tmp/jit-1.dump is a FIFO nobody writes;
#      HOSTDIR/tmpdir/clrtap-dump-1-<t>.core -> HOSTDIR/sentinel-dump for the
#        next 300 seconds of <t> (the dump name clrtap used to choose);
#  - its environment holds names with a newline, ESC, quotes, a backslash and
#    invalid UTF-8, and ARGS are passed as they are (the test adds more).
#
# The unshare process stays as the parent; killing it kills the app
# (--kill-child). The app's host pid is the unshare process's only child.
set -eu
hostdir=$1
newroot=$2
dll=$(readlink -f "$3")
shift 3
dotnet=$(readlink -f "$(command -v dotnet)")
case $dotnet in
/usr/*) ;;
*)
	echo "contain-hostile.sh: dotnet ($dotnet) is not under /usr" >&2
	exit 1
	;;
esac
# shellcheck disable=SC2016
exec unshare --pid --mount --fork --mount-proc --kill-child sh -c '
set -eu
hostdir=$1 newroot=$2 dlldir=$3 dllname=$4 dotnet=$5
shift 5
mount --make-rprivate /
mount -t tmpfs -o mode=755 clrtap-hostile-root "$newroot"
cd "$newroot"
mkdir usr dev proc tmp mnt etc old root
for d in bin lib lib64 sbin; do ln -s "usr/$d" "$d"; done
mount --rbind /usr usr
mount --rbind /dev dev
mount -t proc proc proc
mount -t tmpfs -o mode=1777 clrtap-hostile-tmp tmp
mount --bind "$dlldir" mnt
for f in passwd group hosts nsswitch.conf ld.so.cache localtime; do
	[ -e "/etc/$f" ] && cp -L "/etc/$f" etc/ 2>/dev/null || true
done
pivot_root . old
umount -l /old
rmdir /old
cd /
# What the container plants.
mkdir -p "$hostdir/tmpdir"
ln -s "$hostdir/tmpdir" /tmp/odd
ln -s "$hostdir/sentinel-perfmap" /tmp/perf-1.map
ln -s "$hostdir/sentinel-perfinfo" /tmp/perfinfo-1.map
mkfifo /tmp/jit-1.dump
now=$(date +%s)
i=0
while [ $i -lt 300 ]; do
	ln -s "$hostdir/sentinel-dump" "$hostdir/tmpdir/clrtap-dump-1-$((now + i)).core"
	i=$((i + 1))
done
exec env TMPDIR=/tmp/odd \
	"$(printf "EVIL_NL\nNAME")=1" \
	"$(printf "EVIL_ESC\033[31mRED\033[0m")=2" \
	"$(printf "EVIL_Q\"\\\\b\\\\")=3" \
	"$(printf "EVIL_BAD\377\376")=4" \
	"EVIL_VALUE=$(printf "v\nv\033[2J\377")" \
	"$dotnet" "/mnt/$dllname" "$@"
' contain-hostile "$hostdir" "$newroot" "$(dirname "$dll")" "$(basename "$dll")" "$dotnet" "$@"
