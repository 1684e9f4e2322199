/* SPDX-License-Identifier: MIT */
/*
 * offline.c - a snapshot from a saved heap session (.nettrace): what
 * `gcdump collect --nettrace` keeps, or any trace with the GCHeapSnapshot
 * keywords (e.g. dotnet-trace with Microsoft-Windows-DotNETRuntime:0x1980001:5).
 * Same builder and checks as a live snapshot; no string contents.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <time.h>

#include "heap/heap.h"

struct octx {
	struct heap_builder *b;
	struct nt_reader *r;
};

static int on_event(void *ctx, const struct nt_event *ev)
{
	struct octx *c = ctx;
	int r = heap_builder_event(c->b, ev, nt_reader_info(c->r)->qpc_freq);

	return r < 0 ? r : 0;
}

int heap_nettrace_read(const char *path, const struct heap_limits *lim, struct heap_graph **out,
		       char *msg, size_t msglen)
{
	const struct nt_handlers h = { .event = on_event };
	struct octx c = { NULL, NULL };
	struct nt_stats st;
	int fd, err;

	*out = NULL;
	msg[0] = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = heap_builder_new(&c.b, lim);
	if (!err)
		err = nt_reader_new(&c.r, nt_read_fd, &fd, NULL);
	if (!err) {
		err = nt_reader_run(c.r, &h, &c);
		if (err < 0) {
			uint64_t off = 0;
			const char *m = NULL;

			nt_reader_error(c.r, &off, &m);
			snprintf(msg, msglen, "the trace is damaged at byte %" PRIu64 ": %s", off,
				 m && *m ? m : strerror(-err));
		}
	}
	if (!err) {
		nt_reader_stats(c.r, &st);
		if (!heap_builder_done(c.b)) {
			snprintf(msg, msglen, "the trace holds no complete heap-walk GC (keywords 0x1980001)%s",
				 st.order_forced ? "; the reader's time-order window was full, so events of different GC threads may be out of order" : "");
			err = -ENODATA;
		} else if (st.dropped || heap_builder_lost(c.b)) {
			snprintf(msg, msglen,
				 "the runtime dropped events during the heap walk (%" PRIu64 " events, %" PRIu64
				 " blocks): the graph would be wrong", st.dropped, heap_builder_lost(c.b));
			err = -EPROTO;
		} else {
			err = heap_builder_finish(c.b, out);
			if (err == -ENODATA)
				snprintf(msg, msglen, "the heap-walk GC reported no objects");
			else if (err == -EPROTO)
				snprintf(msg, msglen, "the node and reference streams do not match: no graph");
			if (!err) {
				const struct nt_trace_info *ti = nt_reader_info(c.r);
				struct tm tm = { 0 };

				(*out)->meta.pid = ti->pid;
				/* when the trace started (SYSTEMTIME, UTC) */
				tm.tm_year = ti->sync_utc[0] - 1900;
				tm.tm_mon = ti->sync_utc[1] - 1;
				tm.tm_mday = ti->sync_utc[3];
				tm.tm_hour = ti->sync_utc[4];
				tm.tm_min = ti->sync_utc[5];
				tm.tm_sec = ti->sync_utc[6];
				(*out)->meta.time = ti->sync_utc[0] >= 1970 ? (int64_t)timegm(&tm) : 0;
			}
		}
	}
	nt_reader_free(c.r);
	heap_builder_free(c.b);
	close(fd);
	return err;
}
