#!/usr/bin/env bash
# clrtap dump analyze (issue 32): a crash dump written by the runtime's
# createdump and heap dumps written by createdump and by clrtap, read with the
# runtime's DAC and nothing else; cross-checked against ClrMD (tests/tools/
# clrmd-ref) on the same dumps: the same threads, managed frames in the same
# order, exceptions, and objects and bytes per type; the retention path of
# keep10k's objects to their static; pending async chains. Dumps are made once.
. "$(dirname "$0")/lib.sh"

CLRMD=$TOOLS/clrmd-ref/clrmd-ref.dll

# same_as_clrmd NAME DUMP ANALYZE_JSON: every fact ClrMD gives matches ours.
same_as_clrmd() {
	local name=$1 dump=$2 mine=$3
	if [ ! -f "$CLRMD" ]; then
		ok "$name: skipped, ClrMD reference not built (scripts/build-fixtures.sh needs NuGet)"
		return
	fi
	if ! timeout 120 dotnet "$CLRMD" "$dump" >"$WORK/ref.json" 2>"$WORK/ref.err"; then
		not_ok "$name: clrmd-ref failed" "$(tail -5 "$WORK/ref.err")"
		return
	fi
	REF=$WORK/ref.json jcheck "$name: runtime, threads, frames, exceptions, heap as ClrMD reads them" "$mine" '
ref = json.load(open(os.environ["REF"]))
def exc(e):
    return None if not e else (e["type"], e["message"], exc(e["inner"]))
def frames(t):
    return [f["method"] for f in t["frames"] if f["kind"] == "managed" and f["method"]]
bad = []
if ref["runtime"] != d["runtime"]:
    bad.append("runtime %r vs %r" % (ref["runtime"], d["runtime"]))
rt = [(t["os_tid"], t["managed_tid"], t["frames"], exc(t["exception"])) for t in ref["threads"]]
mt = [(t["os_tid"], t["managed_tid"], frames(t), exc(t["exception"])) for t in d["threads"]]
if rt != mt:
    bad.append("threads differ: ClrMD %r, clrtap %r" % ([x for x in rt if x not in mt], [x for x in mt if x not in rt]))
rh = {h["type"]: (h["count"], h["bytes"]) for h in ref["heap"]}
mh = {h["type"]: (h["count"], h["bytes"]) for h in d["heap"]["types"]}
if rh != mh:
    bad.append("heap differs: %r" % [(k, rh.get(k), mh.get(k)) for k in sorted(set(rh) | set(mh)) if rh.get(k) != mh.get(k)][:10])
if not rt or not rh:
    bad.append("ClrMD saw nothing")
print("ok" if not bad else "; ".join(bad))
'
}

# --- the crash: createdump's full dump of an unhandled exception ---
if pm_crash_dump "$WORK/crash.core"; then
	ok "crash fixture aborted and createdump wrote its dump"
	[ -n "${SAN_CLRTAP:-}" ] && [ -x "$SAN_CLRTAP" ] &&
		expect_exit "ASan+UBSan: analyze the crash dump" 0 "$SAN_CLRTAP" dump analyze "$WORK/crash.core" --json
	expect_exit "analyze the crash dump" 0 "$CLRTAP" dump analyze "$WORK/crash.core" --json
	printf '%s\n' "$OUT" >"$WORK/crash.json"
	jcheck "triage: the faulting thread took SIGABRT and carries Crash.CrashException, its message, its inner exception, thrown in Crash.Thrower::Throw" "$WORK/crash.json" '
t = [t for t in d["threads"] if t["faulting"]]
assert d["signal"]["name"] == "SIGABRT" and len(t) == 1, (d["signal"], len(t))
t = t[0]
assert t["os_tid"] == d["faulting_thread"] == d["signal"]["tid"]
e = t["exception"]
assert (e["type"], e["message"]) == ("Crash.CrashException", "crash fixture: Thrower.Throw gave up"), e
assert e["stack"][:2] == ["Crash.Thrower::Throw", "Crash.Thrower::Run"] and e["thrown_in"] == "Crash.Thrower::Throw", e
i = e["inner"]
assert (i["type"], i["message"], i["never_thrown"]) == ("System.InvalidOperationException", "crash fixture: the inner cause", True), i
assert [f["method"] for f in t["frames"] if f["method"]][:2] == ["Crash.Thrower::Throw", "Crash.Thrower::Run"]
# the abort path in libcoreclr above the managed frames, by frame pointer, as file+offset
assert t["native_at"].startswith("libc.so.6+0x") and any(n.startswith("libcoreclr.so+0x") for n in t["native_frames"]), (t["native_at"], t["native_frames"])
assert d["dac"]["matched_by"] == "build id" and d["dac"]["path"].endswith("/libmscordaccore.so")
print("ok")'
	jcheck "the three idle threads sleep in Crash.Idler::Wait" "$WORK/crash.json" '
