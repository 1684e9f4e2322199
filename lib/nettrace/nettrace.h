/* SPDX-License-Identifier: MIT */
/*
 * nettrace.h - streaming reader for the .NET EventPipe "nettrace" format.
 *
 * Reads NetTrace V4/V5 (what the .NET 5-10 runtime writes over IPC and to
 * DOTNET_EventPipeOutputPath files) and NetTrace V6, pulling bytes from a
 * caller-supplied read function, so the same code reads a file, a pipe or
 * the diagnostics socket of a live session.
 *
 * Memory is bounded whatever the input size: one block is held at a time
 * (its size is capped), the stack table holds only the stacks of the current
 * sequence-point region (capped), and the metadata table, the only thing that
 * grows with the stream, is capped too. Events are delivered without any
 * per-event allocation. See docs/internals/nettrace.md.
 *
 * The format itself, as implemented, is described in docs/formats/nettrace.md.
 */
#ifndef CLRTAP_NETTRACE_NETTRACE_H
#define CLRTAP_NETTRACE_NETTRACE_H

#include "common/compat.h"
#include "common/strbuf.h"

/* ------------------------------------------------------------------------ */
/* Input                                                                     */

/*
 * Reads up to len bytes into buf. Returns the byte count (> 0), 0 at end of
 * stream, or a negative errno (-EINTR is retried by the reader; anything else
 * is returned to the caller of nt_reader_run). It may return fewer bytes than
 * asked; the reader only asks again when it needs more. It should block until
 * at least one byte is available (a live socket works as is).
 */
typedef ssize_t (*nt_read_fn)(void *ctx, void *buf, size_t len);

/* Ready-made read function for a file descriptor; ctx is a pointer to the int fd. */
ssize_t nt_read_fd(void *ctx, void *buf, size_t len);

