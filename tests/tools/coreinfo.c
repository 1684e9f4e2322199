/* SPDX-License-Identifier: MIT */
/*
 * coreinfo - prints what lib/core reads from a core file, for tests and for
 * a look at a dump by hand:
 *   coreinfo FILE            the summary, threads, segments and mapped files
 *   coreinfo FILE ADDR LEN   also LEN bytes of target memory at ADDR, in hex
 * A refused file: "coreinfo: WHY" on stderr and the exit code clrtap gives
 * for the error (8 for a corrupt or truncated file, docs/cmd/exit-codes.md).
 * A truncated file is read, with a "truncated: ..." line.
 */
#include "common/compat.h"

#include "common/exitcode.h"
#include "common/strparse.h"
#include "core/core.h"

/* The dump's bytes as text: anything outside printable ASCII as \xNN. */
static void put_safe(const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch >= 0x20 && ch < 0x7f && ch != '\\')
			putchar(ch);
		else
			printf("\\x%02x", ch);
	}
}

int main(int argc, char **argv)
{
	const struct core_mapping *m;
	const struct core_thread *t;
	const struct core_info *in;
	const struct core_load *l;
	struct core_file *c;
	char why[512];
	size_t i;
	int err;

	if (argc != 2 && argc != 4) {
		fprintf(stderr, "usage: coreinfo FILE [ADDR LEN]\n");
		return EXIT_USAGE;
	}
	err = core_open(argv[1], &c, why, sizeof(why));
	if (err) {
		fprintf(stderr, "coreinfo: %s\n", why);
		return ct_exit_for(err);
	}
	in = core_info(c);
	printf("pid %d comm ", in->pid);
	put_safe(in->comm);
	printf(" machine %u signo %d si_code %d fault_addr 0x%" PRIx64 "\n", in->machine, in->signo, in->si_code,
	       in->fault_addr);
	printf("threads %zu mappings %zu loads %zu\n", in->nthreads, in->nmappings, in->nloads);
	if (core_check_complete(c, why, sizeof(why)))
		printf("%s\n", why);
	for (i = 0; (t = core_thread(c, i)) != NULL; i++)
		printf("thread %d signo %d ip 0x%" PRIx64 " sp 0x%" PRIx64 " fp 0x%" PRIx64 "\n", t->tid, t->signo,
		       t->regs.ip, t->regs.sp, t->regs.fp);
	for (i = 0; (l = core_load(c, i)) != NULL; i++)
		printf("load 0x%" PRIx64 "-0x%" PRIx64 " filesz %" PRIu64 " avail %" PRIu64 " flags %u\n", l->start,
		       l->end, l->filesz, l->avail, l->flags);
	for (i = 0; (m = core_mapping(c, i)) != NULL; i++) {
		printf("file 0x%" PRIx64 "-0x%" PRIx64 " +%" PRIu64 " ", m->start, m->end, m->file_offset);
		put_safe(m->path);
		putchar('\n');
	}
	printf("auxv AT_PAGESZ %" PRIu64 " AT_ENTRY 0x%" PRIx64 "\n", core_auxv(c, 6), core_auxv(c, 9));
	if (argc == 4) {
		uint64_t addr, len;
		uint8_t buf[4096];
		ssize_t n;

		if (ct_parse_u64(argv[2], 0, &addr) || ct_parse_u64(argv[3], 0, &len) || len > sizeof(buf)) {
			fprintf(stderr, "coreinfo: bad ADDR or LEN (at most %zu)\n", sizeof(buf));
			core_close(c);
			return EXIT_USAGE;
		}
		n = core_read(c, addr, buf, len);
		if (n < 0) {
			printf("read 0x%" PRIx64 ": %s\n", addr, strerror((int)-n));
		} else {
			printf("read 0x%" PRIx64 " %zd bytes: ", addr, n);
			for (ssize_t k = 0; k < n; k++)
				printf("%02x", buf[k]);
			putchar('\n');
		}
	}
	core_close(c);
	return 0;
}
