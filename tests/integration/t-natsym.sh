#!/usr/bin/env bash
# Native symbol sources (issue 28, docs/internals/symsrv.md): the native-hot
# fixture calls a stripped library (build/fixtures/native/libclrtapnat.so,
# GNU build-id, debug file kept apart). A profile names its three hidden hot
# functions from Debian's debuginfod (on loopback over a directory holding
# the debug file), from a Microsoft-style symbol server (python's
# http.server over a directory in the SSQP layout), and from the cache with
# both servers stopped; with no server configured they are reported as
# addresses (sub_<addr>) and the summary says so; a served file that is not
# the debug file (no .symtab) is refused and not kept; a bad URL is a usage
# error. One fixture process for every check.
. "$(dirname "$0")/lib.sh"

NAT=$ROOT/build/fixtures/native
LIB=$NAT/libclrtapnat.so
DBG=$NAT/debug/libclrtapnat.so.debug
HOT="natsym_hot_mix natsym_hot_sieve natsym_hot_crc"

if [ ! -f "$LIB" ] || [ ! -f "$DBG" ]; then
	skip "$LIB or its debug file not built (scripts/build-fixtures.sh)"
	finish
fi
if ! command -v debuginfod >/dev/null 2>&1; then
	skip "debuginfod not installed (scripts/install-deps.sh installs it)"
	finish
fi
BID=$(readelf -n "$LIB" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
check "the fixture library has a build-id" test -n "$BID"
lacks "the fixture library is stripped (no .symtab)" "$(readelf -S "$LIB")" ".symtab"

# expect_exit's argv for one profile; PROF_OUT: its folded output
profile() { # profile NAME [options...]
	local name=$1
	shift
	PROF_OUT=$WORK/$name.folded
	expect_exit "profile ($name)" 0 "$CLRTAP" profile -p "$PID" -d 2 -F 499 -o "$PROF_OUT" "$@"
	FOLDED=$(cat "$PROF_OUT" 2>/dev/null)
}

names_all() { # names_all WHAT: each hot function named exactly, as a frame of the library
	local f
	for f in $HOT; do
		contains "$1: $f named" "$FOLDED" "libclrtapnat.so!$f "
	done
	lacks "$1: no frame of the library by address only" "$FOLDED" "libclrtapnat.so!sub_"
}

expect_exit "a symbol server that is not http(s) is a usage error" 2 "$CLRTAP" profile -p 1 --symbol-server ftp://127.0.0.1/x
contains "  and the message says so" "$ERR" "not an http:// or https:// URL: 'ftp://127.0.0.1/x'"

start_fixture native-hot
PID=$FIX_PID

# ---- no server configured: addresses only, said so (an empty cache of its own)
profile none --symbol-cache "$WORK/c0" --debuginfod ''
contains "no server: the library's frames are addresses" "$FOLDED" "libclrtapnat.so!sub_"
for f in $HOT; do lacks "no server: $f not named" "$FOLDED" "$f"; done
contains "no server: the summary names the library as named by address only" "$OUT" \
	"native frames named by address only (sub_<address>: no .symtab, no debug file): "
contains "  ... libclrtapnat.so among them" "$(grep 'named by address only' <<<"$OUT")" "libclrtapnat.so"
contains "  ... and how to name them" "$OUT" "--symbol-server or --debuginfod name them"

# symbols: the same answer per library, as JSON
expect_exit "symbols --json (no server)" 0 "$CLRTAP" symbols -p "$PID" --json --symbol-cache "$WORK/c0" --debuginfod ''
NAMES=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(*[l["names"]+" "+str(l["source"])+" "+l["build_id"] for l in d["libraries"] if l["module"]=="libclrtapnat.so"])' "$OUT")
equals "symbols: the library is named by address only, its build-id given" "$NAMES" "address_only None $BID"

# ---- debuginfod on loopback over a directory holding the debug file
mkdir -p "$WORK/di"
cp "$DBG" "$WORK/di/"
DPORT=$(free_port)
debuginfod -F -p "$DPORT" -d "$WORK/di.sqlite" "$WORK/di" >"$WORK/di.log" 2>&1 &
DI_PID=$!
KILL_PIDS+=("$DI_PID")
for ((i = 0; i < 100; i++)); do
	curl -sf -o /dev/null "http://127.0.0.1:$DPORT/buildid/$BID/debuginfo" && break
	sleep 0.1
done
profile debuginfod --symbol-cache "$WORK/c1" --debuginfod "http://127.0.0.1:$DPORT"
names_all "debuginfod"
contains "debuginfod: the summary names the source" "$OUT" "native names from symbol sources: libclrtapnat.so (debuginfod)"
check "debuginfod: the debug file is kept in the cache as <build-id>.debug" cmp -s "$DBG" "$WORK/c1/debug/$BID.debug"

# ---- a Microsoft-style symbol server (SSQP layout) over HTTP
KEY=_.debug/elf-buildid-sym-$BID/_.debug
mkdir -p "$WORK/ms/$(dirname "$KEY")"
cp "$LIB" "$WORK/ms/$KEY" # first a file with the right build-id but no .symtab: refused
SPORT=$(free_port)
python3 -m http.server "$SPORT" --bind 127.0.0.1 --directory "$WORK/ms" >"$WORK/ms.log" 2>&1 &
MS_PID=$!
KILL_PIDS+=("$MS_PID")
for ((i = 0; i < 100; i++)); do
	curl -sf -o /dev/null "http://127.0.0.1:$SPORT/$KEY" && break
	sleep 0.1
done
profile ssqp-bad --symbol-cache "$WORK/c2" --debuginfod '' --symbol-server "http://127.0.0.1:$SPORT"
contains "a served file without .symtab: the library stays addresses" "$FOLDED" "libclrtapnat.so!sub_"
check "  ... and it is not kept" test ! -e "$WORK/c2/debug/$BID.debug"
contains "  ... the server was asked for the SSQP key" "$(cat "$WORK/ms.log")" "GET /$KEY HTTP"
contains "  ... then for the image's key" "$(cat "$WORK/ms.log")" "GET /libclrtapnat.so/elf-buildid-$BID/libclrtapnat.so HTTP"

cp "$DBG" "$WORK/ms/$KEY"
profile ssqp --symbol-cache "$WORK/c3" --debuginfod '' --symbol-server "http://127.0.0.1:$SPORT"
names_all "symbol server"
contains "symbol server: the summary names the source" "$OUT" "native names from symbol sources: libclrtapnat.so (symbol server)"
check "symbol server: the debug file is kept in the cache" cmp -s "$DBG" "$WORK/c3/debug/$BID.debug"

# ---- both servers stopped: the cache names them
stop_fixture "$DI_PID"
stop_fixture "$MS_PID"
profile cache --symbol-cache "$WORK/c3" --debuginfod "http://127.0.0.1:$DPORT" --symbol-server "http://127.0.0.1:$SPORT"
names_all "cache, servers stopped"
contains "cache: the summary names the source" "$OUT" "native names from symbol sources: libclrtapnat.so (cache)"
expect_exit "symbols (servers stopped)" 0 "$CLRTAP" symbols -p "$PID" --symbol-cache "$WORK/c3" --debuginfod ''
contains "symbols: the library is named from the cache" "$(grep 'libclrtapnat.so$' <<<"$OUT")" "served (cache)"

finish
