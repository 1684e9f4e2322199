#!/usr/bin/env bash
# bundle-libs.sh DIR BINARY SONAME... - copies into DIR the shared libraries
# BINARY links and the SONAMEs it dlopens, with everything they link, except
# the C library's own (libc, libm, ld-linux, libpthread, libdl, librt): what
# the release archive carries so that only glibc must be on the machine.
set -euo pipefail
dir=${1:?}; bin=${2:?}; shift 2
mkdir -p "$dir"
paths() { ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'; }
{
	paths "$bin"
	for so in "$@"; do
		p=$(ldconfig -p | awk -v s="$so" '$1 == s && /x86-64/ { print $NF; exit }')
		[ -n "$p" ] || { echo "bundle-libs: $so not found (scripts/install-deps.sh installs it)" >&2; exit 1; }
		echo "$p"; paths "$p"
	done
} | sort -u | while read -r p; do
	case ${p##*/} in
	libc.so.*|libm.so.*|ld-linux*|libpthread.so.*|libdl.so.*|librt.so.*) continue ;;
	esac
	cp -L "$p" "$dir/${p##*/}"
done
