/* SPDX-License-Identifier: MIT */
/*
 * top.c - placeholder: being written (see docs/cmd/top.md when it lands).
 */
#include "common/compat.h"

#include "cli.h"

int cmd_top(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_error(EXIT_ERROR, "'top' is not built yet");
}
