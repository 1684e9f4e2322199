/* SPDX-License-Identifier: MIT */
/*
 * execenv - runs a program with extra environment entries given verbatim,
 * which env(1) cannot make: an entry without '=' or with an empty name
 * ("=value"). Used by t-json.sh to give a .NET process hostile environment
 * names.
 *
 *   execenv ENTRY... -- PROG [ARG...]
 *
 * The entries come after the current environment, byte for byte.
 */
#include "common/compat.h"

extern char **environ;

int main(int argc, char **argv)
{
	size_t nenv = 0, nextra = 0, k = 0;
	char **envp;
	int i, sep = -1;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			sep = i;
			break;
		}
		nextra++;
	}
	if (sep < 0 || sep + 1 >= argc) {
		fprintf(stderr, "usage: execenv ENTRY... -- PROG [ARG...]\n");
		return 2;
	}
	while (environ[nenv])
		nenv++;
	envp = calloc(nenv + nextra + 1, sizeof(*envp));
	if (!envp)
		return 1;
	for (k = 0; k < nenv; k++)
		envp[k] = environ[k];
	for (i = 1; i < sep; i++)
		envp[k++] = argv[i];
	execvpe(argv[sep + 1], argv + sep + 1, envp);
	fprintf(stderr, "execenv: %s: %s\n", argv[sep + 1], strerror(errno));
	return 127;
}
