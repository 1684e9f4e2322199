#!/usr/bin/env bash
# The capability table (docs/capabilities.md) is what scripts/captable.sh
# measures: a subset of its runs (4 commands, the sets that matter) is made
# again and each line must equal the checked-in one. The table depends on the
# machine (kernel.perf_event_paranoid, the capabilities root holds): on one
# that differs from the recorded machine the test says so and compares only
# what does not depend on it (the refusals).
. "$(dirname "$0")/lib.sh"

DOC=$ROOT/docs/capabilities.md
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
	ok "not root or no setpriv: the table cannot be measured here (nothing compared)"
	finish
fi
check "the generated section is there" grep -q '^<!-- captable:begin' "$DOC"
REC_PARANOID=$(grep -o 'kernel.perf_event_paranoid = -\?[0-9]*' "$DOC" | head -1 | awk '{ print $3 }')
PARANOID=$(cat /proc/sys/kernel/perf_event_paranoid)
REC_MISSING=$(grep -o 'which lacks [A-Z_, ]*:' "$DOC" | head -1 | sed 's/which lacks //; s/://; s/,//g')
BND=$((16#$(awk '/^CapBnd:/ { print $2 }' /proc/self/status)))
MISSING="" i=0
for c in $(setpriv --list-caps); do
	(( (BND >> i) & 1 )) || MISSING+="${MISSING:+ }CAP_$(echo "$c" | tr 'a-z' 'A-Z')"
	i=$((i + 1))
done
SAME=1
if [ "$REC_PARANOID" != "$PARANOID" ] || [ "$REC_MISSING" != "$MISSING" ]; then
	SAME=0
	echo "# this machine (paranoid $PARANOID, root lacks '$MISSING') differs from the recorded one" \
		"(paranoid $REC_PARANOID, root lacks '$REC_MISSING'): only refusals are compared"
fi

SETS="all none -CAP_SYS_PTRACE -CAP_DAC_OVERRIDE -CAP_CHOWN -CAP_PERFMON minimal"
CLRTAP=$CLRTAP FIXTURE_DLL=$FIXTURE_DLL "$ROOT/scripts/captable.sh" --commands "stacks profile dump watch" \
	--sets "$SETS" -o "$WORK/now.tsv" 2>"$WORK/captable.err"
equals "captable.sh exits 0" "$?" "0"
check "it made 28 runs" test "$(wc -l <"$WORK/now.tsv")" -eq 28
while IFS=$'\t' read -r cmd set rc verdict; do
	rec=$(awk -F'\t' -v c="$cmd" -v s="$set" '$1 == c && $2 == s { print $3 "\t" $4; exit }' "$DOC")
	if [ $SAME = 1 ] || [[ $verdict == refused:* ]]; then
		equals "$cmd under $set: as recorded" "$rc"$'\t'"$verdict" "$rec"
	fi
done <"$WORK/now.tsv"
# The facts the deploy manifests rest on.
check "watch with exactly its minimal set: ok" grep -qP '^watch\tminimal:CAP_DAC_OVERRIDE\+CAP_SYS_PTRACE\t0\tok$' "$WORK/now.tsv"
check "without CAP_SYS_PTRACE the refusal names it" grep -qP '^stacks\t-CAP_SYS_PTRACE\t5\trefused: lacks CAP_SYS_PTRACE$' "$WORK/now.tsv"
check "without CAP_DAC_OVERRIDE (CAP_DAC_READ_SEARCH still there) the refusal names it" \
	grep -qP '^stacks\t-CAP_DAC_OVERRIDE\t5\trefused: lacks CAP_DAC_OVERRIDE$' "$WORK/now.tsv"
check "dump needs CAP_CHOWN" grep -qP '^dump\t-CAP_CHOWN\t7\t' "$WORK/now.tsv"
# The manifests ask for exactly the measured set of what they run: watch and
# the commands of its actions (capabilities.md's minimal sets).
check "each manifest's capabilities.add is the measured set of watch and its actions" python3 - "$DOC" \
	"$ROOT/deploy/k8s-sidecar.yaml" "$ROOT/deploy/k8s-daemonset.yaml" <<'PY'
import sys, yaml
doc = open(sys.argv[1]).read()
minimal = {}
for l in doc.splitlines():
    f = l.split('\t')
    if len(f) == 4 and f[1].startswith('minimal:'):
        minimal[f[0]] = set(c[4:] for c in f[1][8:].split('+') if c != 'none')
acts = {'profile': 'profile', 'stacks': 'stacks', 'trace': 'trace', 'dump': 'dump',
        'gcdump': 'gcdump', 'analyze': 'analyze'}
bad = 0
for path in sys.argv[2:]:
    for d in yaml.safe_load_all(open(path)):
        spec = d['spec'].get('template', {}).get('spec', d['spec'])
        for c in spec['containers']:
            args = c.get('args') or []
            if 'watch' not in args:
                continue
            need = set(minimal['watch'])
            for i, a in enumerate(args):
                if a in ('--action', '-a'):
                    need |= minimal[acts[args[i + 1].split(':')[0]]]
            have = set(c['securityContext']['capabilities']['add'])
            drop = c['securityContext']['capabilities']['drop']
            priv = c['securityContext'].get('privileged', False)
            print(path, sorted(have), 'measured', sorted(need), 'drop', drop, 'privileged', priv)
            bad += have != need or drop != ['ALL'] or priv
sys.exit(1 if bad else 0)
PY
check "no fixture of the script is left" bash -c "! pgrep -u 65534 -f 'sample.dll (cpu-split|probe-warm)'"

finish
