/* SPDX-License-Identifier: MIT */
/*
 * counters.c - placeholder: being written (see docs/cmd/counters.md when it lands).
 */
#include "common/compat.h"

#include "cli.h"

int cmd_counters(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_error(EXIT_ERROR, "'counters' is not built yet");
}
