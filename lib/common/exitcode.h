/* SPDX-License-Identifier: MIT */
/*
 * exitcode.h - clrtap's exit codes (docs/cmd/exit-codes.md), the one table
 * for the CLI and for clrtap serve's JSON errors: the code a negative errno
 * maps to, and each code's short name.
 */
#ifndef CLRTAP_COMMON_EXITCODE_H
#define CLRTAP_COMMON_EXITCODE_H

enum exit_code {
	EXIT_OK = 0,
	EXIT_ERROR = 1,         /* anything not listed below */
	EXIT_USAGE = 2,         /* bad command line */
	EXIT_NO_PROCESS = 3,    /* no such process (dead pid, name not found) */
	EXIT_NOT_DOTNET = 4,    /* the process has no diagnostics endpoint */
	EXIT_PERMISSION = 5,    /* not allowed (other user, missing capability) */
	EXIT_PROTOCOL = 6,      /* malformed reply, timeout, connection lost */
	EXIT_RUNTIME = 7,       /* the runtime refused the command / unsupported */
	EXIT_BAD_INPUT = 8,     /* corrupt or truncated input file */
	EXIT_PARTIAL = 9,       /* interrupted: partial result written */
	EXIT_NOT_TARGET = 10,   /* the target's socket or file is not its own: refused */
	EXIT_OVER_BUDGET = 11,  /* a probe stopped: it would cost the target more than its budget */
	EXIT_AGENT_LIBRARY = 20, /* profiler library missing here or in the target's filesystem */
	EXIT_AGENT_LIBC = 21,   /* the target could not load it: wrong C library */
	EXIT_AGENT_SLOT = 22,   /* profiler slot taken / a clrtap profiler already active */
	EXIT_INTERRUPTED = 130, /* Ctrl-C before any result */
};

/* The exit code for a negative errno (0 for 0, EXIT_ERROR when unlisted). */
int ct_exit_for(int err);

/* The code's short name ("no-process"), "error" for an unknown one. */
const char *ct_exit_name(int code);

#endif
