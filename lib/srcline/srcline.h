/* SPDX-License-Identifier: MIT */
/*
 * srcline.h - source file and line of managed frames in a trace.
 *
 * Fed the runtime's events, it keeps per code body the method's start, size,
 * MethodDef token and module, the modules' IL paths, and the IL-to-native
 * maps (runtime MethodILToNativeMap 190 after its MethodLoadVerbose; rundown
 * MethodDC{Start,End}ILToNativeMap 149/150 before the matching
 * MethodDC{Start,End}Verbose). A frame's address then goes
 *   address -> code body -> native offset -> IL offset (IL-to-native map)
 *   -> sequence point in the module's portable PDB (lib/pe/pdb.h).
 *
 * Native offset -> IL offset rule: the map entry with the greatest native
 * offset <= the frame's offset (a return address is looked up one byte
 * back, inside its call). An entry whose IL offset is the runtime's
 * NO_MAPPING, PROLOG or EPILOG marker gives no line: said, not guessed.
 *
 * Assemblies and PDBs are opened only when asked for a line (never while
 * events are fed), through opts->open_fn when set.
 */
#ifndef CLRTAP_SRCLINE_SRCLINE_H
#define CLRTAP_SRCLINE_SRCLINE_H

#include "common/compat.h"

#include <signal.h>

#include "ipc/ipc.h"
#include "nettrace/nettrace.h"
#include "pe/pdb.h"
#include "pe/pe.h"

struct srcline;

#define SRCLINE_MAX_BODIES (1u << 20)      /* code bodies kept */
#define SRCLINE_MAX_MAP_ENTRIES (1u << 24) /* IL map entries, all bodies */
#define SRCLINE_MAX_MODULES 4096

/* Why a frame has no line (srcline_lookup's *why when it returns -ENOENT/-ESTALE). */
enum srcline_why {
	SRCLINE_OK = 0,
	SRCLINE_NO_METHOD,   /* address in no method load event */
	SRCLINE_NO_MAP,      /* no IL-to-native map for that code */
	SRCLINE_NO_IL,       /* the map says prolog/epilog/no mapping there */
	SRCLINE_NO_MODULE,   /* module path unknown or assembly not readable */
	SRCLINE_NO_PDB,      /* no portable PDB (neither embedded nor beside it) */
	SRCLINE_PDB_MISMATCH, /* a PDB whose id does not match the assembly */
	SRCLINE_NO_SEQPOINT, /* the PDB has no line for that IL offset */
};

/* A short English phrase for why ("no PDB", ...). */
const char *srcline_why_str(enum srcline_why why);

int srcline_new(const struct pe_open_opts *opts, struct srcline **out);
void srcline_free(struct srcline *sl);

/*
 * Records what the event says (method loads, module loads, IL maps); other
 * events are ignored. 0, or -EBADMSG for a damaged payload (skip it),
 * -EFBIG when a cap is reached (later events add nothing), -ENOMEM.
 */
int srcline_add_event(struct srcline *sl, const struct nt_event *ev);

/*
 * Line of the frame at ip (return_address: a caller frame, looked up at
 * ip - 1). 0 and *out (strings owned by sl), or -ENOENT/-ESTALE with *why.
 */
int srcline_lookup(struct srcline *sl, uint64_t ip, bool return_address, struct pe_srcline *out,
		   uint32_t *il_offset, enum srcline_why *why);

/*
 * name + " in FILE:line N" into buf when the frame at ip has a line (1),
 * else name alone (0); -ENOMEM. The one way a frame's name gets its line:
 * lib/flame's writers split it again for pprof Line, speedscope file/line.
 * sl may be NULL (0, name alone).
 */
int srcline_name(struct srcline *sl, uint64_t ip, bool return_address, const char *name,
		 char *buf, size_t len);

/* ---- a live process (live.c) ---- */

/*
 * A srcline for a live process: assemblies and PDBs are read as the target
 * sees them, inside its root (/proc/PID/root, never following its links out).
 */
int srcline_new_proc(pid_t pid, struct srcline **out);

/*
 * Fills sl from a short EventPipe session on ep: stopped as soon as it has
 * started, so what it reads is the rundown (every method's code, its
 * IL-to-native map, the modules) plus the JIT events of that moment. Cost:
 * one rundown (the runtime walks its code heap), the stream read as it
 * comes, kept within SRCLINE_MAX_BODIES / SRCLINE_MAX_MAP_ENTRIES (the
 * session is stopped at a cap: later methods get no line). 0, or a
 * negative errno (-EREMOTEIO with rerr). stop may be NULL.
 */
int srcline_collect(const struct ipc_endpoint *ep, volatile sig_atomic_t *stop, struct srcline *sl,
		    struct ipc_error *rerr);

/*
 * Keeps sl fed with the code the JIT publishes from now on (MethodLoadVerbose
 * and its IL-to-native map) from an EventPipe session on a thread of its own,
 * until srcline_follow_stop; lookups may run meanwhile (sl locks). The
 * runtime hands its events over in batches: a frame of code published in the
 * last moment may have no line yet. ep is copied (its path must outlive f).
 */
struct srcline_follow;
int srcline_follow_start(const struct ipc_endpoint *ep, struct srcline *sl,
			 struct srcline_follow **out);
void srcline_follow_stop(struct srcline_follow *f);

/* Counts: code bodies and IL maps recorded (for notes and tests). */
void srcline_counts(const struct srcline *sl, size_t *bodies, size_t *maps);

#endif