n = sum(1 for t in d["threads"] if [f["method"] for f in t["frames"] if f["method"]][:2] == ["System.Threading.Thread::Sleep", "Crash.Idler::Wait"])
print("ok" if n == 3 else n)'
	expect_exit "text triage" 0 "$CLRTAP" dump analyze "$WORK/crash.core" --no-heap
	contains "text names the exception and its message" "$OUT" "Crash.CrashException: crash fixture: Thrower.Throw gave up"
	contains "text names the throwing method" "$OUT" "thrown in Crash.Thrower::Throw"
	contains "text shows the lambda by its source name" "$OUT" "Clrtap.Fixtures.Program::Main [lambda]"
	same_as_clrmd "crash dump" "$WORK/crash.core" "$WORK/crash.json"

	# "from another machine": the dump's runtime paths point nowhere here; the
	# DAC is found by the runtime's build id among this machine's runtimes
	python3 - "$WORK/crash.core" "$WORK/moved.core" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
old, new = b"/usr/share/dotnet/", b"/nonexistent/dotn/"
open(sys.argv[2], "wb").write(b.replace(old, new))
PY
	rm -f "$WORK/crash.core"
	if [ -e /nonexistent ] || ! grep -q '"/usr/share/dotnet/' "$WORK/crash.json"; then
		ok "moved dump: skipped (/nonexistent exists, or the fixture's runtime is not under /usr/share/dotnet)"
	else
		expect_exit "a dump from another machine (its runtime's paths moved)" 0 "$CLRTAP" dump analyze "$WORK/moved.core" --json --no-heap
		printf '%s\n' "$OUT" >"$WORK/moved.json"
		OTHER=$WORK/crash.json jcheck "moved dump: the DAC found by build id under /usr/share/dotnet, the same triage" "$WORK/moved.json" '
o = json.load(open(os.environ["OTHER"]))
assert d["dac"]["path"] == o["dac"]["path"] and d["dac"]["path"].startswith("/usr/share/dotnet/"), d["dac"]
assert d["runtime"] == o["runtime"] != ""
t = [t for t in d["threads"] if t["faulting"]][0]
assert (t["exception"]["type"], t["exception"]["message"]) == ("Crash.CrashException", "crash fixture: Thrower.Throw gave up")
print("ok")'
	fi
	rm -f "$WORK/moved.core"
else
	not_ok "crash fixture aborted and createdump wrote its dump"
fi

# --- keep10k: heap dumps by createdump and by clrtap ---
if pm_keep10k_dumps "$WORK/keep-cd.core" "$WORK/keep-ct.core"; then
	ok "keep10k heap dumps written by createdump and by clrtap"
	for which in ct cd; do
		expect_exit "analyze the keep10k heap dump ($which) with --root Keep.Item" 0 \
			"$CLRTAP" dump analyze "$WORK/keep-$which.core" --json --root Keep.Item
		printf '%s\n' "$OUT" >"$WORK/keep-$which.json"
		jcheck "($which) exactly 10000 Keep.Item, all retained only through the static Keep.Holder.Items" "$WORK/keep-$which.json" '
k = [h for h in d["heap"]["types"] if h["type"] == "Keep.Item"]
assert len(k) == 1 and k[0]["count"] == 10000, k
assert d["heap"]["read"] and d["heap"]["regions_cut"] == 0, d["heap"]
r = d["root"]
assert (r["instances"], r["reached"]) == (10000, 10000), r
assert [(p["count"], p["path"]) for p in r["paths"]] == [(10000, "[static variable Keep.Holder.Items] Keep.Item[] -> Keep.Item")], r["paths"]
print("ok")'
	done
	OTHER=$WORK/keep-cd.json jcheck "both heap dumps hold the same objects and bytes per type" "$WORK/keep-ct.json" '
