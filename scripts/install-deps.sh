#!/usr/bin/env bash
# Installs the Debian packages clrtap builds and tests with, only those missing.
# Safe to run again: it does nothing when everything is present.
set -euo pipefail

PKGS=(
	make gcc clang pkg-config        # build; clang for the sanitizer and fuzz builds
	libclang-rt-14-dev libfuzzer-14-dev   # ASan/UBSan runtimes and libFuzzer
	libcmocka-dev                    # unit tests
	zlib1g-dev                       # gzip for pprof and bundles
	libssl-dev                       # SHA-256 (libcrypto): keys of the symbol cache
	libelf-dev libdw-dev             # ELF symbols and DWARF (native frames)
	libcapstone-dev                  # x86-64 decoding: return sites of probed methods
	chromium                         # headless check that the HTML flame graph renders
	nodejs                           # node + npm: browser tests of serve's UI (tests/ui, playwright-core)
	binutils                         # readelf, used by tests to check core dumps
	util-linux                       # unshare, setpriv: namespaced fixtures, unprivileged runs
	procps psmisc                    # ps, pkill, fuser in test scripts
	curl                             # drives the sample app's routes
	wrk                              # HTTP load on the realapp fixture (tests/integration/lib.sh: realapp_load)
	python3                          # test helpers read clrtap's JSON output
	golang-go                        # go tool pprof decodes clrtap's pprof (t-lines.sh: source lines)
	musl-tools                       # musl-gcc: the profiler library for Alpine (musl) targets
	libmicrohttpd-dev libsqlite3-dev prometheus # clrtap serve: HTTP server, session history; Prometheus for its test
	libcurl4-openssl-dev             # clrtap fleet: HTTP(S) pushes (loaded with dlopen; headers to build)
	golang-go protobuf-compiler      # t-fleet: third-party decoders (go tool pprof, protoc --decode)
	man-db                           # t-install, t-cli: man renders the generated pages
	libdebuginfod1                   # native symbols from debuginfod servers (loaded with dlopen)
	debuginfod                       # t-natsym: a debuginfod server on loopback
)

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done

if [ "${#missing[@]}" -eq 0 ]; then
	exit 0
fi

echo "clrtap: installing Debian packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
else
	SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >/dev/null
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
