/* SPDX-License-Identifier: MIT */
/*
 * load.c - a nettrace file into a summary, the one way `clrtap trace report`
 * and clrtap serve's trace sessions read it.
 */
#include "common/compat.h"

#include <fcntl.h>

#include "common/exitcode.h"
#include "tracestats/tracestats.h"

int tracestats_load_fd(int fd, bool thread_time, struct tracestats **out, int *read_err,
		       const char **stage)
{
	struct ts_limits lim;

	ts_limits_default(&lim);
	lim.thread_time = thread_time;
	return tracestats_load_fd_lim(fd, &lim, out, read_err, stage);
}

int tracestats_load_fd_lim(int fd, const struct ts_limits *lim, struct tracestats **out,
			   int *read_err, const char **stage)
{
	struct nt_reader *r = NULL;
	struct tracestats *ts = NULL;
	int err;

	*out = NULL;
	*read_err = 0;
	*stage = "read";
	err = tracestats_new(&ts, lim);
	if (!err)
		err = nt_reader_new(&r, nt_read_fd, &fd, NULL);
	if (err) {
		tracestats_free(ts);
		return err;
	}
	*read_err = tracestats_run(ts, r);
	nt_reader_free(r);
	err = tracestats_finish(ts);
	if (err) {
		*stage = "summarize";
		tracestats_free(ts);
		return err;
	}
	*out = ts;
	return 0;
}

int tracestats_load_path(const char *path, bool thread_time, bool lines, struct tracestats **out, int *read_err,
			 const char **stage)
{
	struct ts_limits lim;
	int fd, err;

	*out = NULL;
	*read_err = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*stage = "open";
		return -errno;
	}
	ts_limits_default(&lim);
	lim.thread_time = thread_time;
	lim.lines = lines;
	err = tracestats_load_fd_lim(fd, &lim, out, read_err, stage);
	close(fd);
	return err;
}

bool tracestats_not_nettrace(const struct tracestats *ts, int read_err)
{
	const struct ts_result *res = tracestats_result(ts);

	return read_err == -EBADMSG && !res->events && res->error.offset == 0;
}

int tracestats_damage_text(const struct tracestats *ts, int read_err, const char *path, char *buf, size_t len)
{
	const struct ts_result *res = tracestats_result(ts);
	int e = read_err;
	bool bad = e == -EBADMSG || e == -EFBIG || e == -ENOTSUP;

	if (tracestats_not_nettrace(ts, read_err)) {
		snprintf(buf, len, "%s is not a nettrace file (%s at byte offset 0)", path, res->error.msg);
		return EXIT_BAD_INPUT;
	}
	snprintf(buf, len, "%s is %s at byte offset %" PRIu64 ": %s; only the %" PRIu64 " events before it were read",
		 path, e == -EFBIG ? "over a reader limit" : e == -ENOTSUP ? "in an unsupported format"
							   : "damaged or truncated",
		 res->error.offset, res->error.msg, res->events);
	return bad ? EXIT_BAD_INPUT : EXIT_ERROR;
}
