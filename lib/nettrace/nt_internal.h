/* SPDX-License-Identifier: MIT */
/*
 * nt_internal.h - declarations shared by the lib/nettrace sources only.
 */
#ifndef CLRTAP_NETTRACE_NT_INTERNAL_H
#define CLRTAP_NETTRACE_NT_INTERNAL_H

#include "common/compat.h"
#include "common/cursor.h"
#include "common/strbuf.h"
#include "nettrace/nettrace.h"

/* Nesting limit for field descriptions and payload walks. */
#define NT_MAX_DEPTH 32

/* One field while a metadata record is being built (indexes, not pointers). */
struct nt_sfield {
	uint32_t name; /* offset into the string scratch */
	uint8_t type;
	uint16_t nfields;
	uint16_t fixed_count;
	uint32_t child; /* first member (OBJECT) or element (arrays); UINT32_MAX if none */
};

/* Scratch reused for every metadata record (no allocation once warm). */
struct nt_mbuild {
	struct strbuf str;
	struct nt_sfield *f;
	uint32_t nf, fcap;
	uint32_t max_fields;
};

void nt_mbuild_init(struct nt_mbuild *b, uint32_t max_fields, size_t max_str);
void nt_mbuild_release(struct nt_mbuild *b);

/*
 * Parses one metadata record (V5: the payload of a blob in a MetadataBlock;
 * V6: one row without its u16 size) into a new allocation *out of *bytes
 * bytes (free() it). Returns 0, -EBADMSG (header unreadable), -EFBIG (too
 * many fields) or -ENOMEM. A field list that cannot be parsed is not an
 * error: the record gets NT_META_BAD_FIELDS and no fields.
 */
int nt_meta_parse_v5(struct nt_mbuild *b, const uint8_t *p, size_t len, struct nt_metadata **out,
		     size_t *bytes);
int nt_meta_parse_v6(struct nt_mbuild *b, const uint8_t *p, size_t len, struct nt_metadata **out,
		     size_t *bytes);

/*
 * Reads a NUL-terminated UTF-16LE string at the cursor: *s gets the units
 * before the terminator; the cursor moves past it. -EBADMSG when unterminated.
 */
int nt_cur_str16(struct cursor *c, struct nt_str16 *s);

/*
 * The time-order window (order.c): items of bytes keyed by timestamp, taken
 * out oldest first (arrival order among equal timestamps). Memory: the items
 * held plus at most as much again of reclaimable arena.
 */
struct nt_order_item;
struct nt_order {
	struct nt_order_item *items; /* a binary min-heap */
	size_t n, cap;
	uint8_t *arena;
	size_t alen, acap, dead;
	uint64_t seq;
	size_t bytes;                 /* bytes of the items held */
	size_t max_events, max_bytes; /* nt_order_over() past these */
	size_t bytes_max, events_max; /* high-water marks */
};
void nt_order_init(struct nt_order *o, size_t max_events, size_t max_bytes);
void nt_order_free(struct nt_order *o);
/* Holds a copy of hdr then p under timestamp ts; -ENOMEM. */
int nt_order_add(struct nt_order *o, int64_t ts, const void *hdr, uint32_t hlen, const void *p,
		 uint32_t plen);
/* More held than the caps allow. */
bool nt_order_over(const struct nt_order *o);
/* The oldest held timestamp; false when empty. */
bool nt_order_peek(const struct nt_order *o, int64_t *ts);
/* Takes the oldest item out: its bytes (valid until the next nt_order_add), or NULL. */
const uint8_t *nt_order_pop(struct nt_order *o, int64_t *ts, uint32_t *len);

#endif
