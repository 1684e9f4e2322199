#!/usr/bin/env bash
# Async code as the programmer wrote it (issue 29).
# async-chain (Run → Checkout → Order → Price → Burn → Spin, a yield at every
# await): both profile engines name the state machine Shop::Price [async], the
# local function Shop::Price [local Burn], no frame of the default output holds
# a compiler's d__ name, and --raw-names gives the runtime's names back.
# async-stuck (50 requests awaiting one TaskCompletionSource never completed):
# stacks --async shows one group of 50 with the awaited type, its owner and the
# chain up to the endpoint, in text and JSON; plain stacks shows no thread in
# any of those methods (a suspended chain is on no thread).
. "$(dirname "$0")/lib.sh"

PRICE="Clrtap.Fixtures.Shop::Price [async]"
BURN="Clrtap.Fixtures.Shop::Price [local Burn]"
SPIN="Clrtap.Fixtures.Shop::Spin"

# chain_share FILE [CHAIN [root]]: % of the samples holding Spin whose stack has
# CHAIN (default Price [async]; Price [local Burn]; Spin), from the root with "root"
chain_share() {
	python3 - "$1" "${2:-$PRICE;$BURN;$SPIN}" "$SPIN" "${3:-}" <<'PY'
import sys
f, chain, leaf, root = sys.argv[1:5]
tot = hit = 0
for line in open(f):
    st, n = line.rstrip("\n").rsplit(" ", 1)
    if leaf in st.split(";"):
        tot += int(n)
        hit += int(n) if (st.startswith(chain) if root else chain in st) else 0
print(int(100 * hit / tot) if tot else -1)
PY
}

# --async first: the chain begins during the session (the trigger is touched
# once the session runs), so every caller's task is seen beginning
start_fixture async-chain --trigger "$WORK/go"
PID=$FIX_PID
"$CLRTAP" profile -p "$PID" -d 3 --engine eventpipe --async -o "$WORK/logical.folded" >"$WORK/logical.out" 2>&1 &
APID=$!
sleep 1
touch "$WORK/go"
wait "$APID"
equals "profile --async (exit)" "$?" 0
OUT=$(cat "$WORK/logical.out")
# (young code: the lambda Step may sit between Burn and Spin, not yet inlined)
LOGICAL="Clrtap.Fixtures.Shop::Run [async];Clrtap.Fixtures.Shop::Checkout [async];Clrtap.Fixtures.Shop::Order [async];[await];$PRICE;$BURN;"
contains "--async: says how many samples got their callers" "$OUT" "async: "
SHARE=$(chain_share "$WORK/logical.folded" "$LOGICAL" root)
echo "    --async: $SHARE % of Spin's samples under Run; Checkout; Order; [await]; Price from the root"
check "--async: >= 90 % of Spin's samples under their logical callers, in order ($SHARE %)" test "$SHARE" -ge 90
F=$(cat "$WORK/logical.folded")
lacks "--async: no d__ frame" "$F" "d__"
for engine in perf eventpipe; do
	expect_exit "profile --engine $engine" 0 "$CLRTAP" profile -p "$PID" -d 2 --engine "$engine" -o "$WORK/$engine.folded"
	F=$(cat "$WORK/$engine.folded")
	contains "$engine: the state machine as its method" "$F" ";$PRICE;"
	contains "$engine: the local function as its enclosing method" "$F" ";$BURN;"
	lacks "$engine: no compiler d__ name in any frame" "$F" "d__"
	SHARE=$(chain_share "$WORK/$engine.folded")
	echo "    $engine: $SHARE % of Spin's samples under Price [async]; Price [local Burn]"
	check "$engine: >= 90 % of Spin's samples under the named chain ($SHARE %)" test "$SHARE" -ge 90
