/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the IPC reply decoders. The input is a whole reply
 * (header + payload, as the seeds in tests/data/ipc/ are); every decoder is
 * run over the payload so each sees every mutation.
 */
#include "common/compat.h"

#include "ipc/ipc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count_env(const char *e, void *ctx)
{
	(*(size_t *)ctx) += strlen(e);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ipc_header h;
	struct ipc_process_info pi;
	struct ipc_error e;
	const uint8_t *p = data;
	size_t len = size, total = 0;
	unsigned v;

	if (ipc_parse_header(data, size, &h) == 0) {
		p = data + IPC_HEADER_SIZE;
		len = size - IPC_HEADER_SIZE;
		if (h.size - IPC_HEADER_SIZE < len)
			len = h.size - IPC_HEADER_SIZE;
	}
	for (v = 1; v <= 3; v++) {
		if (ipc_parse_process_info(p, len, v, &pi) == 0) {
			if (pi.cmdline)
				total += strlen(pi.cmdline);
			ipc_process_info_release(&pi);
		}
	}
	(void)ipc_parse_env_block(p, len, count_env, &total);
	if (len > 6)
		(void)ipc_parse_env_block(p + 6, len - 6, count_env, &total);
	(void)ipc_parse_error(p, len, &e);
	/* The session stream's prologue check, over the reply and the raw bytes. */
	{
		size_t need;

		(void)ipc_stream_check_prologue(data, size, &need);
		(void)ipc_stream_check_prologue(p, len, &need);
	}
	return total == SIZE_MAX;
}
