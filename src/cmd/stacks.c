/* SPDX-License-Identifier: MIT */
/*
 * stacks.c - placeholder: being written (see docs/cmd/stacks.md when it lands).
 */
#include "common/compat.h"

#include "cli.h"

int cmd_stacks(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_error(EXIT_ERROR, "'stacks' is not built yet");
}
