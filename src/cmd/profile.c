/* SPDX-License-Identifier: MIT */
/*
 * profile.c - placeholder: being written (see docs/cmd/profile.md when it lands).
 */
#include "common/compat.h"

#include "cli.h"

int cmd_profile(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_error(EXIT_ERROR, "'profile' is not built yet");
}
