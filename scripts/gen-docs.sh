#!/usr/bin/env bash
# gen-docs.sh CLRTAP OUTDIR - man pages and shell completions from the binary's
# own tables (the ones --help prints): `clrtap --help-table` lists the
# commands, `clrtap CMD [SUB] --help-table` a command's options. Exit codes
# come from docs/cmd/exit-codes.md (the table the tests assert).
#
#   OUTDIR/man/man1/clrtap.1, OUTDIR/man/man1/clrtap-CMD.1
#   OUTDIR/completion/clrtap.bash, OUTDIR/completion/_clrtap (zsh),
#   OUTDIR/completion/clrtap.fish
set -euo pipefail
CLRTAP=${1:?usage: gen-docs.sh CLRTAP OUTDIR}
OUT=${2:?usage: gen-docs.sh CLRTAP OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT/man/man1" "$OUT/completion"

ver=$("$CLRTAP" --version | head -1 | awk '{print $2}')
runtimes=$("$CLRTAP" --version | sed -n 's/^supported runtimes: //p')
date=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)}" +%Y-%m-%d)

# roff-safe text: backslashes, leading dots and quotes, hyphens
esc() { sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }

cmds=$("$CLRTAP" --help-table)

# options of one table (stdin: --help-table output) as roff .TP items
opts_roff() {
	awk -F'\t' 'function e(s) { gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s); sub(/^[.\x27]/, "\\\\\\&&", s); return s }
	$1 == "opt" && $7 != "deprecated" {
		l = ($2 != "-" ? "-" $2 ", " : "") "--" $3 ($5 != "-" ? " " $5 : "")
		print ".TP"; print "\\fB" e(l) "\\fR"; print e($6)
	}'
}

# ---------------------------------------------------------------- man pages
{
	echo ".TH CLRTAP 1 \"$date\" \"clrtap $ver\" \"clrtap manual\""
	echo ".SH NAME"
	echo "clrtap \\- diagnostics for running .NET processes on Linux, no restart"
	echo ".SH SYNOPSIS"
	echo ".B clrtap"
	echo ".I command"
	echo "[options]"
	echo ".SH DESCRIPTION"
	echo "clrtap attaches to a running .NET (CoreCLR) process, on the host or in a container, with no restart and no"
	echo ".NET SDK on the machine. Supported runtimes: $runtimes." | esc
	echo ".SH COMMANDS"
	while IFS=$'\t' read -r _ name _ _ help; do
		echo ".TP"
		echo ".BR clrtap\\-$name (1)"
		echo "$help" | esc
	done <<<"$cmds"
	echo ".SH DURATIONS"
	echo "Every option that takes a duration (\\fB\\-d\\fR/\\fB\\-\\-duration\\fR, \\fB\\-\\-timeout\\fR, ...) takes a number"
	echo "with an optional unit: s (the default), ms, m or h; a fraction is fine down to a millisecond:"
	echo "5, 5s, 1.5, 500ms, 2m. For \\fB\\-d\\fR, 0 means until Ctrl\\-C. \\fB\\-\\-timeout\\fR is more than 0 and at most 1h."
	echo ".SH OUTPUT FILES"
	echo "An output path (\\fB\\-o\\fR) is checked before any work: a missing folder, a directory or a folder"
	echo "clrtap may not write is an error (exit 1) before clrtap attaches. An existing file is replaced when the new"
	echo "one is complete, and clrtap says so on standard error."
	echo ".SH EXIT STATUS"
	# the rows of docs/cmd/exit-codes.md: | code | name | meaning | examples |
	awk -F'|' '/^## Cases/ { exit } /^\| *[0-9]+ *\|/ {
		gsub(/^ +| +$/, "", $2); gsub(/^ +| +$/, "", $3); gsub(/^ +| +$/, "", $4)
		print ".TP"; print "\\fB" $2 "\\fR (" $3 ")"; print $4 }' "$ROOT/docs/cmd/exit-codes.md" |
		sed -e 's/`//g' -e '/^\./!{/^\\fB/!s/\\/\\e/g}' -e '/^\./!{/^\\fB/!s/-/\\-/g}'
	echo ".PP"
	echo "Errors go to standard error as one line starting with clrtap:; standard output carries only the result."
	echo ".SH SEE ALSO"
	echo "$cmds" | awk -F'\t' '{ printf "%s.BR clrtap\\-%s (1)", (NR > 1 ? ",\n" : ""), $2 } END { print "" }'
} >"$OUT/man/man1/clrtap.1"

while IFS=$'\t' read -r _ name subs words help; do
	page="$OUT/man/man1/clrtap-$name.1"
	{
		echo ".TH CLRTAP\\-${name^^} 1 \"$date\" \"clrtap $ver\" \"clrtap manual\""
		echo ".SH NAME"
		echo "clrtap\\-$name \\- $(echo "$help" | esc)"
		if [ "$subs" = - ]; then
			tab=$("$CLRTAP" "$name" --help-table)
			echo ".SH SYNOPSIS"
			echo "$tab" | awk -F'\t' '$1 == "usage" { print $2 }' | esc
			[ "$words" = - ] || echo ".PP"$'\n'"First argument: $words." | esc
			echo ".SH OPTIONS"
			echo "$tab" | opts_roff
			echo ".TP"$'\n'"\\fB\\-h, \\-\\-help\\fR"$'\n'"show the options"
		else
			for sub in $subs; do
				tab=$("$CLRTAP" "$name" "$sub" --help-table)
				echo ".SH ${sub^^}"
				echo "$tab" | awk -F'\t' '$1 == "usage" { print $2 }' | esc
				echo "$tab" | opts_roff
			done
		fi
		echo ".SH SEE ALSO"
		echo ".BR clrtap (1)"
		echo ".PP"
		echo "The full description: docs/cmd/$name.md in clrtap's source." | esc
	} >"$page"
