#!/usr/bin/env bash
# House rules that a compiler does not check (docs/ARCHITECTURE.md):
# libraries never include src/ headers, never print or exit; no typedef struct;
# each command file exports only cmd_<name> (a subcommand's file
# <name>_<sub>.c: cmd_<name>_<sub>); the command table is sorted and
# every command has a doc page and an integration test; no src/cmd file
# passes 400 lines.
set -u
cd "$(dirname "$0")/.."
bad=0
say() { echo "lint: $*"; bad=1; }

grep -rn --include='*.[ch]' -E '#include "(cli|\.\./)' lib && say "a library includes a src/ header"
grep -rn --include='*.[ch]' 'typedef struct' lib src profiler 2>/dev/null && say "typedef struct is not used here"
for f in $(ls lib/*/*.c | grep -v -E '_(test|fuzz)\.c$'); do
	if grep -n -E '\b(printf|fprintf|puts|perror|exit|abort)\s*\(' "$f" | grep -v -E '^\s*[0-9]+:\s*(/\*|\*)' | grep -v snprintf | grep -v vsnprintf >/dev/null; then
		say "$f prints or exits (libraries report through return values and ct_log)"
	fi
done
O=${O:-build}
for f in src/cmd/*.c; do
	name=$(basename "$f" .c)
	# thin commands (docs/ARCHITECTURE.md): a workflow that needs more is library code
	lines=$(wc -l < "$f")
	[ "$lines" -le 400 ] || say "$f has $lines lines: a command file stays within 400 lines (parsing and rendering; move the workflow into lib/)"
	obj=$O/src/cmd/$name.o
	if [ -f "$obj" ]; then
		syms=$(nm --defined-only --extern-only "$obj" | awk '{print $3}')
		[ "$syms" = "cmd_$name" ] || say "$obj exports '$syms', want only cmd_$name"
	fi
	# a subcommand in a file of its own: src/cmd/<command>_<sub>.c, documented
	# in docs/cmd/<command>.md, run as "clrtap <command> <sub>"
	doc=${name%%_*} run=${name/_/ }
	[ -f "docs/cmd/$doc.md" ] || say "no docs/cmd/$doc.md"
	ls tests/integration/t-*.sh | xargs grep -l -E "CLRTAP\"? $run|clrtap $run|\\\$CLRTAP\" $run" >/dev/null || say "no integration test runs '$run'"
done
# A target's files are opened only through lib/proc (proc_tfile_open and
# friends, docs/SECURITY.md): no file call on a path made from the target's
# root ("/proc/PID/root" + a path the container controls, as proc_host_path
# and the perf map state build them). A line that opens such a name for a
# reason it states carries "lint-ok: target path" on it or the line before.
calls='(^|[^a-z_])(open|openat|fopen|opendir|stat|lstat|unlink|unlinkat|rename|access|truncate|creat|strbuf_read_file|pe_file_open|sym_elf_load)[ \t]*\('
names='(map_path|jitdump_path|->socket[^_a-z]|\.socket[^_a-z]|->root[^_a-z]|\.root[^_a-z]|perfmap_path|host_image|hpath|->host[^_a-z]|proc_host_path)'
for f in $(ls lib/*/*.c src/*.c src/cmd/*.c | grep -v -E '_(test|fuzz)\.c$|^lib/proc/tfile\.c$'); do
	awk -v f="$f" -v calls="$calls" -v names="$names" '
		$0 ~ calls && $0 ~ (calls "[^;]*" names) && $0 !~ /lint-ok: target path/ && prev !~ /lint-ok: target path/ {
			print "lint: " f ":" FNR ": a target path opened outside lib/proc: " $0; bad = 1
		}
		{ prev = $0 }
		END { exit bad }' "$f" || bad=1
done
# Nor a name made by formatting a path onto "/proc/PID/root" (the kernel
# would resolve the container's links from the host's root).
grep -rn --include='*.c' -E '/root(/)?%' lib src | grep -v -E '_(test|fuzz)\.c:|^lib/proc/tfile\.c:' |
	grep -v 'lint-ok: target path' && say "a target path is formatted onto /proc/PID/root: use proc_tfile_open and friends (lib/proc)"
# cli_error, cli_warn and cli_info escape the whole message (cli_safe): an
# argument escaped again would show a target's "\n" as "\\n".
perl -0777 -ne 'while (/\bcli_(?:error|warn|info)\s*(\((?:[^()"]++|"(?:[^"\\]++|\\.)*+"|(?1))*+\))/g) {
	if ($1 =~ /\bcli_safe\s*\(/) { printf "lint: %s:%d: cli_safe() inside a cli_error/cli_warn/cli_info message (escaped twice)\n",
		$ARGV, 1 + (substr($_, 0, pos) =~ tr/\n//) - ($1 =~ tr/\n//); $bad = 1 } } END { exit($bad ? 1 : 0) }' src/*.c src/cmd/*.c || bad=1
table=$(sed -n '/^static const struct cmd commands\[\] = {/,/^};/p' src/main.c | grep -o '{ "[a-z-]*"' | tr -d '{" ')
[ "$table" = "$(printf '%s\n' $table | sort)" ] || say "the command table in src/main.c is not sorted"
# The task table (lib/task/table.c) too: sorted by name, each name once.
tasks=$(sed -n '/^static const struct task_row rows\[\] = {/,/^};/p' lib/task/table.c | grep -o '{ "[a-z0-9_.-]*"' | tr -d '{" ')
[ "$tasks" = "$(printf '%s\n' $tasks | sort -u)" ] || say "the task table in lib/task/table.c is not sorted (or names a task twice)"
[ $bad -eq 0 ] && echo "lint: ok"
exit $bad
