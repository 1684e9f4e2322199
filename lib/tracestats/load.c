/* SPDX-License-Identifier: MIT */
/*
 * load.c - a nettrace file into a summary, the one way `clrtap trace report`
 * and clrtap serve's trace sessions read it.
 */
#include "common/compat.h"

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
