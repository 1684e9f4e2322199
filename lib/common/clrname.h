/* SPDX-License-Identifier: MIT */
/*
 * clrname.h - a managed frame's name as the programmer wrote it.
 *
 * The C# compiler turns an async method into a state machine type
 * (`Shop.Checkout+<Price>d__2::MoveNext`), a lambda into a method of a
 * closure type (`Program+<>c::<Main>b__0_0`) and a local function into a
 * mangled method (`Program::<Outer>g__Inner|0_1`). ct_clrname_pretty turns
 * such a "Type::Method" name into the method written in the source, with a
 * marker: `Shop.Checkout::Price [async]`, `Program::Main [lambda]`,
 * `Program::Outer [local Inner]` (combined: `[async lambda]`,
 * `[async local Inner]`). The compiler names an iterator (`yield return`)
 * the way it names an async method; by name alone both read `[async]`.
 *
 * One display switch for the whole process (set once at start-up, by the
 * CLI's --raw-names): ct_clrname_display gives the raw name when set.
 */
#ifndef CLRTAP_COMMON_CLRNAME_H
#define CLRTAP_COMMON_CLRNAME_H

#include "common/compat.h"

#include <stdbool.h>
#include <stddef.h>

/*
 * Writes the source-level form of raw (len bytes, "Type::Method") into out
 * (cap bytes, NUL-terminated). Returns 1 when it differs from raw, 0 when raw
 * is not a compiler-generated name (out then holds nothing of use),
 * -EMSGSIZE when it does not fit.
 */
int ct_clrname_pretty(const char *raw, size_t len, char *out, size_t cap);

/* The process-wide display choice: raw runtime names or source names (the default). */
void ct_clrname_set_raw(bool raw);
bool ct_clrname_raw(void);

/* raw itself in raw mode or when unchanged, else out filled by ct_clrname_pretty. */
const char *ct_clrname_display(const char *raw, char *out, size_t cap);

#endif
