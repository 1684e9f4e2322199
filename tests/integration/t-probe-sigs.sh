#!/usr/bin/env bash
# clrtap probe finds the JIT'd code of methods whose parameters are types from
# other assemblies (the perf map writes "valuetype [System.Runtime]System.Decimal"),
# and says where a method the JIT inlined went (its inlining events over EventPipe).
. "$(dirname "$0")/lib.sh"

HWBP=$("$TOOLS/hwbpcheck")
echo "    this machine: hardware execute breakpoints: $HWBP"
N=20

start_fixture probe-sigs --calls "$N" --interval-ms 2 --trigger "$WORK/trig"
expect_exit "list the signature targets" 0 "$CLRTAP" probe -p "$FIX_PID" --list 'Clrtap.Fixtures.SigTargets::*'
L=$OUT
# each method, then its JIT code (address, size, tier) on the next line
jit_of() {
	local label=$1 head=$2
	check "$label: matched to its JIT code (address and tier)" \
		bash -c 'printf "%s\n" "$1" | grep -A1 -F -- "$2" | tail -1 | grep -qE "^    JIT  0x[0-9a-f]+ size [0-9]+ (QuickJitted|OptimizedTier1|Optimized|InstrumentedTier)"' _ "$L" "$head"
}
jit_of "CancellationToken" "Clrtap.Fixtures.SigTargets::WithToken(int32, System.Threading.CancellationToken) int32 [sample]"
jit_of "HttpContext" "Clrtap.Fixtures.SigTargets::WithContext(Microsoft.AspNetCore.Http.HttpContext) int32 [sample]"
jit_of "DateTime" "Clrtap.Fixtures.SigTargets::WithDate(System.DateTime) int64 [sample]"
jit_of "decimal" "Clrtap.Fixtures.SigTargets::WithDecimal(System.Decimal, int32) System.Decimal [sample]"
jit_of "Span<byte>" "Clrtap.Fixtures.SigTargets::WithSpan(System.Span\`1[uint8]) int32 [sample]"
jit_of "ReadOnlySpan<char>" "Clrtap.Fixtures.SigTargets::WithChars(System.ReadOnlySpan\`1[char]) int32 [sample]"
jit_of "the inliner" "Clrtap.Fixtures.SigTargets::InlineCaller(int32) int32 [sample]"
check "the inlined method has no code of its own" \
	bash -c 'printf "%s\n" "$1" | grep -A1 -F "SigTargets::Inlined(int32)" | tail -1 | grep -q "not compiled"' _ "$L"
equals "no method shown without code but the inlined one" "$(grep -c 'not compiled' <<<"$L")" 1
# the C# alias and the metadata name both narrow
expect_exit "(decimal, int) narrows" 0 "$CLRTAP" probe -p "$FIX_PID" --list '*::WithDecimal(decimal, int)'
contains "(decimal, int) found" "$OUT" "WithDecimal(System.Decimal, int32)"
# types as C# writes them, without namespace or generic arity
expect_exit "(HttpContext) narrows" 0 "$CLRTAP" probe -p "$FIX_PID" --list '*::WithContext(HttpContext)'
contains "(HttpContext) found" "$OUT" "WithContext(Microsoft.AspNetCore.Http.HttpContext)"
expect_exit "(Span<byte>) narrows" 0 "$CLRTAP" probe -p "$FIX_PID" --list 'Clrtap.Fixtures.SigTargets::*(Span<byte>)'
equals "(Span<byte>) matches WithSpan only" "$(grep -c '^Clrtap' <<<"$OUT")" 1
contains "(Span<byte>) found" "$OUT" "WithSpan(System.Span\`1[uint8])"

# calls counted on that code (where breakpoints fire; elsewhere: said, not 0),
# value-type arguments of known layout decoded (decimal, DateTime, CancellationToken)
"$CLRTAP" probe -p "$FIX_PID" -d 4 --args 'Clrtap.Fixtures.SigTargets::With*' \
	>"$WORK/c.out" 2>"$WORK/c.err" &
P=$!
wait_for_line "$WORK/c.err" 'tracing|nothing to trace' 20 "$P" >/dev/null
touch "$WORK/trig"
wait_for_line "$FIX_OUT" '^DONE ' 60 "$FIX_PID" >/dev/null
wait "$P"
C=$(cat "$WORK/c.err")
contains "one line says which methods" "$C" "'Clrtap.Fixtures.SigTargets::With*' matches 6 methods, tracing all:"
if [[ $HWBP == fires* ]]; then
	# 6 methods, 4 debug registers: the ones armed count every call
	for m in 'WithToken(int32, System.Threading.CancellationToken)' 'WithContext(Microsoft.AspNetCore.Http.HttpContext)' \
		'WithDate(System.DateTime)' 'WithDecimal(System.Decimal, int32)'; do
		contains "counted: $m" "$C" "SigTargets::$m: $N calls"
	done
	contains "slots said" "$C" "not armed (no hardware breakpoint slot left)"
	A=$(cat "$WORK/c.out")
	contains "decimal argument decoded (SysV: two registers)" "$A" "SigTargets::WithDecimal(amount=1.5, times=0) [QuickJitted]"
	contains "DateTime argument decoded" "$A" "SigTargets::WithDate(when=2024-01-02T03:04:05.0000000Z) [QuickJitted]"
	contains "CancellationToken argument decoded" "$A" "SigTargets::WithToken(x=0, ct=CancellationToken.None) [QuickJitted]"
	lacks "no unexplained ?" "$A" "?"
	equals "the 2 unarmed methods: not counted, no 0" "$(grep -c ': calls NOT counted: none of its code could be armed' "$WORK/c.err")" 2
	lacks "no silent zero" "$C" ": 0 calls"
