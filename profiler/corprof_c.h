/* SPDX-License-Identifier: MIT */
/*
 * corprof_c.h - the parts of the CLR Profiling API that libclrtap-profiler
 * uses, declared in plain C from the published interface facts (slot orders,
 * IIDs, PAL type widths: docs/internals/profiler.md). Written for this
 * project; no runtime header is copied.
 *
 * PAL widths on LP64: HRESULT, ULONG, DWORD, BOOL are 32-bit; every *ID is
 * pointer-sized; STDMETHODCALLTYPE is the plain C calling convention.
 */
#ifndef CLRTAP_PROFILER_CORPROF_C_H
#define CLRTAP_PROFILER_CORPROF_C_H

#include <stddef.h>
#include <stdint.h>
#include <uchar.h>

typedef int32_t HRESULT;
typedef uint32_t ULONG;
typedef uint32_t DWORD;
typedef int32_t BOOL;
typedef uint32_t UINT;
typedef uint32_t ULONG32;
typedef char16_t WCHAR;
typedef uintptr_t UINT_PTR;
typedef uintptr_t SIZE_T;
typedef uintptr_t ID_T; /* ProcessID, ModuleID, ClassID, FunctionID, ... */
typedef uint32_t mdToken;
typedef uint64_t EVENTPIPE_SESSION;

struct guid {
	uint32_t d1;
	uint16_t d2, d3;
	uint8_t d4[8];
};

#define S_OK ((HRESULT)0)
#define S_FALSE ((HRESULT)1)
#define E_NOTIMPL ((HRESULT)0x80004001u)
#define E_NOINTERFACE ((HRESULT)0x80004002u)
#define E_POINTER ((HRESULT)0x80004003u)
#define E_FAIL ((HRESULT)0x80004005u)
#define E_OUTOFMEMORY ((HRESULT)0x8007000Eu)
#define E_INVALIDARG ((HRESULT)0x80070057u)
#define CLASS_E_NOAGGREGATION ((HRESULT)0x80040110u)
#define CLASS_E_CLASSNOTAVAILABLE ((HRESULT)0x80040111u)
#define CORPROF_E_PROFILER_CANCEL_ACTIVATION ((HRESULT)0x80131375u)

/* COR_PRF_MONITOR (low mask) and COR_PRF_HIGH_MONITOR (high mask) bits used. */
#define COR_PRF_MONITOR_MODULE_LOADS 0x4u
#define COR_PRF_MONITOR_JIT_COMPILATION 0x20u
#define COR_PRF_MONITOR_EXCEPTIONS 0x40u
#define COR_PRF_MONITOR_THREADS 0x200u
#define COR_PRF_ALLOWABLE_AFTER_ATTACH 0x100502FEu
#define COR_PRF_ALLOWABLE_NOTIFICATION_PROFILER 0xB1E32B7Fu

/* EventPipe parameter types (COR_PRF_EVENTPIPE_PARAM_TYPE). */
enum {
	EP_T_INT32 = 9,
	EP_T_UINT16 = 8,
	EP_T_UINT32 = 10,
	EP_T_UINT64 = 12,
	EP_T_STRING = 18,
};

struct prf_param_desc {   /* COR_PRF_EVENTPIPE_PARAM_DESC, 16 bytes */
	uint32_t type;
	uint32_t element_type;
	const WCHAR *name;
};

struct prf_event_data {   /* COR_PRF_EVENT_DATA, 16 bytes */
	uint64_t ptr;
	uint32_t size;
	uint32_t reserved;
};

struct prf_filter_data {  /* COR_PRF_FILTER_DATA, 16 bytes */
	uint64_t ptr;
	uint32_t size;
	uint32_t type;
};

/* Info14's EventPipeProviderCallback. */
typedef void (*prf_provider_cb)(const uint8_t *source_id, uint32_t is_enabled, uint8_t level,
				uint64_t match_any_keywords, uint64_t match_all_keywords,
				struct prf_filter_data *filter_data, void *callback_data);

/*
 * ICorProfilerInfo* slots (0-based, IUnknown included). The Info object is
 * called through its vtable as an array of function pointers; each call site
 * casts the slot to the method's exact type (INFO_FN below).
 */
enum {
	INFO_QI = 0,
	INFO_RELEASE = 2,
	INFO_SET_EVENT_MASK = 16,
	INFO_GET_MODULE_INFO = 20,
	INFO_GET_MODULE_METADATA = 21,
	INFO_GET_IL_FUNCTION_BODY = 22,
	INFO_ENUM_MODULES = 66,
	INFO_REQUEST_REVERT = 74,
	INFO_APPLY_METADATA = 84,
	INFO_REQUEST_REJIT_WITH_INLINERS = 96,
	INFO_REQUEST_PROFILER_DETACH = 58,
	INFO_GET_RUNTIME_INFORMATION = 67,
	INFO_INITIALIZE_CURRENT_THREAD = 72,
	INFO_SET_EVENT_MASK2 = 82,
	INFO_EVENTPIPE_DEFINE_EVENT = 106,
	INFO_EVENTPIPE_WRITE_EVENT = 107,
	INFO_EVENTPIPE_CREATE_PROVIDER2 = 113,
};

