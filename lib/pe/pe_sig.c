/* SPDX-License-Identifier: MIT */
/*
 * pe_sig.c - ECMA-335 signature blobs (II.23.2) and the type signatures
 * inside R2R method signatures: decoding into struct pe_sig and text.
 */
#include "common/compat.h"

#include "common/cursor.h"
#include "common/strbuf.h"
#include "pe/pe.h"
#include "pe/pe_internal.h"

#define PE_MAX_SIG_DEPTH 48
#define PE_MAX_SIG_TEXT ((size_t)1 << 20)
#define PE_MAX_ARRAY_RANK 32
#define PE_MAX_MODIFIERS 32
#define PE_MAX_INST_TEXT ((size_t)1 << 16)

static const char *prim_name(uint8_t et)
{
	switch (et) {
	case PE_ET_VOID: return "void";
	case PE_ET_BOOLEAN: return "bool";
	case PE_ET_CHAR: return "char";
	case PE_ET_I1: return "int8";
	case PE_ET_U1: return "uint8";
	case PE_ET_I2: return "int16";
	case PE_ET_U2: return "uint16";
	case PE_ET_I4: return "int32";
	case PE_ET_U4: return "uint32";
	case PE_ET_I8: return "int64";
	case PE_ET_U8: return "uint64";
	case PE_ET_R4: return "float32";
	case PE_ET_R8: return "float64";
	case PE_ET_STRING: return "string";
	case PE_ET_OBJECT: return "object";
	case PE_ET_I: return "native int";
	case PE_ET_U: return "native uint";
	case PE_ET_TYPEDBYREF: return "typedref";
	default: return NULL;
	}
}

static int token_from_coded(uint32_t v, uint32_t *token)
{
	static const uint8_t tabs[3] = { PE_MD_TYPEDEF, PE_MD_TYPEREF, PE_MD_TYPESPEC };

	if ((v & 3) == 3 || (v >> 2) == 0)
		return -EBADMSG;
	*token = ((uint32_t)tabs[v & 3] << 24) | (v >> 2);
	return 0;
}

static int add_type_token(struct pe_sigctx *ctx, uint32_t token, struct strbuf *out, int depth)
{
	size_t start = out->len;
	int err = -EPROTO;

	if (ctx->mod)
		err = pe_md_type_name_depth(ctx->mod, token, out, depth);
	if (err == -ENOMEM || err == -EMSGSIZE)
		return err;
	if (err) {
		strbuf_setlen(out, start);
		return strbuf_addf(out, "[?]0x%08" PRIx32, token);
	}
	return 0;
}

static int read_token(struct cursor *c, uint32_t *token)
{
	uint32_t v;

	if (pe_cur_comp(c, &v))
		return -EBADMSG;
	return token_from_coded(v, token);
}

static int skip_method_sig(struct pe_sigctx *ctx, struct cursor *c, int depth);

int pe_sig_type(struct pe_sigctx *ctx, struct cursor *c, struct strbuf *out,
		struct pe_type *desc, int depth)
{
	struct pe_type inner = { 0 };
	const char *pn;
	uint32_t token, n, i, v;
	unsigned nmod = 0;
	uint8_t et, b;
	int err = 0;

