/* SPDX-License-Identifier: MIT */
/*
 * exitcode.c - see exitcode.h.
 */
#include "common/compat.h"

#include "common/exitcode.h"

int ct_exit_for(int err)
{
	switch (err) {
	case 0:
		return EXIT_OK;
	case -ESRCH:
		return EXIT_NO_PROCESS;
	case -ENOENT:
	case -ECONNREFUSED:
		return EXIT_NOT_DOTNET;
	case -EACCES:
	case -EPERM:
		return EXIT_PERMISSION;
	case -EPROTO:
	case -ETIMEDOUT:
	case -ECONNRESET:
	case -EPIPE:
		return EXIT_PROTOCOL;
	case -EREMOTEIO:
	case -ENOTSUP:
		return EXIT_RUNTIME;
	case -EBADMSG:
		return EXIT_BAD_INPUT;
	case -EXDEV:
	case -ENOTSOCK:
	case -ELOOP:
		return EXIT_NOT_TARGET;
	default:
		return EXIT_ERROR;
	}
}

const char *ct_exit_name(int code)
{
	switch (code) {
	case EXIT_OK: return "ok";
	case EXIT_USAGE: return "usage";
	case EXIT_NO_PROCESS: return "no-process";
	case EXIT_NOT_DOTNET: return "not-dotnet";
	case EXIT_PERMISSION: return "permission";
	case EXIT_PROTOCOL: return "protocol";
	case EXIT_RUNTIME: return "runtime";
	case EXIT_BAD_INPUT: return "bad-input";
	case EXIT_PARTIAL: return "partial";
	case EXIT_NOT_TARGET: return "not-target";
	case EXIT_OVER_BUDGET: return "over-budget";
	case EXIT_AGENT_LIBRARY: return "agent-library";
	case EXIT_AGENT_LIBC: return "agent-libc";
	case EXIT_AGENT_SLOT: return "agent-slot";
	case EXIT_INTERRUPTED: return "interrupted";
	default: return "error";
	}
}
