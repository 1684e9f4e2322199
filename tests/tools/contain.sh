#!/usr/bin/env bash
# contain.sh DLL [ARGS...]: runs `dotnet DLL ARGS...` the way a container
# would: PID 1 of its own PID and mount namespaces, with a private tmpfs on
# /tmp, so nothing in /tmp is shared with the host. The process keeps the
# host's network and users. The DLL's directory is bind-mounted on /mnt inside
# the namespace first, because the private /tmp hides anything that lived
# under /tmp (a checkout in /tmp, for instance).
#
# The unshare process stays as the parent; killing it kills the app
# (--kill-child). The app's host pid is the unshare process's only child.
set -eu
dll=$(readlink -f "$1")
shift
exec unshare --pid --mount --fork --mount-proc --kill-child \
	sh -c 'mount --bind "$0" /mnt && mount -t tmpfs -o mode=1777 clrtap-private-tmp /tmp &&
		cd / && f=$1 && shift && exec dotnet "/mnt/$f" "$@"' "$(dirname "$dll")" "$(basename "$dll")" "$@"