done <<<"$cmds"

# -------------------------------------------------------------- completions
# One data block: "CMD[ SUB]<TAB>words<TAB>options taking no value<TAB>options taking one"
data=$(while IFS=$'\t' read -r _ name subs words _; do
	if [ "$subs" = - ]; then
		keys=("$name"); first=("${words/-/}")
	else
		keys=("$name"); first=("$subs")
		for sub in $subs; do keys+=("$name $sub"); first+=(""); done
	fi
	for i in "${!keys[@]}"; do
		k=${keys[$i]}
		if [ "$k" = "$name" ] && [ "$subs" != - ]; then
			printf '%s\t%s\t%s\t%s\n' "$k" "${first[$i]}" "--help" ""
			continue
		fi
		"$CLRTAP" $k --help-table | awk -F'\t' -v k="$k" -v w="${first[$i]}" '
			$1 == "opt" && $7 != "deprecated" {
				n = ($2 != "-" ? "-" $2 " " : "") "--" $3
				if ($4 == "bool") flags = flags " " n; else vals = vals " " n
			}
			END { printf "%s\t%s\t%s\t%s\n", k, w, substr(flags " --help", 2), substr(vals, 2) }'
	done
done <<<"$cmds")
names=$(echo "$cmds" | cut -f2 | tr '\n' ' ')

{
	echo "# bash completion for clrtap $ver (generated by scripts/gen-docs.sh from clrtap --help-table)"
	echo "_clrtap() {"
	echo "	local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]} key words flags vals"
	echo "	if [ \"\$COMP_CWORD\" -eq 1 ]; then COMPREPLY=(\$(compgen -W \"$names --help --version\" -- \"\$cur\")); return; fi"
	echo "	key=\${COMP_WORDS[1]}"
	echo "	[ \"\$COMP_CWORD\" -gt 2 ] && case \"\$key \${COMP_WORDS[2]}\" in"
	echo "$data" | awk -F'\t' 'index($1, " ") { printf "\t\"%s\") key=\"%s\" ;;\n", $1, $1 }'
	echo "	esac"
	echo "	case \"\$key\" in"
	echo "$data" | awk -F'\t' '{ printf "\t\"%s\") words=\"%s\" flags=\"%s\" vals=\"%s\" ;;\n", $1, $2, $3, $4 }'
	echo "	*) return ;;"
	echo "	esac"
	echo "	case \" \$vals \" in *\" \$prev \"*)"
	echo "		case \"\$prev\" in -p|--pid) COMPREPLY=(\$(compgen -W \"\$(clrtap ps --json 2>/dev/null | grep -o '\"pid\":[0-9]*' | cut -d: -f2)\" -- \"\$cur\")) ;;"
	echo "		-o|--output|--html|--flame|--rules|--log|--library) COMPREPLY=(\$(compgen -f -- \"\$cur\")) ;;"
	echo "		esac; return ;;"
	echo "	esac"
	echo "	if [[ \$cur == -* ]]; then COMPREPLY=(\$(compgen -W \"\$flags \$vals\" -- \"\$cur\")); else COMPREPLY=(\$(compgen -W \"\$words\" -f -- \"\$cur\")); fi"
	echo "}"
	echo "complete -F _clrtap clrtap"
} >"$OUT/completion/clrtap.bash"

{
	echo "#compdef clrtap"
	echo "# zsh completion for clrtap $ver: the bash completion through bashcompinit"
	echo "# (not tried here: no zsh on the build machine)"
	echo "autoload -U +X bashcompinit && bashcompinit"
	sed -e '1d' -e 's/_clrtap/_clrtap_bash/g' "$OUT/completion/clrtap.bash"
	echo '_bash_complete -F _clrtap_bash "$@"'
} >"$OUT/completion/_clrtap"

{
	echo "# fish completion for clrtap $ver (generated by scripts/gen-docs.sh from clrtap --help-table)"
	echo "complete -c clrtap -f"
	echo "$cmds" | awk -F'\t' '{ gsub(/\x27/, "", $5); printf "complete -c clrtap -n __fish_use_subcommand -a %s -d \x27%s\x27\n", $2, $5 }'
	echo "$data" | awk -F'\t' '{
		split($1, k, " "); cond = "__fish_seen_subcommand_from " k[1]
		if (k[2] != "") cond = cond "; and __fish_seen_subcommand_from " k[2]
		if ($2 != "") printf "complete -c clrtap -n \x27%s\x27 -a \x27%s\x27\n", cond, $2
		n = split($3 " " $4, o, " ")
		for (i = 1; i <= n; i++) if (o[i] ~ /^--/) {
			arg = index(" " $4 " ", " " o[i] " ") ? " -r" : ""
			printf "complete -c clrtap -n \x27%s\x27 -l %s%s\n", cond, substr(o[i], 3), arg
		}
	}'
} >"$OUT/completion/clrtap.fish"
