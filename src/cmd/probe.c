/* SPDX-License-Identifier: MIT */
/*
 * probe.c - placeholder: being written (see docs/cmd/probe.md when it lands).
 */
#include "common/compat.h"

#include "cli.h"

int cmd_probe(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_error(EXIT_ERROR, "'probe' is not built yet");
}