	if (depth > PE_MAX_SIG_DEPTH)
		return -EBADMSG;
	if (cur_u8(c, &et))
		return -EBADMSG;
	while (et == PE_ET_CMOD_REQD || et == PE_ET_CMOD_OPT || et == PE_ET_PINNED) {
		if (++nmod > PE_MAX_MODIFIERS)
			return -EBADMSG;
		if (et != PE_ET_PINNED && read_token(c, &token))
			return -EBADMSG;
		if (cur_u8(c, &et))
			return -EBADMSG;
	}
	pn = prim_name(et);
	if (pn) {
		if (desc)
			desc->et = et;
		return strbuf_addstr(out, pn);
	}
	switch (et) {
	case PE_ET_BYREF:
		err = pe_sig_type(ctx, c, out, desc, depth + 1);
		if (!err)
			err = strbuf_addch(out, '&');
		if (desc)
			desc->byref = true;
		return err;
	case PE_ET_PTR:
	case PE_ET_SZARRAY:
		err = pe_sig_type(ctx, c, out, &inner, depth + 1);
		if (!err)
			err = strbuf_addstr(out, et == PE_ET_PTR ? "*" : "[]");
		if (desc) {
			desc->et = et;
			desc->elem_et = inner.et;
		}
		return err;
	case PE_ET_ARRAY: {
		uint32_t rank;

		err = pe_sig_type(ctx, c, out, &inner, depth + 1);
		if (err)
			return err;
		if (pe_cur_comp(c, &rank) || rank == 0 || rank > PE_MAX_ARRAY_RANK)
			return -EBADMSG;
		/* sizes, then lower bounds (signed; only skipped) */
		for (b = 0; b < 2; b++) {
			if (pe_cur_comp(c, &n) || n > rank)
				return -EBADMSG;
			for (i = 0; i < n; i++)
				if (pe_cur_comp(c, &v))
					return -EBADMSG;
		}
		err = strbuf_addch(out, '[');
		if (rank == 1 && !err)
			err = strbuf_addch(out, '*');
		for (i = 1; i < rank && !err; i++)
			err = strbuf_addch(out, ',');
		if (!err)
			err = strbuf_addch(out, ']');
		if (desc) {
			desc->et = et;
			desc->elem_et = inner.et;
			desc->number = rank;
		}
		return err;
	}
	case PE_ET_VALUETYPE:
	case PE_ET_CLASS:
		if (read_token(c, &token))
			return -EBADMSG;
		if (desc) {
			desc->et = et;
			desc->token = token;
			desc->valuetype = et == PE_ET_VALUETYPE;
			if (et == PE_ET_VALUETYPE && ctx->mod && (token >> 24) == PE_MD_TYPEDEF)
				desc->enum_et = pe_md_enum_type(ctx->mod, token & 0xffffff);
		}
		return add_type_token(ctx, token, out, depth + 1);
	case PE_ET_GENERICINST:
		if (cur_u8(c, &b) || (b != PE_ET_CLASS && b != PE_ET_VALUETYPE))
			return -EBADMSG;
		if (read_token(c, &token) || pe_cur_comp(c, &n) || n == 0 || n > cur_left(c))
			return -EBADMSG;
		err = add_type_token(ctx, token, out, depth + 1);
		if (!err)
			err = strbuf_addch(out, '[');
		for (i = 0; i < n && !err; i++) {
			if (i)
				err = strbuf_addch(out, ',');
			if (!err)
				err = pe_sig_type(ctx, c, out, NULL, depth + 1);
		}
		if (!err)
			err = strbuf_addch(out, ']');
		if (desc) {
			desc->et = et;
			desc->token = token;
			desc->valuetype = b == PE_ET_VALUETYPE;
		}
		return err;
	case PE_ET_VAR:
	case PE_ET_MVAR: {
		const struct pe_inst *in = et == PE_ET_VAR ? ctx->tinst : ctx->minst;

		if (pe_cur_comp(c, &n))
			return -EBADMSG;
		if (in && n < in->n) {
			if (desc) {
				bool byref = desc->byref;

				*desc = in->types[n];
				desc->byref = byref;
			}
			return strbuf_addstr(out, in->names.buf + in->name_off[n]);
		}
		if (desc) {
			desc->et = et;
			desc->number = n;
		}
		return strbuf_addf(out, "%s%" PRIu32, et == PE_ET_VAR ? "!" : "!!", n);
	}
	case PE_ET_FNPTR:
		if (desc)
			desc->et = et;
		err = skip_method_sig(ctx, c, depth + 1);
		return err ? err : strbuf_addstr(out, "fnptr");
	default:
		break;
	}
	if (!ctx->r2r)
		return -EBADMSG;
	switch (et) {
	case PE_ET_CANON_ZAPSIG:
		if (desc)
			desc->et = et;
		return strbuf_addstr(out, "System.__Canon");
	case PE_ET_MODULE_ZAPSIG: {
		struct pe_file *saved = ctx->mod;

		if (pe_cur_comp(c, &n))
			return -EBADMSG;
		ctx->mod = ctx->root ? pe_module_by_index(ctx->root, n) : NULL;
		err = pe_sig_type(ctx, c, out, desc, depth + 1);
		ctx->mod = saved;
		return err;
	}
	case PE_ET_VAR_ZAPSIG: {
		uint32_t nm = 0;

		if (pe_cur_comp(c, &n))
			return -EBADMSG;
		if (desc)
			desc->et = PE_ET_VAR;
		if (ctx->mod && !pe_md_col(&ctx->mod->md, PE_MD_GENERICPARAM, n, 3, &nm))
			return strbuf_addstr(out, pe_md_str(&ctx->mod->md, nm));
		return strbuf_addf(out, "!gp%" PRIu32, n);
	}
	case PE_ET_NATIVE_VALUETYPE_ZAPSIG:
	case PE_ET_NATIVE_ARRAY_TEMPLATE_ZAPSIG:
		return pe_sig_type(ctx, c, out, desc, depth + 1);
	default:
		return -EBADMSG;
	}
}

