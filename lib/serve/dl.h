/* SPDX-License-Identifier: MIT */
/*
 * dl.h - libmicrohttpd and libsqlite3, loaded when serve needs them.
 *
 * Every clrtap command is one binary; linking these two (and gnutls, which
 * libmicrohttpd brings) made every command's start cost twice the CPU
 * (3.3 ms -> 6.5 ms of task-clock for `clrtap --version`), paid at the
 * starved priority a profile of a saturated machine starts with (issue 16).
 * So lib/serve calls them through this table, filled by srv_dl_load() with
 * dlopen of the sonames the headers were built for. Include this after
 * <microhttpd.h> and <sqlite3.h>: the names below then call through it.
 */
#ifndef CLRTAP_SERVE_DL_H
#define CLRTAP_SERVE_DL_H

#include <microhttpd.h>
#include <sqlite3.h>

#define SRV_DL_FUNCS(X)                                                                     \
	X(MHD_add_response_header) X(MHD_lookup_connection_value) X(MHD_queue_response)      \
	X(MHD_destroy_response) X(MHD_start_daemon) X(MHD_stop_daemon)                       \
	X(MHD_get_daemon_info) X(MHD_get_connection_info) X(MHD_create_response_from_callback)                          \
	X(MHD_create_response_from_buffer) X(MHD_create_response_from_fd64) X(sqlite3_step) X(sqlite3_prepare_v2)             \
	X(sqlite3_finalize) X(sqlite3_bind_text) X(sqlite3_column_type)                      \
	X(sqlite3_column_int64) X(sqlite3_close) X(sqlite3_bind_int64) X(sqlite3_column_int) \
	X(sqlite3_open_v2) X(sqlite3_free) X(sqlite3_exec) X(sqlite3_column_text)            \
	X(sqlite3_column_double) X(sqlite3_busy_timeout) X(sqlite3_bind_null)                \
	X(sqlite3_bind_double)

#define SRV_DL_MEMBER(f) __typeof__(f) *f;
struct srv_dl {
	SRV_DL_FUNCS(SRV_DL_MEMBER)
};
#undef SRV_DL_MEMBER

extern struct srv_dl srv_dl;

/* Loads both libraries once (thread-safe). 0, or -ENOENT with a reason in
 * why (the library or a symbol was not found). */
int srv_dl_load(char *why, size_t len);

#ifndef SRV_DL_IMPL
#define MHD_add_response_header (*srv_dl.MHD_add_response_header)
#define MHD_lookup_connection_value (*srv_dl.MHD_lookup_connection_value)
#define MHD_queue_response (*srv_dl.MHD_queue_response)
#define MHD_destroy_response (*srv_dl.MHD_destroy_response)
#define MHD_start_daemon (*srv_dl.MHD_start_daemon)
#define MHD_stop_daemon (*srv_dl.MHD_stop_daemon)
#define MHD_get_daemon_info (*srv_dl.MHD_get_daemon_info)
#define MHD_get_connection_info (*srv_dl.MHD_get_connection_info)
#define MHD_create_response_from_callback (*srv_dl.MHD_create_response_from_callback)
#define MHD_create_response_from_buffer (*srv_dl.MHD_create_response_from_buffer)
#define MHD_create_response_from_fd64 (*srv_dl.MHD_create_response_from_fd64)
#define sqlite3_step (*srv_dl.sqlite3_step)
#define sqlite3_prepare_v2 (*srv_dl.sqlite3_prepare_v2)
#define sqlite3_finalize (*srv_dl.sqlite3_finalize)
#define sqlite3_bind_text (*srv_dl.sqlite3_bind_text)
#define sqlite3_column_type (*srv_dl.sqlite3_column_type)
#define sqlite3_column_int64 (*srv_dl.sqlite3_column_int64)
#define sqlite3_close (*srv_dl.sqlite3_close)
#define sqlite3_bind_int64 (*srv_dl.sqlite3_bind_int64)
#define sqlite3_column_int (*srv_dl.sqlite3_column_int)
#define sqlite3_open_v2 (*srv_dl.sqlite3_open_v2)
#define sqlite3_free (*srv_dl.sqlite3_free)
#define sqlite3_exec (*srv_dl.sqlite3_exec)
#define sqlite3_column_text (*srv_dl.sqlite3_column_text)
#define sqlite3_column_double (*srv_dl.sqlite3_column_double)
#define sqlite3_busy_timeout (*srv_dl.sqlite3_busy_timeout)
#define sqlite3_bind_null (*srv_dl.sqlite3_bind_null)
#define sqlite3_bind_double (*srv_dl.sqlite3_bind_double)
#endif

#endif