o = json.load(open(os.environ["OTHER"]))
a = {h["type"]: (h["count"], h["bytes"]) for h in d["heap"]["types"]}
b = {h["type"]: (h["count"], h["bytes"]) for h in o["heap"]["types"]}
print("ok" if a == b else [(k, a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)])'
	addr=$(json_get "$(cat "$WORK/keep-ct.json")" "[x['address'] for x in d['heap']['largest'] if x['type'] == 'Keep.Item[]'][0]")
	expect_exit "--root of one object by address" 0 "$CLRTAP" dump analyze "$WORK/keep-ct.core" --root "$(printf '0x%x' "$addr")"
	contains "its path is the static" "$OUT" "1 x [static variable Keep.Holder.Items] Keep.Item[]"
	same_as_clrmd "keep10k heap dump by clrtap" "$WORK/keep-ct.core" "$WORK/keep-ct.json"
	if [ -n "${SAN_CLRTAP:-}" ] && [ -x "$SAN_CLRTAP" ]; then
		expect_exit "ASan+UBSan: --root on the heap dump" 0 "$SAN_CLRTAP" dump analyze "$WORK/keep-ct.core" --root Keep.Item
		contains "ASan+UBSan: the same path" "$OUT" "10000 x [static variable Keep.Holder.Items] Keep.Item[] -> Keep.Item"
	fi

	# --- bad input: one line, exit 8, before any work ---
	head -c 20000000 "$WORK/keep-ct.core" >"$WORK/trunc.core"
	cp "$WORK/keep-ct.core" "$WORK/corrupt.core"
	printf '\xff\xff\xff\xff\xff\xff\xff\x7f' | dd of="$WORK/corrupt.core" bs=1 seek=32 conv=notrunc 2>/dev/null
	rm -f "$WORK/keep-cd.core"
else
	not_ok "keep10k heap dumps written by createdump and by clrtap"
fi
# --- pending async chains (the dumpasync job): async-stuck's 5 requests (READY: all suspended) ---
start_fixture async-stuck --requests 5
if "$CLRTAP" dump -p "$FIX_PID" --type heap -o "$WORK/async.core" >/dev/null 2>&1; then
	stop_fixture "$FIX_PID"
	expect_exit "--async needs the heap (usage)" 2 "$CLRTAP" dump analyze "$WORK/async.core" --async --no-heap
	expect_exit "--async on a heap dump" 0 "$CLRTAP" dump analyze "$WORK/async.core" --async --json
	printf '%s\n' "$OUT" >"$WORK/async.json"
	jcheck "5 chains Handle -> Get -> Reserve awaiting a TaskCompletionSource's task, as stacks --async names them" "$WORK/async.json" '
c = d["async"]["chains"]
assert [(x["count"], x["frames"], x["awaits"], x["awaits_owner"]) for x in c] == [(5, ["Clrtap.Fixtures.OrderEndpoint::Handle [async]", "Clrtap.Fixtures.Orders::Get [async]", "Clrtap.Fixtures.Inventory::Reserve [async]"], "System.Threading.Tasks.Task<System.Int32>", "System.Threading.Tasks.TaskCompletionSource<System.Int32>")], c
assert d["async"]["state_machines"] == d["async"]["on_chains"] == 15, d["async"]
print("ok")'
	rm -f "$WORK/async.core"
else
	stop_fixture "$FIX_PID"
	not_ok "async-stuck heap dump written"
fi

head -c 1000000 /dev/urandom >"$WORK/random.core"
for f in trunc corrupt random; do
	[ -f "$WORK/$f.core" ] || continue
	[ -n "${SAN_CLRTAP:-}" ] && [ -x "$SAN_CLRTAP" ] &&
		expect_exit "ASan+UBSan: $f core file: bad input" 8 "$SAN_CLRTAP" dump analyze "$WORK/$f.core"
	expect_exit "$f core file: bad input" 8 "$CLRTAP" dump analyze "$WORK/$f.core"
	equals "$f: one line on stderr, nothing on stdout" "$(printf '%s' "$ERR" | wc -l):${#OUT}" "0:0"
	[ "$f" = trunc ] && contains "truncated: says so, with the sizes" "$ERR" "truncated: the file has 20000000 bytes"
done
[ -f "$WORK/keep-ct.core" ] && expect_exit "--dac that does not exist: no DAC (7)" 7 "$CLRTAP" dump analyze "$WORK/keep-ct.core" --dac /nonexistent/libmscordaccore.so
[ -f "$WORK/keep-ct.core" ] && expect_exit "--root of a type the heap does not hold: usage (2)" 2 "$CLRTAP" dump analyze "$WORK/keep-ct.core" --root No.Such.Type
expect_exit "no file: usage (2)" 2 "$CLRTAP" dump analyze

finish