static int skip_method_sig(struct pe_sigctx *ctx, struct cursor *c, int depth)
{
	struct strbuf scratch = STRBUF_INIT_MAX(PE_MAX_SIG_TEXT);
	uint32_t n, g, i;
	uint8_t cc, b;
	int err = 0;

	if (depth > PE_MAX_SIG_DEPTH || cur_u8(c, &cc))
		return -EBADMSG;
	if ((cc & PE_CALLCONV_GENERIC) && pe_cur_comp(c, &g))
		return -EBADMSG;
	if (pe_cur_comp(c, &n) || n > cur_left(c))
		return -EBADMSG;
	for (i = 0; i <= n && !err; i++) {
		if (i && cur_left(c) && c->p[c->off] == PE_ET_SENTINEL)
			cur_u8(c, &b);
		err = pe_sig_type(ctx, c, &scratch, NULL, depth + 1);
		strbuf_reset(&scratch);
	}
	strbuf_release(&scratch);
	return err;
}

void pe_inst_release(struct pe_inst *in)
{
	free(in->types);
	free(in->name_off);
	strbuf_release(&in->names);
	memset(in, 0, sizeof(*in));
	strbuf_init(&in->names, PE_MAX_SIG_TEXT);
}

int pe_inst_read(struct pe_sigctx *ctx, struct cursor *c, uint32_t n, struct pe_inst *in)
{
	uint32_t i;
	int err = 0;

	memset(in, 0, sizeof(*in));
	strbuf_init(&in->names, PE_MAX_INST_TEXT);
	if (n > cur_left(c))
		return -EBADMSG;
	in->types = calloc(n ? n : 1, sizeof(*in->types));
	in->name_off = calloc(n ? n : 1, sizeof(*in->name_off));
	if (!in->types || !in->name_off)
		return -ENOMEM;
	for (i = 0; i < n && !err; i++) {
		in->name_off[i] = (uint32_t)in->names.len;
		err = pe_sig_type(ctx, c, &in->names, &in->types[i], 0);
		if (!err)
			err = strbuf_addch(&in->names, '\0');
		in->n = i + 1;
	}
	if (err)
		return err;
	for (i = 0; i < n; i++)
		in->types[i].name = in->names.buf + in->name_off[i];
	return 0;
}

/* Param names of MethodDef rid: names[seq - 1] for Sequence 1..n. */
static void param_names(struct pe_file *mod, uint32_t rid, uint32_t n, uint32_t *off,
			struct strbuf *sb)
{
	const struct pe_md *md = &mod->md;
	uint32_t first = 0, last, nparam = md->tab[0x07].rows ? md->tab[0x07].rows
							   : md->tab[PE_MD_PARAM].rows;
	uint32_t i;

	if (pe_md_col(md, PE_MD_METHODDEF, rid, 5, &first) || first == 0)
		return;
	if (rid < md->tab[PE_MD_METHODDEF].rows)
		pe_md_col(md, PE_MD_METHODDEF, rid + 1, 5, &last);
	else
		last = nparam + 1;
	if (last > nparam + 1)
		last = nparam + 1;
	for (i = first; i < last && i - first <= n; i++) {
		uint32_t p = i, seq = 0, nm = 0;

		if (md->tab[0x07].rows && pe_md_col(md, 0x07, i, 0, &p))
			continue;
		if (pe_md_col(md, PE_MD_PARAM, p, 1, &seq) || seq == 0 || seq > n)
			continue;
		pe_md_col(md, PE_MD_PARAM, p, 2, &nm);
		off[seq - 1] = (uint32_t)sb->len;
		if (strbuf_addstr(sb, pe_md_str(md, nm)) || strbuf_addch(sb, '\0'))
			return;
	}
}

int pe_sig_decode(struct pe_sigctx *ctx, const uint8_t *blob, uint32_t len,
		  struct pe_file *names_mod, uint32_t method_rid, struct pe_sig **out)
{
	struct strbuf sb = STRBUF_INIT_MAX(PE_MAX_SIG_TEXT);
	struct strbuf text = STRBUF_INIT_MAX(PE_MAX_SIG_TEXT);
	struct pe_type *types = NULL;
	uint32_t *name_off = NULL, *pname_off = NULL;
	struct pe_sig *sig = NULL;
	struct cursor c;
	uint32_t n = 0, g = 0, i;
	uint8_t cc, b;
	size_t total;
	char *strs;
	int err;