/* Other interfaces' slots. */
enum {
	ENUM_NEXT = 7,                 /* ICorProfiler*Enum::Next(celt, elems, fetched) */
	FCTL_SET_IL_FUNCTION_BODY = 4, /* ICorProfilerFunctionControl */
	MDI_CLOSE_ENUM = 3,            /* IMetaDataImport */
	MDI_FIND_TYPEDEF_BY_NAME = 9,
	MDI_ENUM_METHODS_WITH_NAME = 19,
	MDI_GET_METHOD_PROPS = 30,
	MDI_GET_CUSTOM_ATTRIBUTE_BY_NAME = 60,
	MDE_GET_TOKEN_FROM_SIG = 23,   /* IMetaDataEmit */
};
#define COR_PRF_ENABLE_REJIT 0x40000u
#define COR_PRF_REJIT_BLOCK_INLINING 0x1u

#define INFO_FN(info, slot, type) ((type)((*(void *const *const *)(info))[(slot)]))

typedef HRESULT (*info_qi_fn)(void *self, const struct guid *riid, void **ppv);
typedef ULONG (*info_release_fn)(void *self);
typedef HRESULT (*info_set_event_mask2_fn)(void *self, DWORD low, DWORD high);
typedef HRESULT (*info_get_module_info_fn)(void *self, ID_T module, const uint8_t **base,
					   ULONG cch, ULONG *pcch, WCHAR *name, ID_T *assembly);
typedef HRESULT (*info_request_detach_fn)(void *self, DWORD expected_ms);
typedef HRESULT (*info_get_runtime_information_fn)(void *self, uint16_t *clr_instance,
						   uint32_t *runtime_type, uint16_t *major,
						   uint16_t *minor, uint16_t *build, uint16_t *qfe,
						   ULONG cch, ULONG *pcch, WCHAR *version);
typedef HRESULT (*info_initialize_current_thread_fn)(void *self);
typedef HRESULT (*info_ep_define_event_fn)(void *self, ID_T provider, const WCHAR *name,
					   uint32_t id, uint64_t keywords, uint32_t version,
					   uint32_t level, uint8_t opcode, BOOL need_stack,
					   uint32_t nparams, struct prf_param_desc *params,
					   ID_T *event);
typedef HRESULT (*info_ep_write_event_fn)(void *self, ID_T event, uint32_t ndata,
					  struct prf_event_data *data, const struct guid *activity,
					  const struct guid *related);
typedef HRESULT (*info_get_module_metadata_fn)(void *self, ID_T module, DWORD flags,
					       const struct guid *riid, void **out);
typedef HRESULT (*info_get_il_function_body_fn)(void *self, ID_T module, mdToken method,
						const uint8_t **header, ULONG *size);
typedef HRESULT (*info_enum_modules_fn)(void *self, void **penum);
typedef HRESULT (*enum_next_fn)(void *self, ULONG celt, ID_T *elems, ULONG *fetched);
typedef HRESULT (*info_request_rejit_inl_fn)(void *self, DWORD flags, ULONG n, ID_T *modules,
					     mdToken *methods);
typedef HRESULT (*info_request_revert_fn)(void *self, ULONG n, ID_T *modules, mdToken *methods,
					  HRESULT *status);
typedef HRESULT (*info_apply_metadata_fn)(void *self, ID_T module);
typedef HRESULT (*fctl_set_il_fn)(void *self, ULONG cb, const uint8_t *header);
typedef void (*mdi_close_enum_fn)(void *self, void *henum);
typedef HRESULT (*mdi_find_typedef_fn)(void *self, const WCHAR *name, mdToken enclosing,
				       mdToken *td);
typedef HRESULT (*mdi_enum_methods_with_name_fn)(void *self, void **henum, mdToken td,
						 const WCHAR *name, mdToken *methods, ULONG max,
						 ULONG *count);
typedef HRESULT (*mdi_get_method_props_fn)(void *self, mdToken method, mdToken *cls,
					   WCHAR *name, ULONG cch, ULONG *pcch, DWORD *attr,
					   const uint8_t **sig, ULONG *cbsig, ULONG *rva,
					   DWORD *impl);
typedef HRESULT (*mdi_get_custom_attribute_by_name_fn)(void *self, mdToken obj, const WCHAR *name,
						      const void **data, ULONG *cb);
typedef HRESULT (*mde_get_token_from_sig_fn)(void *self, const uint8_t *sig, ULONG cb,
					     mdToken *tok);
typedef HRESULT (*info_ep_create_provider2_fn)(void *self, const WCHAR *name,
					       prf_provider_cb cb, ID_T *provider);

#endif
