/* SPDX-License-Identifier: MIT */
/*
 * labels.c - OpenTelemetry resource attributes of a target, cleaned so a
 * target's strings can neither end a label nor add one (see fleet.h).
 */
#include "common/compat.h"

#include <sys/utsname.h>

#include "common/strparse.h"
#include "fleet/fleet.h"
#include "ipc/ipc.h"
#include "proc/proc.h"

static bool label_byte_ok(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == ':' || c == '/' || c == '@' || c == '+' || c == '-';
}

void fleet_label_clean(const char *in, size_t len, char *out, size_t cap)
{
	size_t i, n = 0;

	if (!cap)
		return;
	for (i = 0; i < len && n + 1 < cap && n < FLEET_LABEL_MAX; i++)
		out[n++] = label_byte_ok((unsigned char)in[i]) ? in[i] : '_';
	out[n] = '\0';
}

static bool env_label(pid_t pid, const char *name, char *out, size_t cap)
{
	struct strbuf sb = STRBUF_INIT_MAX(4096);
	bool got = false;

	if (proc_environ_get(pid, name, &sb) == 0 && sb.len) {
		fleet_label_clean(sb.buf, sb.len, out, cap);
		got = true;
	}
	strbuf_release(&sb);
	return got;
}

/* "App.dll" or "/app/App.dll" -> "App" */
static void assembly_base(const char *a, char *out, size_t cap)
{
	const char *b = strrchr(a, '/');
	size_t n;

	b = b ? b + 1 : a;
	n = strlen(b);
	if (n > 4 && (!strcmp(b + n - 4, ".dll") || !strcmp(b + n - 4, ".exe")))
		n -= 4;
	fleet_label_clean(b, n, out, cap);
}

int fleet_labels_read(pid_t pid, const struct proc_target *t, const char *host, int timeout_ms,
		      struct fleet_labels *l)
{
	struct proc_container c;
	char comm[64];

	memset(l, 0, sizeof(*l));
	l->pid = pid;
	if (host && *host) {
		fleet_label_clean(host, strlen(host), l->host, sizeof(l->host));
	} else {
		struct utsname u;

		if (uname(&u) == 0)
			fleet_label_clean(u.nodename, strlen(u.nodename), l->host, sizeof(l->host));
	}
	if (proc_container(pid, &c) == 0) {
		memcpy(l->container, c.id, sizeof(l->container));
		memcpy(l->pod_uid, c.pod, sizeof(l->pod_uid));
	}
	if (!env_label(pid, "K8S_POD_NAME", l->pod_name, sizeof(l->pod_name)))
		env_label(pid, "POD_NAME", l->pod_name, sizeof(l->pod_name));
	if (!env_label(pid, "K8S_NAMESPACE_NAME", l->namespace, sizeof(l->namespace)) &&
	    !env_label(pid, "K8S_NAMESPACE", l->namespace, sizeof(l->namespace)))
		env_label(pid, "POD_NAMESPACE", l->namespace, sizeof(l->namespace));
	if (env_label(pid, "OTEL_SERVICE_NAME", l->service, sizeof(l->service)))
		ct_strlcpy(l->service_src, "env", sizeof(l->service_src));
	if (t) {
		struct ipc_endpoint ep;
		struct ipc_process_info pi = { 0 };
		struct ipc_error rerr;

		ipc_endpoint_init(&ep, t, timeout_ms);
		if (ipc_process_info(&ep, &pi, &rerr) == 0) {
			if (!l->service[0] && pi.assembly && pi.assembly[0]) {
				assembly_base(pi.assembly, l->service, sizeof(l->service));
				ct_strlcpy(l->service_src, "assembly", sizeof(l->service_src));
			}
			if (pi.clr_version)
				fleet_label_clean(pi.clr_version, strlen(pi.clr_version), l->runtime,
						  sizeof(l->runtime));
		}
		ipc_process_info_release(&pi);
	}
	if (!l->service[0] && proc_comm(pid, comm, sizeof(comm)) == 0) {
		fleet_label_clean(comm, strlen(comm), l->service, sizeof(l->service));
		ct_strlcpy(l->service_src, "comm", sizeof(l->service_src));
	}
	if (!l->service[0])
		ct_strlcpy(l->service, "unknown_service", sizeof(l->service));
	return 0;
}

static void add_label(struct strbuf *out, bool *first, const char *k, const char *v)
{
	if (!v || !*v)
		return;
	strbuf_addf(out, "%s%s=%s", *first ? "" : ",", k, v);
	*first = false;
}

int fleet_pyroscope_name(const struct fleet_labels *l, struct strbuf *out)
{
	char pid[16];
	bool first = true;

	snprintf(pid, sizeof(pid), "%d", (int)l->pid);
	strbuf_addf(out, "%s{", l->service);
	add_label(out, &first, "service_name", l->service);
	add_label(out, &first, "process_pid", pid);
	add_label(out, &first, "host_name", l->host);
	add_label(out, &first, "container_id", l->container);
	add_label(out, &first, "k8s_pod_uid", l->pod_uid);
	add_label(out, &first, "k8s_pod_name", l->pod_name);
	add_label(out, &first, "k8s_namespace_name", l->namespace);
	add_label(out, &first, "process_runtime_version", l->runtime);
	strbuf_addch(out, '}');
	return strbuf_error(out);
}

int fleet_url_escape(const char *s, struct strbuf *out)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~') {
			strbuf_addch(out, c);
		} else {
			strbuf_addch(out, '%');
			strbuf_addch(out, hex[c >> 4]);
			strbuf_addch(out, hex[c & 15]);
		}
	}
	return strbuf_error(out);
}

const char *fleet_exp_name(enum fleet_exp_kind k)
{
	switch (k) {
	case FLEET_EXP_PYROSCOPE:
		return "pyroscope";
	case FLEET_EXP_OTLP:
		return "otlp";
	case FLEET_EXP_DIR:
		return "dir";
	default:
		return "?";
	}
}
