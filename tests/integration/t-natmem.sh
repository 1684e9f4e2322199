#!/usr/bin/env bash
# Native allocations by stack (issue 31): clrtap agent native-memory on the
# sample's native-leak mode (128 MiB kept by natfix_leak_keep from
# NativeLeaker::Keep, 256 MiB churned by natfix_churn; docs/fixtures.md).
# The live view names both frames and holds what the fixture kept (+-10 %),
# the churn is not live, every GOT slot is back after the detach, and a
# second attach works (the target is left as found).
. "$(dirname "$0")/lib.sh"

# nm_run PID TRIGGER JSON: native-memory for 5 s at 64 KiB (~2000 samples for
# the 128 MiB kept, a 1-sigma error of 2.2 %); the fixture's workload starts
# once the hooks are in place. Sets NM_RC.
nm_run() {
	"$CLRTAP" agent native-memory -p "$1" -d 5 --sample-bytes 64KiB --json -o "$3.folded" >"$3" 2>"$3.err" &
	local nm=$!
	KILL_PIDS+=("$nm")
	wait_for_line "$3.err" 'hooks in place' 30 "$nm" && touch "$2"
	wait "$nm"
	NM_RC=$?
}

start_fixture native-leak --keep-mb 128 --churn-mb 256 --trigger "$WORK/go"
nm_run "$FIX_PID" "$WORK/go" "$WORK/nm.json"
equals "native-memory exits 0" "$NM_RC" 0
wait_for_line "$FIX_OUT" "^DONE " 20 "$FIX_PID" || cat "$FIX_OUT" "$WORK/nm.err" >&2
KEPT=$(sed -n "s/^DONE kept_bytes=\([0-9]*\).*/\1/p" "$FIX_OUT")
check "the fixture said what it kept" test -n "$KEPT"
jcheck "live view: the top stack is natfix_leak_keep called by NativeLeaker::Keep" "$WORK/nm.json" \
	"print('ok' if [f['name'] for f in d['live'][0]['frames'][:2]] == ['natfix_leak_keep (libnatfix.so)', 'Clrtap.Fixtures.NativeLeaker::Keep'] and d['live'][0]['frames'][1]['managed'] else json.dumps(d)[:1500])"
jcheck "live bytes of that stack within 10 % of the $KEPT bytes kept" "$WORK/nm.json" \
	"print('ok' if abs(d['live'][0]['bytes'] - $KEPT) <= 0.10 * $KEPT else json.dumps(d)[:1500])"
jcheck "the churn is not live: no live stack through natfix_churn; the churn view has it (~256 MiB, +-25 %)" "$WORK/nm.json" \
	"print('ok' if not any(f['name'].startswith('natfix_churn') for s in d['live'] for f in s['frames']) and d['churn'][0]['frames'][0]['name'] == 'natfix_churn (libnatfix.so)' and abs(d['churn'][0]['bytes'] - 256 * 2**20) <= 0.25 * 256 * 2**20 else json.dumps(d)[:1500])"
jcheck "nothing lost, every GOT slot read back as the original after the detach" "$WORK/nm.json" \
	"print('ok' if d['samples_lost'] == 0 and d['live_table_overflow'] == 0 and d['restore']['checked'] and d['restore']['still_hooked'] == 0 and d['restore']['original'] == d['got_slots'] > 0 else json.dumps(d)[:1500])"
