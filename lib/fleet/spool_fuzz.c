/* SPDX-License-Identifier: MIT */
/*
 * spool_fuzz.c - libFuzzer harness for the header of an on-disk spool file
 * (--spool: files on disk are outside input) and the check of its Pyroscope
 * name: what is accepted has its sizes under the caps and its name usable in
 * a URL as it is.
 */
#include "common/compat.h"

#include "fleet/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fleet_spool_hdr h;
	size_t i;

	if (!fleet_spool_header((const char *)data, size, &h)) {
		if (h.body_len > ((size_t)8 << 20) || h.name_len > 65536 || h.pid <= 0 || !h.type ||
		    h.off > size || h.off > 256)
			__builtin_trap();
		if (h.off + h.name_len <= size && fleet_spool_name_ok((const char *)data + h.off, h.name_len))
			for (i = 0; i < h.name_len; i++)
				if (data[h.off + i] == '&' || data[h.off + i] == '#' || data[h.off + i] == ' ' ||
				    data[h.off + i] == '\n')
					__builtin_trap();
	}
	return 0;
}