else
	contains "breakpoints do not fire: said" "$C" "hardware execute breakpoints do not fire on this machine"
fi
stop_fixture "$FIX_PID"

# ---- inlining said plainly: the caller is compiled (optimized) only after the trigger ----
start_fixture probe-sigs --calls 5 --interval-ms 2 --late-inline 1 --trigger "$WORK/trig-i"
"$CLRTAP" probe -p "$FIX_PID" -d 6 'Clrtap.Fixtures.SigTargets::Inlined' >"$WORK/i.out" 2>"$WORK/i.err" &
P=$!
wait_for_line "$WORK/i.err" 'waiting' 20 "$P" >/dev/null
touch "$WORK/trig-i"
wait_for_line "$FIX_OUT" '^DONE ' 60 "$FIX_PID" >/dev/null
wait "$P"
equals "inlined: clrtap exits 0" "$?" 0
I=$(cat "$WORK/i.err")
contains "inlined: waited for code" "$I" "SigTargets::Inlined(int32) has no code yet: waiting"
contains "inlined: said into what, when the JIT did it" "$I" \
	"clrtap: Clrtap.Fixtures.SigTargets::Inlined was inlined into Clrtap.Fixtures.SigTargets::InlineCaller: its calls run inside that code, not on their own; probe Clrtap.Fixtures.SigTargets::InlineCaller instead"
# InlineCaller calls it twice: two inlined call sites, one compilation
contains "inlined: summary, exact" "$I" \
	"clrtap: Clrtap.Fixtures.SigTargets::Inlined(int32): no code of its own: inlined into Clrtap.Fixtures.SigTargets::InlineCaller (2 times); its calls are counted only by probing those"
lacks "inlined: no 0 calls" "$I" ": 0 calls"
equals "inlined: no call lines" "$(wc -l <"$WORK/i.out")" 0
stop_fixture "$FIX_PID"

# ---- a framework method taking an HttpContext, on a real ASP.NET app ----
# EndpointMiddleware::Invoke(HttpContext): ReadyToRun code, then (after the
# warm-up requests) tier-1 JIT code, which runs every request from then on
PORT=$(free_port)
start_fixture web --port "$PORT"
EM='Microsoft.AspNetCore.Routing.EndpointMiddleware::Invoke(HttpContext)'
for ((t = 0; t < 20; t++)); do
	for ((i = 0; i < 50; i++)); do curl -s "http://127.0.0.1:$PORT/api/fibonacci?pos=3" >/dev/null; done
	"$CLRTAP" probe -p "$FIX_PID" --list "$EM" 2>/dev/null | grep -q ' OptimizedTier1$' && break
	sleep 0.5
done
expect_exit "EndpointMiddleware::Invoke(HttpContext): --list" 0 "$CLRTAP" probe -p "$FIX_PID" --list "$EM"
contains "EndpointMiddleware: its signature as the runtime writes it, matched" "$OUT" \
	"Microsoft.AspNetCore.Routing.EndpointMiddleware::Invoke(Microsoft.AspNetCore.Http.HttpContext) System.Threading.Tasks.Task [Microsoft.AspNetCore.Routing]"
check "EndpointMiddleware: its tier-1 JIT code found (address and tier)" \
	grep -qE '^    JIT  0x[0-9a-f]+ size [0-9]+ OptimizedTier1$' <<<"$OUT"
contains "EndpointMiddleware: its ReadyToRun code found" "$OUT" "    R2R  "
"$CLRTAP" probe -p "$FIX_PID" -d 30 --count "$EM" >"$WORK/em.out" 2>"$WORK/em.err" &
P=$!
wait_for_line "$WORK/em.err" 'tracing|nothing to trace' 20 "$P" >/dev/null
for ((i = 0; i < 20; i++)); do curl -s "http://127.0.0.1:$PORT/api/fibonacci?pos=3" >/dev/null; done
sleep 0.3
kill -INT "$P"
wait "$P"
equals "EndpointMiddleware: clrtap exits 0" "$?" 0
E=$(cat "$WORK/em.err")
if [[ $HWBP == fires* ]]; then
	contains "EndpointMiddleware: every request counted (on its JIT code)" "$E" \
		"EndpointMiddleware::Invoke(Microsoft.AspNetCore.Http.HttpContext): 20 calls"
	check "EndpointMiddleware: the tier-1 code counted them" grep -qE '^clrtap:   \[OptimizedTier1\] 20 calls \(hw-breakpoint\)$' "$WORK/em.err"
else
	contains "EndpointMiddleware: its JIT code cannot be watched, said" "$E" \
		"code are NOT counted (cannot be watched on this machine)"
fi
# System.Uri::EscapeDataString has two overloads: all traced, one line says which
expect_exit "EscapeDataString: both overloads traced" 0 "$CLRTAP" probe -p "$FIX_PID" -d 1 --count 'System.Uri::EscapeDataString'
contains "EscapeDataString: one line says which" "$ERR" \
	"'System.Uri::EscapeDataString' matches 2 methods, tracing all: 'System.Uri::EscapeDataString(string)', 'System.Uri::EscapeDataString(System.ReadOnlySpan\`1[char])' (add '(signature)' to pick one)"
equals "EscapeDataString: both armed" "$(grep -c '^clrtap: System.Uri::EscapeDataString(.*) \[ReadyToRun\] at System.Private.Uri.dll+0x[0-9a-f]* size [0-9]*: uprobe on entry$' <<<"$ERR")" 2
expect_exit "EscapeDataString(string) narrows to one" 0 "$CLRTAP" probe -p "$FIX_PID" --list 'System.Uri::EscapeDataString(string)'
equals "EscapeDataString(string): one method" "$(grep -c '^System.Uri::EscapeDataString' <<<"$OUT")" 1
stop_fixture "$FIX_PID"

finish
