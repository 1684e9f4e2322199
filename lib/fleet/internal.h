/* SPDX-License-Identifier: MIT */
/* internal.h - lib/fleet's parts talking to each other. */
#ifndef CLRTAP_FLEET_INTERNAL_H
#define CLRTAP_FLEET_INTERNAL_H

#include "fleet/fleet.h"

struct fleet_http_req {
	const char *url;
	const char *content_type;       /* a plain body: its type */
	const char *content_encoding;   /* and its encoding ("gzip"), or NULL */
	const char *form_field;         /* or a multipart/form-data body in this field */
	const char *form_filename;
	const void *body;
	size_t len;
	const struct fleet_opts *o;     /* auth, headers, TLS, timeout */
};

/* One POST. 0 with *status (HTTP code), or a negative errno with why. */
int fleet_http_post(const struct fleet_http_req *r, long *status, char *why, size_t wlen);

/* The header line of a spool file (outside input: every field checked, sizes
 * capped). 0, or -EBADMSG. off: where the name (then the body) starts. */
struct fleet_spool_hdr {
	int64_t from_s, until_s, from_ms;
	pid_t pid;
	unsigned hz;
	const char *type; /* one of fleet's own strings */
	bool gzip;
	size_t name_len, body_len, off;
};
int fleet_spool_header(const char *buf, size_t len, struct fleet_spool_hdr *h);
/* A spooled Pyroscope name: only the bytes fleet_url_escape writes. */
bool fleet_spool_name_ok(const char *s, size_t len);

#endif