done
expect_exit "profile --async-both" 0 "$CLRTAP" profile -p "$PID" -d 1 --engine eventpipe --async-both -o "$WORK/both.folded"
# (the chain began before this session: Run is named if its code is named in
# time, else shown as a caller begun before the session; Checkout on are seen)
S1=$(chain_share "$WORK/both.folded" "System.Threading.Thread::StartCallback;" root)
S2=$(chain_share "$WORK/both.folded" "Clrtap.Fixtures.Shop::Checkout [async];Clrtap.Fixtures.Shop::Order [async];[await];$PRICE;$BURN;")
check "--async-both: >= 90 % of Spin's samples under the thread's own frames ($S1 %)" test "$S1" -ge 90
check "--async-both: ... and under Checkout; Order; [await]; Price ($S2 %)" test "$S2" -ge 90
expect_exit "--async with the perf engine" 2 "$CLRTAP" profile -p "$PID" -d 1 --engine perf --async -o "$WORK/x.folded"
contains "--async with the perf engine: says why" "$ERR" "--async needs --engine eventpipe"
expect_exit "profile --raw-names" 0 "$CLRTAP" --raw-names profile -p "$PID" -d 1 --engine eventpipe -o "$WORK/raw.folded"
F=$(cat "$WORK/raw.folded")
contains "--raw-names: the runtime's state machine name" "$F" ";Clrtap.Fixtures.Shop+<Price>d__"
contains "--raw-names: the runtime's local function name" "$F" ";Clrtap.Fixtures.Shop::<Price>g__Burn|"
lacks "--raw-names: no source form" "$F" "[async]"
"$CLRTAP" stacks -p "$PID" --json >"$WORK/stacks.json" 2>/dev/null
jcheck "stacks --json: a thread in Price, source names in frames, the runtime's in raw_frames" "$WORK/stacks.json" '
th = [t for t in d["threads"] if "Clrtap.Fixtures.Shop::Price [async]" in t["frames"]]
assert th, [t["frames"] for t in d["threads"]]
t = th[0]
assert len(t["raw_frames"]) == len(t["frames"]), t
i = t["frames"].index("Clrtap.Fixtures.Shop::Price [async]")
assert t["raw_frames"][i].startswith("Clrtap.Fixtures.Shop+<Price>d__") and t["raw_frames"][i].endswith("::MoveNext"), t
assert all(r == f for r, f in zip(t["raw_frames"], t["frames"]) if f == "Clrtap.Fixtures.Shop::Spin"), t
print("ok")'
stop_fixture "$PID"

start_fixture async-stuck --requests 50
PID=$FIX_PID
expect_exit "stacks --async" 0 "$CLRTAP" stacks -p "$PID" --async
contains "one group of 50, the awaited type and its owner" "$OUT" \
	"50 chains awaiting System.Threading.Tasks.Task<System.Int32> (the task of a System.Threading.Tasks.TaskCompletionSource<System.Int32>)"
contains "the chain up to the endpoint, outermost first" "$OUT" \
	"  Clrtap.Fixtures.OrderEndpoint::Handle [async]
  Clrtap.Fixtures.Orders::Get [async]
  Clrtap.Fixtures.Inventory::Reserve [async]
  └─ awaits System.Threading.Tasks.Task<System.Int32>"
contains "says the cost" "$ERR" "forcing a full, blocking gen-2 GC in pid $PID"
contains "says what it cannot know" "$OUT" "how long each has waited: not known"
"$CLRTAP" stacks -p "$PID" --async --json >"$WORK/async.json" 2>/dev/null
jcheck "--json: the group of 50 with its frames and owner" "$WORK/async.json" '
g = [c for c in d["chains"] if c["count"] == 50]
assert len(g) == 1, d["chains"]
g = g[0]
assert g["awaits"] == "System.Threading.Tasks.Task<System.Int32>", g
assert g["awaits_owner"] == "System.Threading.Tasks.TaskCompletionSource<System.Int32>", g
assert g["frames"] == ["Clrtap.Fixtures.OrderEndpoint::Handle [async]", "Clrtap.Fixtures.Orders::Get [async]",
                       "Clrtap.Fixtures.Inventory::Reserve [async]"], g
assert g["raw_frames"] == ["AsyncStateMachineBox<System.Int32,Clrtap.Fixtures.OrderEndpoint+<Handle>d__0>",
                           "AsyncStateMachineBox<System.Int32,Clrtap.Fixtures.Orders+<Get>d__0>",
                           "AsyncStateMachineBox<System.Int32,Clrtap.Fixtures.Inventory+<Reserve>d__4>"], g
assert g["cut"] is False and g["waited_ms"] is None
assert d["state_machines"] >= 150 and d["on_chains"] >= 150, d
print("ok")'
expect_exit "plain stacks" 0 "$CLRTAP" stacks -p "$PID"
contains "plain stacks sampled threads" "$OUT" "threads sampled"
lacks "plain stacks: no thread in the endpoint" "$OUT" "OrderEndpoint"
lacks "plain stacks: no thread in Reserve" "$OUT" "Inventory"
stop_fixture "$PID"

finish