	cur_init(&c, blob, len);
	if (cur_u8(&c, &cc) || (cc & 0x0f) > PE_CALLCONV_VARARG)
		return -EBADMSG;
	if ((cc & PE_CALLCONV_GENERIC) && pe_cur_comp(&c, &g))
		return -EBADMSG;
	if (pe_cur_comp(&c, &n) || n > cur_left(&c))
		return -EBADMSG;
	types = calloc((size_t)n + 1, sizeof(*types));
	name_off = calloc((size_t)n + 1, sizeof(*name_off));
	pname_off = calloc((size_t)n + 1, sizeof(*pname_off));
	if (!types || !name_off || !pname_off) {
		err = -ENOMEM;
		goto out;
	}
	/* offset 0 of sb is the empty string */
	err = strbuf_addch(&sb, '\0');
	if (err)
		goto out;
	err = strbuf_addch(&text, '(');
	for (i = 0; i <= n && !err; i++) {
		struct pe_type *t = i == 0 ? &types[n] : &types[i - 1];
		size_t start = sb.len;

		if (i > 0 && cur_left(&c) && c.p[c.off] == PE_ET_SENTINEL) {
			cur_u8(&c, &b);
			err = strbuf_addstr(&text, i > 1 ? ", ..." : "...");
			if (err)
				break;
		}
		err = pe_sig_type(ctx, &c, &sb, t, 0);
		if (err)
			break;
		if (i > 0) {
			if (text.len > 1)
				err = strbuf_addstr(&text, ", ");
			if (!err)
				err = strbuf_addstr(&text, sb.buf + start);
		}
		if (!err)
			err = strbuf_addch(&sb, '\0');
		name_off[i == 0 ? n : i - 1] = (uint32_t)start;
	}
	if (!err)
		err = strbuf_addch(&text, ')');
	if (err)
		goto out;
	if (names_mod && method_rid)
		param_names(names_mod, method_rid, n, pname_off, &sb);

	total = sizeof(*sig) + (size_t)n * sizeof(struct pe_type) + (size_t)n * sizeof(char *) +
		sb.len + text.len + 1;
	sig = calloc(1, total);
	if (!sig) {
		err = -ENOMEM;
		goto out;
	}
	sig->params = (struct pe_type *)(sig + 1);
	sig->param_names = (const char **)(sig->params + n);
	strs = (char *)(sig->param_names + n);
	memcpy(strs, sb.buf, sb.len);
	memcpy(strs + sb.len, text.buf, text.len + 1);
	sig->callconv = cc;
	sig->has_this = (cc & PE_CALLCONV_HASTHIS) != 0;
	sig->explicit_this = (cc & PE_CALLCONV_EXPLICITTHIS) != 0;
	sig->generic_count = g;
	sig->nparams = n;
	sig->ret = types[n];
	sig->ret.name = strs + name_off[n];
	for (i = 0; i < n; i++) {
		sig->params[i] = types[i];
		sig->params[i].name = strs + name_off[i];
		sig->param_names[i] = strs + pname_off[i];
	}
	sig->text = strs + sb.len;
	*out = sig;
out:
	free(types);
	free(name_off);
	free(pname_off);
	strbuf_release(&sb);
	strbuf_release(&text);
	return err;
}

void pe_sig_free(struct pe_sig *sig)
{
	free(sig);
}

int pe_md_method_sig(struct pe_file *pf, uint32_t token, struct pe_sig **out)
{
	struct pe_sigctx ctx = { .mod = pf };
	uint32_t rid = token & 0xffffff, bi = 0;
	const uint8_t *p;
	uint32_t len;
	unsigned t = token >> 24;

	if (!pf || !out)
		return -EINVAL;
	if (!pf->md.present)
		return -EPROTO;
	if (t == PE_MD_METHODDEF) {
		if (pe_md_col(&pf->md, PE_MD_METHODDEF, rid, 4, &bi))
			return -ENOENT;
	} else if (t == PE_MD_MEMBERREF) {
		if (pe_md_col(&pf->md, PE_MD_MEMBERREF, rid, 2, &bi))
			return -ENOENT;
	} else {
		return -EINVAL;
	}
	if (pe_md_blob_get(&pf->md, bi, &p, &len))
		return -EBADMSG;
	return pe_sig_decode(&ctx, p, len, t == PE_MD_METHODDEF ? pf : NULL,
			     t == PE_MD_METHODDEF ? rid : 0, out);
}
