/* SPDX-License-Identifier: MIT */
/*
 * io.h - small file-descriptor helpers shared by every writer.
 */
#ifndef CLRTAP_COMMON_IO_H
#define CLRTAP_COMMON_IO_H

#include "common/compat.h"

/* Writes all len bytes (retrying short writes and EINTR). 0 or a negative errno. */
int ct_write_all(int fd, const void *buf, size_t len);
/* A byte sink (ipc_session_opts.sink) writing to the descriptor ctx points to (an int, or a struct starting with one). */
int ct_fd_sink(void *ctx, const void *buf, size_t n);
/* Reads up to len bytes, retrying short reads and EINTR: the count (< len at end of file) or a negative errno. */
ssize_t ct_read_full(int fd, void *buf, size_t len);

#endif
