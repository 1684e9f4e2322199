/* SPDX-License-Identifier: MIT */
/*
 * fleet_fuzz.c - libFuzzer harness for what a target's strings go through on
 * their way into labels: the cleaning (fixed byte set, cap), the Pyroscope
 * name and its URL escaping. Checks that no target byte ends a label.
 */
#include "common/compat.h"

#include "fleet/fleet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fleet_labels l;
	struct strbuf sb = STRBUF_INIT, esc = STRBUF_INIT;
	size_t half = size / 2, i, commas = 0;

	memset(&l, 0, sizeof(l));
	fleet_label_clean((const char *)data, half, l.service, sizeof(l.service));
	fleet_label_clean((const char *)data + half, size - half, l.pod_name, sizeof(l.pod_name));
	if (strlen(l.service) > FLEET_LABEL_MAX || strlen(l.pod_name) > FLEET_LABEL_MAX)
		__builtin_trap();
	if (!l.service[0]) /* fleet_labels_read never leaves it empty */
		l.service[0] = 'x';
	l.pid = 7;
	if (fleet_pyroscope_name(&l, &sb) || fleet_url_escape(sb.buf, &esc))
		__builtin_trap();
	for (i = 0; i < sb.len; i++) {
		if (sb.buf[i] == ',')
			commas++;
		if (sb.buf[i] == '\n' || ((sb.buf[i] == '{' || sb.buf[i] == '}') &&
					  i != strlen(l.service) && i != sb.len - 1))
			__builtin_trap();
	}
	if (commas != (l.pod_name[0] ? 2u : 1u)) /* service_name, process_pid[, k8s_pod_name] */
		__builtin_trap();
	strbuf_release(&sb);
	strbuf_release(&esc);
	return 0;
}