SLOTS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["got_slots"])' "$WORK/nm.json")
check "the live view as a flame graph (-o .folded): Keep calling natfix_leak_keep, within 10 % of $KEPT bytes" python3 -c '
import sys
t = sum(int(l.rsplit(" ", 1)[1]) for l in open(sys.argv[1]) if l.rsplit(" ", 1)[0].endswith("Clrtap.Fixtures.NativeLeaker::Keep;natfix_leak_keep (libnatfix.so)"))
sys.exit(0 if abs(t - int(sys.argv[2])) <= 0.10 * int(sys.argv[2]) else 1)' "$WORK/nm.json.folded" "$KEPT"
# clrtap SIGKILLed with its hooks in place: the profiler puts them back itself
"$CLRTAP" agent native-memory -p "$FIX_PID" -d 30 >/dev/null 2>"$WORK/kill.err" &
NM=$!
KILL_PIDS+=("$NM")
wait_for_line "$WORK/kill.err" 'hooks in place' 30 "$NM"
kill -KILL "$NM"
wait "$NM" 2>/dev/null
# then a second attach (once the first profiler has left: about 1.5 s) finds
# every slot as it was: had one kept the old hook, it would be refused as
# "another allocator" and the count would differ
for _ in 1 2 3 4 5 6 7 8 9 10; do
	"$CLRTAP" agent native-memory -p "$FIX_PID" -d 1 --json >"$WORK/nm2.json" 2>"$WORK/nm2.err" && break
	sleep 0.5
done
jcheck "after clrtap's SIGKILL: a new attach works and finds the $SLOTS slots as they were (none held a hook)" "$WORK/nm2.json" \
	"print('ok' if d['got_slots'] == $SLOTS and d['modules_other_allocator'] == 0 and d['restore']['original'] == d['got_slots'] else json.dumps(d)[:1500])"
expect_exit "-o without native-memory is a usage error" 2 "$CLRTAP" agent run -p "$FIX_PID" -o "$WORK/x.html"
expect_exit "--sample-bytes below 1 KiB is a usage error" 2 "$CLRTAP" agent native-memory -p "$FIX_PID" --sample-bytes 100
stop_fixture "$FIX_PID"

# musl: the sample published for linux-musl-x64 under musl's own loader, as
# t-agent-musl.sh runs it (Debian's libstdc++/libgcc_s on a musl shim)
MUSL_APP=$ROOT/build/fixtures/sample-musl/sample
if [ ! -x "$MUSL_APP" ] || [ ! -f "$ROOT/build/fixtures/sample-musl/libnatfix.so" ] || ! command -v musl-gcc >/dev/null; then
	skip "musl: no musl fixture or musl-gcc (see scripts/build-fixtures.sh's note)"
	finish
fi
musl_cxx "$WORK/gl"
FIX_OUT=$WORK/fixture-musl.out
env LD_LIBRARY_PATH="$WORK/gl" DOTNET_CLI_TELEMETRY_OPTOUT=1 "$MUSL_APP" native-leak --keep-mb 128 \
	--churn-mb 256 --trigger "$WORK/go-musl" >"$FIX_OUT" 2>&1 &
P=$!
KILL_PIDS+=("$P")
wait_for_line "$FIX_OUT" '^READY ' 60 "$P"
nm_run "$P" "$WORK/go-musl" "$WORK/nmm.json"
equals "musl: native-memory exits 0" "$NM_RC" 0
wait_for_line "$FIX_OUT" "^DONE " 20 "$P"
KEPT=$(sed -n "s/^DONE kept_bytes=\([0-9]*\).*/\1/p" "$FIX_OUT")
check "musl: the musl build of the profiler is what the target mapped" grep -q 'clrtap-profiler-[0-9a-f]*-musl.so' "/proc/$P/maps"
jcheck "musl: natfix_leak_keep under NativeLeaker::Keep, within 10 % of the $KEPT bytes kept; churn not live; every slot back" "$WORK/nmm.json" \
	"print('ok' if [f['name'] for f in d['live'][0]['frames'][:2]] == ['natfix_leak_keep (libnatfix.so)', 'Clrtap.Fixtures.NativeLeaker::Keep'] and abs(d['live'][0]['bytes'] - $KEPT) <= 0.10 * $KEPT and not any(f['name'].startswith('natfix_churn') for s in d['live'] for f in s['frames']) and d['restore']['original'] == d['got_slots'] > 0 else json.dumps(d)[:1500])"
stop_fixture "$P"
finish
