/* SPDX-License-Identifier: MIT */
/*
 * ntcount FILE - reads a .nettrace file with lib/nettrace and prints what
 * tests assert on: "events N", "end ok|error ..." and one line per
 * ExceptionThrown ("exception TYPE: MESSAGE"). Exit 0 when the whole stream
 * read cleanly, 8 when it is damaged.
 */
#include "common/compat.h"

#include <fcntl.h>

#include "nettrace/nettrace.h"

struct counts {
	uint64_t events;
	unsigned ptr_size;
};

static int on_event(void *ctx, const struct nt_event *ev)
{
	struct counts *c = ctx;
	struct nt_exception ex;

	c->events++;
	if (!ev->meta || strcmp(ev->meta->provider, "Microsoft-Windows-DotNETRuntime") ||
	    ev->meta->event_id != 80)
		return 0;
	if (!nt_decode_exception(ev->payload, ev->payload_len, ev->meta->version, ev->pointer_size,
				 &ex)) {
		struct strbuf t = STRBUF_INIT, m = STRBUF_INIT;

		if (!nt_str16_utf8(&ex.type, &t) && !nt_str16_utf8(&ex.message, &m))
			printf("exception %s: %s\n", t.buf, m.buf);
		strbuf_release(&t);
		strbuf_release(&m);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const struct nt_handlers h = { .event = on_event };
	struct counts c = { 0 };
	struct nt_reader *r = NULL;
	const char *msg = "";
	uint64_t off = 0;
	int fd, err;

	if (argc != 2) {
		fprintf(stderr, "usage: ntcount FILE\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0 || nt_reader_new(&r, nt_read_fd, &fd, NULL)) {
		perror(argv[1]);
		return 1;
	}
	err = nt_reader_run(r, &h, &c);
	printf("events %" PRIu64 "\n", c.events);
	if (err) {
		nt_reader_error(r, &off, &msg);
		printf("end error %d at %" PRIu64 ": %s\n", err, off, msg);
	} else {
		printf("end ok\n");
	}
	nt_reader_free(r);
	close(fd);
	return err ? 8 : 0;
}
