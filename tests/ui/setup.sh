#!/usr/bin/env bash
# Installs the browser tests' one npm package (playwright-core, pinned by
# package-lock.json) into $O/ui-npm with `npm ci`, once: run again, it does
# nothing unless the lock file changed. The browser itself is Debian's
# chromium (/usr/bin/chromium); playwright-core downloads no browser.
# Prints the directory that holds node_modules/.
# Usage: tests/ui/setup.sh [O]   (O: the build directory, default build)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
O=${1:-${O:-build}}
case "$O" in /*) ;; *) O=$root/$O ;; esac
dest=$O/ui-npm
mkdir -p "$dest"
if [ -f "$dest/node_modules/playwright-core/package.json" ] && cmp -s "$here/package-lock.json" "$dest/package-lock.json"; then
	echo "$dest"
	exit 0
fi
command -v npm >/dev/null || { echo "setup.sh: npm not found (scripts/install-deps.sh installs it)" >&2; exit 1; }
cp "$here/package.json" "$here/package-lock.json" "$dest/"
(cd "$dest" && npm ci --no-audit --no-fund --loglevel=error >&2)
echo "$dest"
