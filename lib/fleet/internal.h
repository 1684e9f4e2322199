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

#endif