/* Ready-made read function over a memory buffer (used by tests and the fuzzer). */
struct nt_membuf {
	const uint8_t *p;
	size_t len;
	size_t off;
};
ssize_t nt_read_mem(void *ctx, void *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* Limits                                                                    */

struct nt_limits {
	size_t max_block;          /* bytes of one block's content (default 64 MiB) */
	uint32_t max_metadata;     /* metadata records kept (default 65536) */
	size_t max_metadata_bytes; /* memory for all metadata records (default 64 MiB) */
	uint32_t max_fields;       /* fields in one record, nested ones included (default 4096) */
	uint32_t max_stacks;       /* stacks in one sequence-point region (default 1M) */
	size_t max_stack_bytes;    /* IP bytes held for one region (default 128 MiB) */
	uint32_t max_frames;       /* frames in one stack (default 4096) */
	uint32_t max_threads;      /* threads tracked for drop detection (default 65536) */
	uint32_t max_labels;       /* V6 label lists in one region (default 1M) */
	/* The time-order window (see nt_reader_run): events held at once. */
	uint32_t max_order_events; /* default 1M */
	size_t max_order_bytes;    /* payload and header bytes held (default 256 MiB) */
};

/* Fills l with the defaults above. */
void nt_limits_default(struct nt_limits *l);

/* ------------------------------------------------------------------------ */
/* Trace header                                                              */

struct nt_trace_info {
	unsigned format;      /* 5 for the FastSerialization stream (V4/V5), 6 for V6 */
	uint16_t sync_utc[8]; /* SYSTEMTIME: year, month, weekday, day, h, m, s, ms (UTC) */
	int64_t sync_qpc;     /* timestamp (same clock as events) at sync_utc */
	int64_t qpc_freq;     /* timestamp ticks per second */
	uint32_t pointer_size;
	uint32_t pid;
	uint32_t ncpu;
	uint32_t sampling_ns; /* sample-profiler interval in ns (ExpectedCPUSamplingRate) */
};
/* sync_utc as Unix time in ns; 0 when absent or out of range (a damaged header). */
int64_t nt_sync_unix_ns(const struct nt_trace_info *ti);

/* ------------------------------------------------------------------------ */
/* Metadata                                                                  */

/* Field type codes (System.TypeCode values plus EventPipe's additions). */
enum nt_type {
	NT_T_OBJECT = 1,
	NT_T_BOOL32 = 3,
	NT_T_CHAR16 = 4,
	NT_T_I8 = 5,
	NT_T_U8 = 6,
	NT_T_I16 = 7,
	NT_T_U16 = 8,
	NT_T_I32 = 9,
	NT_T_U32 = 10,
	NT_T_I64 = 11,
	NT_T_U64 = 12,
	NT_T_F32 = 13,
	NT_T_F64 = 14,
	NT_T_DECIMAL = 15,
	NT_T_DATETIME = 16,
	NT_T_GUID = 17,
	NT_T_STRING = 18, /* NUL-terminated UTF-16 */
	NT_T_ARRAY = 19,  /* u16 count, then elements */
	NT_T_VARINT = 20, /* V6 */
	NT_T_VARUINT = 21,
	NT_T_FIXEDARRAY = 22,
	NT_T_CHAR8 = 23,
	NT_T_RELLOC = 24,
	NT_T_DATALOC = 25,
	NT_T_BOOL8 = 26,
};

struct nt_field {
	const char *name;              /* UTF-8 */
	uint8_t type;                  /* enum nt_type */
	uint16_t nfields;              /* NT_T_OBJECT: number of members */
	uint16_t fixed_count;          /* NT_T_FIXEDARRAY: element count */
	const struct nt_field *fields; /* NT_T_OBJECT: the members */
	const struct nt_field *elem;   /* arrays, RelLoc, DataLoc: the element type */
};

/* Well-known providers, resolved once per metadata record. */
enum nt_provider {
	NT_PROV_OTHER = 0,
	NT_PROV_RUNTIME,        /* Microsoft-Windows-DotNETRuntime */
	NT_PROV_RUNDOWN,        /* Microsoft-Windows-DotNETRuntimeRundown */
	NT_PROV_PRIVATE,        /* Microsoft-Windows-DotNETRuntimePrivate */
	NT_PROV_SAMPLEPROFILER, /* Microsoft-DotNETCore-SampleProfiler */
	NT_PROV_EVENTPIPE,      /* Microsoft-DotNETCore-EventPipe */
};

#define NT_META_HAS_OPCODE 0x1 /* opcode is valid */
#define NT_META_FIELDS_V2 0x2  /* the field list came from a V5 V2Params tag */
#define NT_META_BAD_FIELDS 0x4 /* the field list could not be parsed; nfields is 0 */

struct nt_metadata {
	uint32_t id;
	enum nt_provider provider_kind;
	const char *provider; /* UTF-8 */
	uint32_t event_id;
	const char *event_name; /* UTF-8; "" for native runtime events */
	uint64_t keywords;
	uint32_t version;
	uint32_t level;
	uint8_t opcode;
	uint8_t flags; /* NT_META_* */
	uint32_t nfields;
	const struct nt_field *fields; /* top-level fields in payload order */
};

/* ------------------------------------------------------------------------ */
/* Events                                                                    */

struct nt_event {
	const struct nt_metadata *meta;
	uint64_t offset;            /* stream offset of the event blob */
	int64_t timestamp;          /* same clock as nt_trace_info.sync_qpc */
	uint64_t thread_id;         /* OS thread the event is about */
	uint64_t capture_thread_id; /* OS thread that wrote it (sequence numbers belong to it) */
	uint64_t thread_index;      /* V6 only: thread table index of thread_id */
	uint32_t seq;
	uint32_t proc;
	uint32_t stack_id;
	uint32_t label_list; /* V6 only */
	bool sorted;         /* every later event has a timestamp >= this one */
	const uint8_t *activity_id; /* 16 bytes */
	const uint8_t *related_activity_id;
	const uint8_t *payload; /* not aligned; valid during the callback only */
	uint32_t payload_len;
	const uint64_t *stack; /* nframes IPs, leaf first; valid during the callback only */
	uint32_t nframes;
	uint32_t pointer_size;
};

/*
 * Callbacks. Each returns 0 to go on, a positive value to stop nt_reader_run
 * (which then returns NT_STOPPED; calling it again resumes with the next
 * item), or a negative errno to abort the run with that error.
 * Any of them may be NULL.
 */
struct nt_handlers {
	int (*event)(void *ctx, const struct nt_event *ev);
	/* A new metadata record (before any event that uses it). */
	int (*metadata)(void *ctx, const struct nt_metadata *m);
	/* A sequence point (after every event before it); stacks seen before it
	 * are forgotten after it. */
	int (*seqpoint)(void *ctx, int64_t timestamp);
	/* Every event as it arrives, in stream order, before it waits in the
	 * time-order window: for decisions that cannot wait (stopping a live
	 * session); analyses use event. The event is valid during the call. */
	int (*arrival)(void *ctx, const struct nt_event *ev);
};

#define NT_STOPPED 1

/* ------------------------------------------------------------------------ */
/* Reader                                                                    */

struct nt_reader;

/*
 * Creates a reader pulling from read(ctx). limits may be NULL (defaults).
 * Nothing is read until nt_reader_run. Free with nt_reader_free.
 */
int nt_reader_new(struct nt_reader **out, nt_read_fn read, void *ctx,
		  const struct nt_limits *limits);
void nt_reader_free(struct nt_reader *r);

/*
 * Reads the prologue and trace header if not done yet (nt_reader_run does it
 * too). Returns 0, -EBADMSG (not a nettrace stream / damaged header), -ENOTSUP
 * (a future major format version) or the read function's error.
 */
int nt_reader_open(struct nt_reader *r);

/*
 * Time order: EventPipe writes one thread's events, then the next thread's,
 * so the stream is not in time order across threads. The reader holds events
 * in a window and hands them to h->event oldest first (stream order among
 * equal timestamps), as far as the format allows: an event marked sorted
 * lets everything up to its timestamp out, a sequence point and the end of
 * the stream (or damage) let everything out. Past max_order_events /
 * max_order_bytes the oldest held events go out early and the order is no
 * longer guaranteed (nt_stats.order_forced, order_late say so).
 *
 * Reads and delivers events until the end-of-stream marker (returns 0), a
 * callback asks to stop (returns NT_STOPPED), or an error (negative errno).
 * On damaged input every event before the damage is delivered first, then
 * -EBADMSG is returned and nt_reader_error() gives the stream offset.
 * Caps: -EFBIG when a block or table would pass its limit.
 * After an error the reader stays in that error (calls return it again).
 */
int nt_reader_run(struct nt_reader *r, const struct nt_handlers *h, void *ctx);

/*
 * Lets every event held in the time-order window out now, to h, whatever the
 * stream may still bring (see live.h, prompt): the order of what is then
 * delivered against later events is not guaranteed. May be called from
 * inside the read function (the reader is then between blocks or loading
 * one). Returns 0, or what a handler returned to stop; then nothing more is
 * delivered, ever.
 */
int nt_reader_release(struct nt_reader *r, const struct nt_handlers *h, void *ctx);

/* Valid after nt_reader_open succeeded. */
const struct nt_trace_info *nt_reader_info(const struct nt_reader *r);

/*
 * The sticky error (0 if none); *offset (may be NULL) gets the stream offset
 * of the damaged object (block header, event blob, or where the stream was
 * cut), and *msg (may be NULL) a short description owned by the reader (valid
 * until nt_reader_free).
 */
int nt_reader_error(const struct nt_reader *r, uint64_t *offset, const char **msg);

/* Bytes consumed from the read function so far (the stream offset). */
uint64_t nt_reader_offset(const struct nt_reader *r);

/*
 * Looks up a metadata record by id; NULL when unknown (or flushed by a V6
 * sequence point). Records are owned by the reader and valid until
 * nt_reader_free, also after a flush.
 */
const struct nt_metadata *nt_reader_metadata(const struct nt_reader *r, uint32_t id);

struct nt_stats {
	uint64_t events;   /* delivered */
	uint64_t blocks;   /* all kinds */
	uint64_t metadata; /* records parsed */
	uint64_t stacks;   /* stack entries read */
	uint64_t seqpoints;
	uint64_t dropped; /* events lost, all threads (see nt_reader_thread) */
	uint64_t order_forced; /* events let out early: the time-order window was full */
	uint64_t order_late;   /* events delivered with a timestamp older than one before */
	uint64_t order_held_max; /* most bytes the window held at once */
};
void nt_reader_stats(const struct nt_reader *r, struct nt_stats *st);

/* Per-thread sequence tracking (drop detection). */
struct nt_thread_stats {
	uint64_t thread_id; /* capture thread (V6: OS thread id when known, else index) */
	uint32_t last_seq;  /* highest sequence number seen or implied */
	uint64_t events;    /* events delivered for this capture thread */
	uint64_t dropped;   /* events lost (sequence gaps + sequence-point lower bounds) */
};
/*
 * Number of threads tracked: every capture thread seen in events or sequence
 * points (V6: every Thread-block entry too). Threads that lost nothing may be
 * forgotten when the table reaches max_threads.
 */
size_t nt_reader_nthreads(const struct nt_reader *r);
/* Fills *out for thread number i (0 <= i < nthreads); -ENOENT past the end. */
int nt_reader_thread(const struct nt_reader *r, size_t i, struct nt_thread_stats *out);

/* ------------------------------------------------------------------------ */
/* Payload helpers                                                           */

/* A UTF-16LE string inside a payload (no terminator counted), not copied. */
struct nt_str16 {
	const uint8_t *p;
	uint32_t nunits;
};
/* Appends s as UTF-8 to out. */
int nt_str16_utf8(const struct nt_str16 *s, struct strbuf *out);
/* Compares s with the ASCII/UTF-8 string z; true when equal. */
bool nt_str16_eq(const struct nt_str16 *s, const char *z);

/* ------------------------------------------------------------------------ */
/* Runtime event decoders                                                    */
/*
 * Each takes the payload (p, len), the metadata version of the event and the
 * trace pointer size, fills *out (zeroed first; fields absent in older
 * versions stay 0) and returns 0, or -EBADMSG when the payload is shorter than
 * the version requires. Strings are views into the payload (nt_str16).
 * Event ids are for provider Microsoft-Windows-DotNETRuntime unless noted.
 */

/* Runtime 143 MethodLoadVerbose, 144 MethodUnloadVerbose; Rundown 143
 * MethodDCStartVerbose, 144 MethodDCEndVerbose. */
struct nt_method_load {
	uint64_t method_id, module_id, start;
	uint32_t size, token, flags;
	struct nt_str16 ns, name, sig; /* MethodNamespace, MethodName, MethodSignature */
	uint16_t clr_instance;
	uint64_t rejit_id;
};
int nt_decode_method_load(const void *p, size_t len, unsigned version, unsigned ptr_size,
			  struct nt_method_load *out);

/* Runtime 152 ModuleLoad, 153 ModuleUnload; Rundown 153 ModuleDCStart, 154 ModuleDCEnd. */
struct nt_module_load {
	uint64_t module_id, assembly_id;
	uint32_t flags;
	struct nt_str16 il_path, native_path;
	uint16_t clr_instance;
	uint8_t managed_pdb_sig[16];
	uint32_t managed_pdb_age;
	struct nt_str16 managed_pdb_path;
	uint8_t native_pdb_sig[16];
	uint32_t native_pdb_age;
	struct nt_str16 native_pdb_path;
};
int nt_decode_module_load(const void *p, size_t len, unsigned version, unsigned ptr_size,
			  struct nt_module_load *out);

/* 1 GCStart */
struct nt_gc_start {
	uint32_t count, depth, reason, type;
	uint16_t clr_instance;
	uint64_t client_seq;
};
int nt_decode_gc_start(const void *p, size_t len, unsigned version, unsigned ptr_size,
		       struct nt_gc_start *out);

/* 2 GCEnd */
struct nt_gc_end {
	uint32_t count, depth;
	uint16_t clr_instance;
};
int nt_decode_gc_end(const void *p, size_t len, unsigned version, unsigned ptr_size,
		     struct nt_gc_end *out);

/* 4 GCHeapStats */
struct nt_gc_heap_stats {
	uint64_t gen_size[5];     /* gen0, gen1, gen2, LOH, POH (v2) */
	uint64_t promoted[5];     /* same order */
	uint64_t finalization_promoted_size, finalization_promoted_count;
	uint32_t pinned_objects, sink_blocks, gc_handles;
	uint16_t clr_instance;
};
int nt_decode_gc_heap_stats(const void *p, size_t len, unsigned version, unsigned ptr_size,
			    struct nt_gc_heap_stats *out);

/* 10 GCAllocationTick (v0-v4) */
struct nt_gc_alloc_tick {
	uint32_t amount, kind; /* kind: 0 small, 1 large, 2 pinned */
	uint16_t clr_instance;
	uint64_t amount64, type_id;
	struct nt_str16 type_name;
	uint32_t heap_index;
	uint64_t address;     /* v3+ */
	uint64_t object_size; /* v4+ */
};
int nt_decode_gc_alloc_tick(const void *p, size_t len, unsigned version, unsigned ptr_size,
			    struct nt_gc_alloc_tick *out);

/* 35 GCTriggered */
struct nt_gc_triggered {
	uint32_t reason;
	uint16_t clr_instance;
};
int nt_decode_gc_triggered(const void *p, size_t len, unsigned version, unsigned ptr_size,
			   struct nt_gc_triggered *out);

/* 9 SuspendEEBegin (v1: reason, count), 3 RestartEEEnd (only clr_instance). */
struct nt_suspend_ee {
	uint32_t reason, count;
	uint16_t clr_instance;
};
int nt_decode_suspend_ee(const void *p, size_t len, unsigned version, unsigned ptr_size,
			 struct nt_suspend_ee *out);
int nt_decode_restart_ee(const void *p, size_t len, unsigned version, unsigned ptr_size,
			 struct nt_suspend_ee *out);

/* 80 ExceptionThrown_V1 */
struct nt_exception {
	struct nt_str16 type, message;
	uint64_t eip;
	uint32_t hresult;
	uint16_t flags;
	uint16_t clr_instance;
};
int nt_decode_exception(const void *p, size_t len, unsigned version, unsigned ptr_size,
			struct nt_exception *out);

/* 81 ContentionStart (v1, v2), 91 ContentionStop (v0, v1) */
struct nt_contention {
	uint8_t flags; /* 0 managed, 1 native */
	uint16_t clr_instance;
	uint64_t lock_id, object_id, owner_thread_id; /* start v2 */
	double duration_ns;                           /* stop v1 */
};
int nt_decode_contention_start(const void *p, size_t len, unsigned version, unsigned ptr_size,
			       struct nt_contention *out);
int nt_decode_contention_stop(const void *p, size_t len, unsigned version, unsigned ptr_size,
			      struct nt_contention *out);

/* 50 ThreadPoolWorkerThreadStart, 51 ...Stop, 57 ...Wait */
struct nt_tp_worker {
	uint32_t active, retired;
	uint16_t clr_instance;
};
int nt_decode_tp_worker(const void *p, size_t len, unsigned version, unsigned ptr_size,
			struct nt_tp_worker *out);

/* 54 ThreadPoolWorkerThreadAdjustmentSample, 55 ...Adjustment */
struct nt_tp_adjust {
	double throughput; /* Sample: Throughput; Adjustment: AverageThroughput */
	uint32_t new_count, reason;
	uint16_t clr_instance;
};
int nt_decode_tp_adjust_sample(const void *p, size_t len, unsigned version, unsigned ptr_size,
			       struct nt_tp_adjust *out);
int nt_decode_tp_adjust(const void *p, size_t len, unsigned version, unsigned ptr_size,
			struct nt_tp_adjust *out);

/* Microsoft-DotNETCore-SampleProfiler 0 ThreadSample */
enum nt_sample_type { NT_SAMPLE_ERROR = 0, NT_SAMPLE_EXTERNAL = 1, NT_SAMPLE_MANAGED = 2 };
int nt_decode_thread_sample(const void *p, size_t len, unsigned version, unsigned ptr_size,
			    uint32_t *type);

/* ------------------------------------------------------------------------ */
/* Self-describing events (EventSource)                                      */

enum nt_value_kind {
	NT_V_SCALAR,       /* a leaf value */
	NT_V_OBJECT_BEGIN, /* members follow, then NT_V_OBJECT_END */
	NT_V_OBJECT_END,
	NT_V_ARRAY_BEGIN, /* count elements follow, then NT_V_ARRAY_END */
	NT_V_ARRAY_END,
};

struct nt_value {
	enum nt_value_kind kind;
	const struct nt_field *field; /* name and type (for elements: the element type) */
	unsigned depth;               /* 0 for top-level fields */
	int32_t index;                /* position inside the enclosing array, -1 otherwise */
	uint32_t count;               /* NT_V_ARRAY_BEGIN: element count */
	/* NT_V_SCALAR: */
	int64_t i;  /* signed integers, bools, chars */
	uint64_t u; /* unsigned integers (also set for signed ones, as bits) */
	double f;   /* F32/F64 */
	struct nt_str16 str;    /* NT_T_STRING */
	const uint8_t *raw;     /* the value's bytes in the payload */
	uint32_t raw_len;
};

/*
 * Walks payload (p, len) along m's field list and calls fn for each value in
 * order. fn returns 0 to go on, anything else stops the walk and is returned.
 * Returns 0, -EBADMSG (payload shorter than the fields, or nesting deeper than
 * 32), -ENOTSUP (a field type whose size cannot be known), or fn's value.
 */
typedef int (*nt_value_fn)(void *ctx, const struct nt_value *v);
int nt_payload_walk(const struct nt_metadata *m, const void *p, size_t len, unsigned ptr_size,
		    nt_value_fn fn, void *ctx);

/* Appends a printable rendering of a scalar value to out. */
int nt_value_format(const struct nt_value *v, struct strbuf *out);

/* An EventCounters payload (event named "EventCounters", field "Payload"). */
struct nt_counter {
	const char *name;         /* e.g. "cpu-usage" */
	const char *display_name; /* e.g. "CPU Usage" */
	const char *counter_type; /* "Mean" or "Sum" */
	const char *units;        /* DisplayUnits, may be "" */
	bool is_rate;             /* true for "Sum" counters: value is Increment */
	double value;             /* Mean (Mean counters) or Increment (Sum counters) */
	double min, max, interval_sec;
	int32_t count;
};
/*
 * Decodes an EventCounters event. The strings live in sb (reset first), so
 * they are valid until sb is changed. Returns 0, -ENOENT (not an
 * EventCounters event / no Name field) or -EBADMSG.
 */
int nt_counter_decode(const struct nt_metadata *m, const void *p, size_t len, unsigned ptr_size,
		      struct nt_counter *out, struct strbuf *sb);

/* ------------------------------------------------------------------------ */
/* Method symbolizer                                                         */

struct nt_methods;

/*
 * max_entries caps the number of code ranges (0: default 4M) and
 * max_name_bytes the memory for names (0: default 256 MiB); names are
 * interned (one copy per distinct name) in pooled 64 KiB chunks.
 * Free with nt_methods_free.
 */
int nt_methods_new(struct nt_methods **out, size_t max_entries, size_t max_name_bytes);
void nt_methods_free(struct nt_methods *m);

/*
 * Feeds an event: runtime MethodLoadVerbose (143), rundown MethodDCStartVerbose
 * (143) and MethodDCEndVerbose (144) are recorded; returns 1 when recorded,
 * 0 for any other event, or a negative errno (-EBADMSG payload, -EFBIG cap,
 * -ENOMEM).
 */
int nt_methods_add_event(struct nt_methods *m, const struct nt_event *ev);

/* Records one range [start, start+size) named name (copied). */
int nt_methods_add(struct nt_methods *m, uint64_t start, uint32_t size, const char *name);

/*
 * Resolves an IP to "Namespace.Type::Method" or NULL (the string lives as
 * long as m). For return addresses (every frame but the leaf) pass ip - 1.
 * When ranges overlap (code memory reused, or a range recorded again), the
 * range recorded last wins. Additions go to a short unsorted tail that
 * lookups scan; it is merged into the sorted table when it grows, so
 * interleaving additions and lookups stays cheap.
 */
const char *nt_methods_lookup(struct nt_methods *m, uint64_t ip);
/* The runtime's own name of the method at ip (lookup gives the shown one, common/clrname.h). */
const char *nt_methods_lookup_raw(struct nt_methods *m, uint64_t ip);
/* Distinct ranges recorded (an exact duplicate counts once). */
size_t nt_methods_count(struct nt_methods *m);
/* The raw name of a method for which match(raw, ctx) holds (a linear scan,
 * the latest recorded first), or NULL. */
const char *nt_methods_find_raw(struct nt_methods *m, bool (*match)(const char *raw, const void *ctx),
				const void *ctx);


/* ------------------------------------------------------------------------ */
/* GC heap snapshot bulk events (lib/nettrace/gcheap.c)                      */
/*
 * Keywords GC 0x1, Type 0x80000, GCHeapDump 0x100000, GCHeapCollect 0x800000.
 * Each bulk event holds Count values packed back to back after a small
 * header. The decoders check that every value fits in the payload and return
 * a view; the _get functions read value i (i < count) of a checked view.
 */
enum nt_gcheap_event {
	NT_EV_BULK_TYPE = 15,
	NT_EV_GC_BULK_ROOT_EDGE = 16,
	NT_EV_GC_BULK_ROOT_CWT = 17,
	NT_EV_GC_BULK_NODE = 18,
	NT_EV_GC_BULK_EDGE = 19,
	NT_EV_GC_BULK_ROOT_STATIC = 38,
};

struct nt_gc_bulk {
	uint32_t index; /* block number in its stream (not in BulkType / RootStaticVar) */
	uint32_t count;
	uint16_t clr_instance;
	const uint8_t *values; /* the packed values */
	size_t values_len;
	unsigned ptr_size;
	unsigned stride; /* bytes per value; 0 for variable-size values */
};

/* 18 GCBulkNode: {ptr Address; u64 Size; u64 TypeID; u64 EdgeCount} */
struct nt_gc_node {
	uint64_t address, size, type_id, edge_count;
};
/* 16 GCBulkRootEdge: {ptr RootedNodeAddress; u8 GCRootKind; u32 GCRootFlag; ptr GCRootID} */
enum nt_gc_root_kind { NT_ROOT_STACK = 0, NT_ROOT_FINALIZER = 1, NT_ROOT_HANDLE = 2,
		       NT_ROOT_OLDER = 3, NT_ROOT_SIZEDREF = 4, NT_ROOT_OVERFLOW = 5 };
#define NT_ROOT_FLAG_PINNING 0x1u
#define NT_ROOT_FLAG_WEAKREF 0x2u
#define NT_ROOT_FLAG_INTERIOR 0x4u
#define NT_ROOT_FLAG_REFCOUNTED 0x8u
struct nt_gc_root {
	uint64_t address;
	uint8_t kind;
	uint32_t flags;
	uint64_t root_id;
};
/* 17 GCBulkRootConditionalWeakTableElementEdge: {ptr Key; ptr Value; ptr RootID} */
struct nt_gc_cwt {
	uint64_t key, value, root_id;
};
/* 15 BulkType: u32 Count; u16; Count x {u64 TypeID; u64 ModuleID; u32 TypeNameID;
 * u32 Flags; u8 CorElementType; str Name; u32 N; u64 TypeParameters[N]} */
struct nt_bulk_type {
	uint64_t type_id, module_id;
	uint32_t name_id, flags;
	uint8_t cor_element_type;
	struct nt_str16 name;
	uint32_t nparams;
};
/* 38 GCBulkRootStaticVar: u32 Count; u64 AppDomainID; u16; Count x {u64 GCRootID;
 * u64 ObjectID; u64 TypeID; u32 Flags; str FieldName} */
struct nt_gc_static_root {
	uint64_t root_id, object, type_id;
	uint32_t flags;
	struct nt_str16 field;
};

int nt_decode_gc_bulk_node(const void *p, size_t len, unsigned ptr_size, struct nt_gc_bulk *out);
void nt_gc_bulk_node_get(const struct nt_gc_bulk *b, uint32_t i, struct nt_gc_node *out);
/* 19 GCBulkEdge: {ptr Value; u32 ReferencingFieldID} */
int nt_decode_gc_bulk_edge(const void *p, size_t len, unsigned ptr_size, struct nt_gc_bulk *out);
uint64_t nt_gc_bulk_edge_get(const struct nt_gc_bulk *b, uint32_t i);
int nt_decode_gc_bulk_root(const void *p, size_t len, unsigned ptr_size, struct nt_gc_bulk *out);
void nt_gc_bulk_root_get(const struct nt_gc_bulk *b, uint32_t i, struct nt_gc_root *out);
int nt_decode_gc_bulk_cwt(const void *p, size_t len, unsigned ptr_size, struct nt_gc_bulk *out);
void nt_gc_bulk_cwt_get(const struct nt_gc_bulk *b, uint32_t i, struct nt_gc_cwt *out);
/*
 * Variable-size values: nt_decode_bulk_type / _gc_bulk_static_root check the
 * header; then call _next with *off = 0 until it returns 1 (no more values)
 * or -EBADMSG (a value runs past the payload). Returns 0 with *out filled.
 */
int nt_decode_bulk_type(const void *p, size_t len, unsigned ptr_size, struct nt_gc_bulk *out);
int nt_bulk_type_next(const struct nt_gc_bulk *b, size_t *off, uint32_t *i, struct nt_bulk_type *out);
int nt_decode_gc_bulk_static_root(const void *p, size_t len, unsigned ptr_size, struct nt_gc_bulk *out);
int nt_gc_bulk_static_root_next(const struct nt_gc_bulk *b, size_t *off, uint32_t *i,
				struct nt_gc_static_root *out);
/*
 * Names a sampled stack (ips leaf first, as in nt_event) into names, root
 * first, at most cap entries: return addresses looked up at ip - 1, an
 * unknown IP "[unknown]" (runs of them collapsed into one), and a leaf in
 * Thread::<PollGC> dropped (a loop stopped at its GC poll: the time is the
 * caller's). The strings live as long as m. Returns the count (0 for an
 * empty stack). Shared by `trace report/convert` and `profile --engine
 * eventpipe`, so both name the same stack the same way.
 */
size_t nt_methods_name_stack(struct nt_methods *m, const uint64_t *ips, uint32_t n,
			     const char **names, size_t cap);
/* Same, also writing for each name the index into ips it came from (idx: cap entries). */
size_t nt_methods_name_stack_idx(struct nt_methods *m, const uint64_t *ips, uint32_t n,
				 const char **names, uint32_t *idx, size_t cap);

/*
 * Whether a named sampled stack (root first, as nt_methods_name_stack gives
 * it) ends in one of the runtime's blocking waits or in an unnamed stub (a
 * P/Invoke's transition out of managed code) (lib/nettrace/waits.c): the
 * sampler suspends every managed thread each interval, and a thread
 * switching out of managed code is caught in cooperative mode and typed
 * "managed" although it was not running managed code there.
 */
bool nt_stack_waits(const char *const *names, size_t n);


/* ------------------------------------------------------------------------ */
/* Async flow (asyncflow.c): which async method each thread runs and which  */
/* ones await it, from System.Threading.Tasks.TplEventSource (keywords 0x2A) */

#define NT_AF_PROVIDER "System.Threading.Tasks.TplEventSource"
#define NT_AF_KEYWORDS 0x2Aull /* Tasks, AsyncCausalityOperation, AsyncCausalitySynchronousWork */
#define NT_AF_MAX_TASKS (1u << 20)  /* live async operations tracked */
#define NT_AF_MAX_THREADS 65536u
#define NT_AF_MAX_NAMES 16384u      /* distinct state machine names */

struct nt_asyncflow;
struct nt_asyncflow_stats {
	uint64_t events;          /* TPL events seen */
	uint64_t tasks_dropped;   /* operations not tracked: the table was full */
	uint64_t threads_dropped; /* threads not tracked */
	uint64_t names_dropped;   /* names not kept */
	uint64_t live_tasks;
	uint64_t requests;        /* Hosting RequestStart events */
	uint64_t requests_other;  /* ... past the cap of distinct paths: "(other paths)" */
};
int nt_asyncflow_new(struct nt_asyncflow **out);
void nt_asyncflow_free(struct nt_asyncflow *a);
/* Feeds one event (in time order); false when it is not a TPL event. */
bool nt_asyncflow_event(struct nt_asyncflow *a, const struct nt_event *ev);
/*
 * The logical chain of thread tid now: names[0] the state machine type of the
 * async method it runs (e.g. "<Price>d__4", as the runtime names the
 * operation), names[1] the one awaiting it, and so on outward, at most cap.
 * A name is NULL for an operation begun before the session. 0: the thread
 * runs no resumed async method.
 */
size_t nt_asyncflow_chain(struct nt_asyncflow *a, uint32_t tid, const char **names, size_t cap);
void nt_asyncflow_stats(const struct nt_asyncflow *a, struct nt_asyncflow_stats *st);
/* Names a task begun before the session as it resumes: fn gets the
 * TraceSynchronousWorkBegin event (with its stack) and writes the state
 * machine's name ("<Run>d__1") into out, or returns false. */
typedef bool (*nt_asyncflow_namer_fn)(void *ctx, const struct nt_event *ev, char *out, size_t len);
void nt_asyncflow_set_namer(struct nt_asyncflow *a, nt_asyncflow_namer_fn fn, void *ctx);
/* The state machine named in an AsyncStateMachineBox method's raw name. */
bool nt_asyncflow_box_machine(const char *raw, char *out, size_t len);
/*
 * The ASP.NET Core request thread tid serves now ("GET /api/x", from
 * Microsoft.AspNetCore.Hosting RequestStart, fed to nt_asyncflow_event too),
 * or NULL: its own RequestStart..RequestStop while it runs the work that
 * began it, else the request its innermost resumed task was created for
 * (tasks inherit the request of the thread that created them).
 */
const char *nt_asyncflow_request(struct nt_asyncflow *a, uint32_t tid);
#define NT_AF_HOSTING_PROVIDER "Microsoft.AspNetCore.Hosting"
/* Whether raw (a runtime method name) is the MoveNext of the state machine
 * the operation name op ("<Price>d__4", "<Get>d__3`1") names. */
bool nt_asyncflow_is_movenext(const char *raw, const void *op);

#endif
