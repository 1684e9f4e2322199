/* SPDX-License-Identifier: MIT */
/*
 * agent_proto.h - what clrtap and libclrtap-profiler agree on: class ids,
 * the EventPipe provider, its events and keywords, the client-data config.
 * Plain defines only: the profiler (built alone, for glibc and musl)
 * includes this file too. docs/formats/profiler-events.md describes it.
 */
#ifndef CLRTAP_AGENT_PROTO_H
#define CLRTAP_AGENT_PROTO_H

/* 2: Flushed (the answer to a session whose filter data says clrtap=flush) */
#define PRF_PROTOCOL 2

/* Class ids {c1a7a9e0-7a11-4c1b-9e11-c17a90000001} (main) and
 * {c1a7a9e1-7a11-4c1b-9e11-c17a90000002} (notification-only). */
#define PRF_CLSID_MAIN_D1 0xc1a7a9e0u
#define PRF_CLSID_NOTIFY_D1 0xc1a7a9e1u
#define PRF_CLSID_D2 0x7a11u
#define PRF_CLSID_D3 0x4c1bu
#define PRF_CLSID_D4_MAIN { 0x9e, 0x11, 0xc1, 0x7a, 0x90, 0x00, 0x00, 0x01 }
#define PRF_CLSID_D4_NOTIFY { 0x9e, 0x11, 0xc1, 0x7a, 0x90, 0x00, 0x00, 0x02 }

#define PRF_PROVIDER_NAME "Clrtap-Profiler"
#define PRF_PROVIDER_NAME16 u"Clrtap-Profiler"

/* Keywords. A session with CONTROL owns the profiler's life: when the last
 * such session ends, the profiler detaches. STATUS only asks for Status. */
#define PRF_KW_CONTROL 0x1ull
#define PRF_KW_STATUS 0x2ull
#define PRF_KW_MODULES 0x4ull
#define PRF_KW_PROBES 0x8ull
#define PRF_KW_CALLS 0x10ull
#define PRF_KW_NATMEM 0x20ull

/* Event ids. */
#define PRF_EV_HELLO 1
#define PRF_EV_STATUS 2
#define PRF_EV_MODULE 3
#define PRF_EV_DETACHING 4
#define PRF_EV_PROBE_INSTALLED 5
#define PRF_EV_PROBE_COUNT 6
#define PRF_EV_CALL 7
#define PRF_EV_FLUSHED 8 /* everything before the flush request is written */
#define PRF_EV_CALL_STACK 9 /* a Call whose event carries the thread's managed stack */
#define PRF_EV_NATMEM 10 /* native-allocation hooks in place: where their tables are */
#define PRF_EV_MAX 10

/* Call event: kinds of the argument and return slots (4 bits each). */
#define PRF_K_NONE 0   /* not recorded (this, structs, classes other than string) */
#define PRF_K_INT 1    /* signed integer, sign-extended */
#define PRF_K_UINT 2   /* unsigned integer */
#define PRF_K_FLOAT 3  /* float32/float64 as float64 bits */
#define PRF_K_STRING 4 /* in Strings (UTF-16, U+001F between args, U+001E before the return) */
#define PRF_K_BOOL 5
#define PRF_K_CHAR 6   /* a UTF-16 code unit */
#define PRF_K_VOID 7   /* return slot only */
#define PRF_K_NULL 8   /* a null string */
#define PRF_MAX_ARGS 8

#define PRF_MODE_MAIN 0
#define PRF_MODE_NOTIFICATION 1

/* Features (config "feat=", Hello/Status "Features"). */
#define PRF_FEAT_MODULES 0x1u    /* ModuleLoad events */
#define PRF_FEAT_JIT 0x2u        /* count JIT compilations */
#define PRF_FEAT_EXCEPTIONS 0x4u /* count exceptions thrown */
#define PRF_FEAT_THREADS 0x8u    /* count threads created */
#define PRF_FEAT_REJIT 0x10u     /* ReJIT probes (main mode only; no detach afterwards) */
#define PRF_FEAT_ARGS 0x20u      /* probes record arguments, return value, latency */
#define PRF_FEAT_NATMEM 0x40u     /* sampled native allocations (config "natmem=<mean bytes>") */
#define PRF_FEAT_ALL 0x7fu
#define PRF_FEAT_DEFAULT 0xfu

/* Status "State" values. */
#define PRF_STATE_ACTIVE 1
#define PRF_STATE_DETACHING 2
#define PRF_STATE_DORMANT 5 /* ReJIT was enabled: probes reverted, cannot detach */

/* Detaching "Reason" values. */
#define PRF_DETACH_SESSION_ENDED 1 /* the CONTROL session ended (stopped or reader gone) */
#define PRF_DETACH_NO_SESSION 2    /* no CONTROL session came within the wait */

#define PRF_CONFIG_MAX 2048 /* client data bytes */
#define PRF_SPEC_MAX 256    /* one probe spec "Ns.Type::Method(int32,...)" */
#define PRF_MAX_SPECS 8
#define PRF_MAX_PROBES 64   /* methods probed at once */
#define PRF_PATH_MAX 1024  /* module path units */
#define PRF_TICK_MS 50     /* the profiler thread's poll interval */

#endif
