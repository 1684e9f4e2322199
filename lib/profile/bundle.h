/* SPDX-License-Identifier: MIT */
/*
 * bundle.h - a .tar.gz of files (POSIX ustar inside gzip), for
 * `clrtap profile --bundle`.
 */
#ifndef CLRTAP_PROFILE_BUNDLE_H
#define CLRTAP_PROFILE_BUNDLE_H

#include "common/compat.h"

/*
 * Writes out_path: a gzip'd ustar archive of dir/names[i], each stored as
 * "prefix/names[i]" (mode 0644, owner root). Names must fit ustar's 100-byte
 * name field with the prefix. Returns 0 or a negative errno (the partial file
 * is removed).
 */
int profile_tar_gz(const char *out_path, const char *dir, const char *prefix,
		   const char *const *names, size_t n);

#endif
