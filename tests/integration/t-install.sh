#!/usr/bin/env bash
# The install paths of docs/install.md, each into a clean root, each then
# running ps, profile and agent run against one sample fixture:
#  1. make install PREFIX=<fresh dir>: the binary finds its profiler library
#     in PREFIX/lib/clrtap with no environment variable;
#  2. make dist: the archive unpacked into a chroot that holds nothing but
#     the C library (every other library comes from the archive);
#  3. make deb: dpkg --root into a chroot that holds the C library and the
#     packages of the .deb's Depends (and theirs), nothing else; with its
#     Recommends added, serve starts and answers (what the Dockerfile installs);
#  4. man pages and completions installed, the man page renders.
. "$(dirname "$0")/lib.sh"

O=$(realpath --relative-to="$ROOT" "$(dirname "$CLRTAP")")
VER=$(cat "$ROOT/VERSION")
mk() { make -s -C "$ROOT" --no-print-directory O="$O" "$@" >"$WORK/make.out" 2>&1; }

start_fixture cpu-split
PID=$FIX_PID

# run_all LABEL CMD...: ps, profile and agent run with CMD as clrtap
# (a command prefix, e.g. chroot R /usr/bin/clrtap).
run_all() {
	local label=$1
	shift
	expect_exit "$label: ps" 0 "$@" ps --json
	contains "$label: ps lists the fixture" "$OUT" "\"pid\":$PID"
	expect_exit "$label: profile" 0 "$@" profile -p "$PID" -d 1 -o /tmp/clrtap-install-$$.folded
	check "$label: profile names the hot method" grep -q ';Clrtap.Fixtures.CpuSplit::HotA' \
		"/tmp/clrtap-install-$$.folded"
	rm -f "/tmp/clrtap-install-$$.folded"
	expect_exit "$label: agent run" 0 "$@" agent run -p "$PID" -d 0.5 --json
	equals "$label: agent attached and detached" \
		"$(json_get "$OUT" "d['attached'] and d['detach_confirmed']")" True
}

# in_root ROOT CMD...: CMD chrooted into ROOT with the host's /proc, /sys,
# /dev and /tmp (the targets and their sockets) bound in, in a private mount
# namespace (nothing stays mounted).
in_root() {
	local r=$1
	shift
	unshare -m bash -c 'r=$1; shift
		for d in proc sys dev tmp; do mkdir -p "$r/$d"; mount --rbind "/$d" "$r/$d" || exit 99; done
		exec chroot "$r" "$@"' _ "$r" "$@"
}

# copy_files ROOT PATH...: the files (and symlinks) into ROOT at their paths
# (through ROOT's lib -> usr/lib links).
copy_files() {
	local r=$1
	shift
	printf '%s\n' "$@" | while read -r f; do [ -f "$f" ] || [ -L "$f" ] && echo "${f#/}"; done |
		tar -C / -cf - --no-recursion -T - | tar -C "$r" -xf - --keep-directory-symlink
}

