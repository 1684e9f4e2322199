/* SPDX-License-Identifier: MIT */
/*
 * curl.c - fleet's HTTP POST through libcurl, loaded with dlopen when
 * fleet starts (common/curl_dl.h).
 */
#include "common/compat.h"

#include "common/curl_dl.h"
#include "fleet/internal.h"

#define cu ct_cu

int fleet_curl_load(char *why, size_t len)
{
	return ct_curl_load(why, len);
}

static size_t discard(char *p, size_t sz, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return sz * n; /* the reply body is not used; its size is bounded by the timeout */
}

int fleet_http_post(const struct fleet_http_req *r, long *status, char *why, size_t wlen)
{
	const struct fleet_opts *o = r->o;
	struct curl_slist *hl = NULL;
	curl_mime *mime = NULL;
	CURL *c;
	CURLcode rc;
	char hdr[1024];
	size_t i;
	int err = 0;

	if (fleet_curl_load(why, wlen))
		return -ENOENT;
	c = cu.curl_easy_init();
	if (!c)
		return -ENOMEM;
	*status = 0;
	cu.curl_easy_setopt(c, CURLOPT_URL, r->url);
	cu.curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	cu.curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(o->http_timeout_ms > 0 ? o->http_timeout_ms : 10000));
	cu.curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	cu.curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	cu.curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	cu.curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	cu.curl_easy_setopt(c, CURLOPT_USERAGENT, "clrtap-fleet");
	if (o->cacert)
		cu.curl_easy_setopt(c, CURLOPT_CAINFO, o->cacert);
	if (o->basic) {
		cu.curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		cu.curl_easy_setopt(c, CURLOPT_USERPWD, o->basic);
	}
	if (o->bearer) {
		snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s", o->bearer);
		hl = cu.curl_slist_append(hl, hdr);
	}
	if (o->tenant) {
		snprintf(hdr, sizeof(hdr), "X-Scope-OrgID: %s", o->tenant);
		hl = cu.curl_slist_append(hl, hdr);
	}
	for (i = 0; i < o->nheaders; i++)
		hl = cu.curl_slist_append(hl, o->headers[i]);
	hl = cu.curl_slist_append(hl, "Expect:");
	if (r->form_field) {
		curl_mimepart *part;

		mime = cu.curl_mime_init(c);
		part = cu.curl_mime_addpart(mime);
		cu.curl_mime_name(part, r->form_field);
		cu.curl_mime_filename(part, r->form_filename ? r->form_filename : r->form_field);
		cu.curl_mime_type(part, "application/octet-stream");
		cu.curl_mime_data(part, r->body, r->len);
		cu.curl_easy_setopt(c, CURLOPT_MIMEPOST, mime);
	} else {
		snprintf(hdr, sizeof(hdr), "Content-Type: %s", r->content_type);
		hl = cu.curl_slist_append(hl, hdr);
		if (r->content_encoding) {
			snprintf(hdr, sizeof(hdr), "Content-Encoding: %s", r->content_encoding);
			hl = cu.curl_slist_append(hl, hdr);
		}
		cu.curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->body);
		cu.curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->len);
	}
	cu.curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	rc = cu.curl_easy_perform(c);
	if (rc != CURLE_OK) {
		snprintf(why, wlen, "%s", cu.curl_easy_strerror(rc));
		err = rc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -ECONNREFUSED;
	} else {
		cu.curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	}
	cu.curl_easy_cleanup(c);
	if (mime)
		cu.curl_mime_free(mime);
	cu.curl_slist_free_all(hl);
	return err;
}