# a root with the merged-/usr layout of Debian 12 and the files of PACKAGES
new_root() {
	local r=$1
	mkdir -p "$r/usr/lib" "$r/usr/lib64" "$r/usr/bin" "$r/etc"
	ln -s usr/lib "$r/lib"
	ln -s usr/lib64 "$r/lib64"
	ln -s usr/bin "$r/bin"
}
pkg_files() { dpkg -L "$@" 2>/dev/null | grep -v -e '^/usr/share/' -e '^/etc/' -e '/gconv/' | sort -u; }
# the packages P depends on, recursively (what apt would install)
pkg_closure() {
	local todo=("$@") seen=" " p deps
	while [ ${#todo[@]} -gt 0 ]; do
		p=${todo[0]}
		todo=("${todo[@]:1}")
		case "$seen" in *" $p "*) continue ;; esac
		dpkg-query -W "$p" >/dev/null 2>&1 || continue
		seen="$seen$p "
		deps=$(dpkg-query -W -f='${Pre-Depends}, ${Depends}' "$p" |
			tr ',' '\n' | sed -e 's/|.*//' -e 's/(.*)//' -e 's/:any//' -e 's/ //g' | grep -v '^$')
		todo+=($deps)
	done
	echo "$seen"
}

# --- 1. make install into a fresh prefix ----------------------------------
PFX=$WORK/prefix
if mk install PREFIX="$PFX"; then ok "make install PREFIX=$PFX"; else not_ok "make install" "$(tail -20 "$WORK/make.out")"; fi
check "installed: binary" test -x "$PFX/bin/clrtap"
check "installed: glibc profiler in lib/clrtap" test -s "$PFX/lib/clrtap/glibc/libclrtap-profiler.so"
check "installed: musl profiler in lib/clrtap" test -s "$PFX/lib/clrtap/musl/libclrtap-profiler.so"
check "installed: clrtap.1" test -s "$PFX/share/man/man1/clrtap.1"
check "installed: clrtap-profile.1" test -s "$PFX/share/man/man1/clrtap-profile.1"
check "installed: bash completion" test -s "$PFX/share/bash-completion/completions/clrtap"
check "installed: zsh completion" test -s "$PFX/share/zsh/site-functions/_clrtap"
check "installed: fish completion" test -s "$PFX/share/fish/vendor_completions.d/clrtap.fish"
MAN=$(MANWIDTH=100 man -l "$PFX/share/man/man1/clrtap-profile.1" 2>&1)
contains "man clrtap-profile renders the -d option" "$MAN" "-d, --duration DUR"
expect_exit "installed: --version" 0 env -u CLRTAP_PROFILER_DIR "$PFX/bin/clrtap" --version
contains "installed: --version names the release" "$OUT" "clrtap $VER (commit "
run_all "prefix" env -u CLRTAP_PROFILER_DIR "$PFX/bin/clrtap"
# DESTDIR stages under another root without changing where it looks
mk install DESTDIR="$WORK/stage" PREFIX=/usr
check "make install DESTDIR: staged under DESTDIR/usr" test -x "$WORK/stage/usr/bin/clrtap"

# --- 2. the release archive in a root that holds only the C library -------
if mk dist; then ok "make dist"; else not_ok "make dist" "$(tail -20 "$WORK/make.out")"; fi
TGZ=$ROOT/$O/dist/clrtap-$VER-linux-x64.tar.gz
check "archive exists" test -s "$TGZ"
AR=$WORK/archive-root
new_root "$AR"
mkdir -p "$AR/opt"
tar -C "$AR/opt" -xzf "$TGZ"
copy_files "$AR" $(pkg_files libc6)
ABIN=/opt/clrtap-$VER-linux-x64/bin/clrtap
check "archive root: no libelf, libdw or libz outside the archive" \
	bash -c '! find "$1/usr" \( -name "libelf*" -o -name "libdw*" -o -name "libz.so*" \) | grep -q .' _ "$AR"
expect_exit "archive root: --version" 0 in_root "$AR" "$ABIN" --version
run_all "archive (glibc-only root)" in_root "$AR" "$ABIN"

# --- 3. the .deb with dpkg --root, its Depends and nothing else -----------
if mk deb; then ok "make deb"; else not_ok "make deb" "$(tail -20 "$WORK/make.out")"; fi
DEB=$ROOT/$O/dist/clrtap_${VER}_amd64.deb
DEPENDS=$(dpkg-deb -f "$DEB" Depends)
RECOMMENDS=$(dpkg-deb -f "$DEB" Recommends)
contains "deb: Depends names libdw1" "$DEPENDS" "libdw1"
DR=$WORK/deb-root
new_root "$DR"
mkdir -p "$DR/var/lib/dpkg/info" "$DR/var/lib/dpkg/updates"
touch "$DR/var/lib/dpkg/status" "$DR/var/lib/dpkg/available"
# shellcheck disable=SC2046
copy_files "$DR" $(pkg_files $(pkg_closure $(echo "$DEPENDS" | tr ',' '\n' | sed 's/(.*)//')))
expect_exit "dpkg --root -i" 0 dpkg --root="$DR" --force-depends --force-not-root \
	--log=/dev/null -i "$DEB"
check "deb: profiler in /usr/lib/clrtap/glibc" test -s "$DR/usr/lib/clrtap/glibc/libclrtap-profiler.so"
check "deb: man page gzipped" test -s "$DR/usr/share/man/man1/clrtap.1.gz"
run_all "deb (Depends-only root)" in_root "$DR" /usr/bin/clrtap
# the Recommends make serve work (the Dockerfile installs them)
# shellcheck disable=SC2046
copy_files "$DR" $(pkg_files $(pkg_closure $(echo "$RECOMMENDS" | tr ',' '\n')))
SOCK=/tmp/clrtap-install-$$.sock
in_root "$DR" /usr/bin/clrtap serve --unix "$SOCK" --db /tmp/clrtap-install-$$.db \
	>"$WORK/serve.out" 2>&1 &
SERVE=$!
KILL_PIDS+=("$SERVE")
# $! is the subshell that runs in_root; serve itself is its grandchild: the
# clean-up stops it by its socket's name too
CLEANUP_CMD="pkill -TERM -f -- '--unix $SOCK' 2>/dev/null; sleep 0.2; rm -f /tmp/clrtap-install-$$.db* $SOCK"
for ((i = 0; i < 100; i++)); do
	curl -sf --unix-socket "$SOCK" "http://localhost/api/v1/processes" >"$WORK/procs" 2>/dev/null && break
	sleep 0.1
done
contains "deb + Recommends: serve lists the fixture" "$(cat "$WORK/procs")" "\"pid\":$PID"
pkill -TERM -f -- "--unix $SOCK" 2>/dev/null
kill -TERM "$SERVE" 2>/dev/null
wait "$SERVE" 2>/dev/null
gone=no
for ((i = 0; i < 50; i++)); do
	pgrep -f -- "--unix $SOCK" >/dev/null || { gone=yes; break; }
	sleep 0.1
done
check "serve from the root stopped on SIGTERM" test "$gone" = yes

finish
