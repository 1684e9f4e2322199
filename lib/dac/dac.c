/* SPDX-License-Identifier: MIT */
/*
 * dac.c - the runtime's DAC over a core file: the data target (a COM object
 * in C: a vtable of sysv functions, as the PAL-built DAC calls them) and the
 * few interface calls clrtap makes. Interface layouts, method orders and
 * GUIDs are the runtime's published ones (sospriv.idl, xclrdata.idl,
 * clrdata.idl, dacprivate.h: frozen, append-only).
 */
#include "common/compat.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "common/strbuf.h"
#include "common/strparse.h"
#include "common/utf16.h"
#include "core/core.h"
#include "dac/dac.h"

typedef int32_t HRESULT;
typedef uint16_t WCHAR;
#define S_OK 0
#define S_FALSE 1
#define E_NOTIMPL ((HRESULT)0x80004001)
#define E_NOINTERFACE ((HRESULT)0x80004002)
#define E_FAIL ((HRESULT)0x80004005)
#define E_INVALIDARG ((HRESULT)0x80070057)
#define HR_FAILED(h) ((h) < 0)

struct guid {
	uint32_t d1;
	uint16_t d2, d3;
	uint8_t d4[8];
};

static const struct guid IID_IUnknown = { 0x00000000, 0x0000, 0x0000, { 0xc0, 0, 0, 0, 0, 0, 0, 0x46 } };
static const struct guid IID_ICLRDataTarget = { 0x3e11ccee, 0xd08b, 0x43e5, { 0xaf, 0x01, 0x32, 0x71, 0x7a, 0x64, 0xda, 0x03 } };
static const struct guid IID_IXCLRDataProcess = { 0x5c552ab6, 0xfc09, 0x4cb3, { 0x8e, 0x36, 0x22, 0xfa, 0x03, 0xc7, 0x98, 0xb7 } };
static const struct guid IID_ISOSDacInterface = { 0x436f00f2, 0xb42a, 0x4b9f, { 0x87, 0x0c, 0xe7, 0x3d, 0xb6, 0x6a, 0xe9, 0x30 } };
static const struct guid IID_ISOSDacInterface2 = { 0xa16026ec, 0x96f4, 0x40ba, { 0x87, 0xfb, 0x55, 0x75, 0x98, 0x6f, 0xb7, 0xaf } };
static const struct guid IID_ISOSDacInterface14 = { 0x9aa22aca, 0x6dc6, 0x4a0c, { 0xb4, 0xe0, 0x70, 0xd2, 0x41, 0x6b, 0x98, 0x37 } };
static const struct guid IID_ISOSDacInterface8 = { 0xc12f35a9, 0xe55c, 0x4520, { 0xa8, 0x94, 0xb3, 0xdc, 0x51, 0x65, 0xdf, 0xce } };

/* ----- a COM object as the DAC sees it: a pointer to a table of functions ----- */

/* The function in slot idx of obj's vtable, as type t. */
#define VFN(obj, idx, t) ((t)(((void (*const *const *)(void))(obj))[0][idx]))
#define COM_RELEASE(obj) \
	do { \
		if (obj) \
			VFN(obj, 2, uint32_t(*)(void *))(obj); \
	} while (0)

/* the call shapes used here: p pointer, a 64-bit address, u 32-bit value */
typedef HRESULT (*fn_p)(void *, void *);
typedef HRESULT (*fn_gp)(void *, const struct guid *, void **);
typedef HRESULT (*fn_ap)(void *, uint64_t, void *);
typedef HRESULT (*fn_up)(void *, uint32_t, void *);
typedef HRESULT (*fn_upp)(void *, uint32_t, void *, uint32_t *);
typedef HRESULT (*fn_aupp)(void *, uint64_t, uint32_t, void *, uint32_t *);
typedef HRESULT (*fn_md)(void *, uint64_t, uint64_t, void *, uint32_t, void *, void *);
typedef HRESULT (*fn_ctx)(void *, uint32_t, uint32_t, uint32_t *, void *);
typedef HRESULT (*fn_0)(void *);
typedef HRESULT (*fn_req)(void *, uint32_t, uint32_t, void *, uint32_t, void *);

/* vtable slots (IUnknown takes 0..2) */
enum {
	SOS_GetThreadStoreData = 3,
	SOS_GetAppDomainStoreData = 4,
	SOS_GetAppDomainList = 5,
	SOS_GetAssemblyList = 9,
	SOS_GetModuleData = 13,
	SOS_TraverseModuleMap = 14,
	SOS_GetAssemblyModuleList = 15,
	SOS_GetThreadData = 17,
	SOS_GetMethodDescData = 20,
	SOS_GetMethodDescPtrFromIP = 21,
	SOS_GetMethodDescName = 22,
	SOS_GetMethodDescPtrFromFrame = 23,
	SOS_GetObjectStringData = 34,
	SOS_GetMethodTableName = 36,
	SOS_GetMethodTableData = 37,
	SOS_GetMethodTableFieldData = 39,
	SOS_GetFieldDescData = 42,
	SOS_GetGCHeapData = 46,
	SOS_GetGCHeapList = 47,
	SOS_GetGCHeapDetails = 48,
	SOS_GetGCHeapStaticData = 49,
	SOS_GetHeapSegmentData = 50,
	SOS_GetHandleEnum = 61,
	SOS_GetUsefulGlobals = 70,
	SOS_GetStackReferences = 78,
	SOS2_GetObjectExceptionData = 3,
	SOS14_GetStaticBaseAddress = 3,
	SOS8_GetNumberGenerations = 3,
	SOS8_GetGenerationTable = 4,
	SOS8_GetGenerationTableSvr = 6,
	XP_GetTaskByOSThreadID = 7,
	XT_CreateStackWalk = 11,
	XSW_GetContext = 3,
	XSW_Next = 5,
	XSW_GetFrameType = 7,
	XSW_Request = 9,
	ENUM_GetCount = 5,
	ENUM_Next = 6,
};

#define DACSTACKPRIV_REQUEST_FRAME_DATA 0xf0000000u
#define CLRDATA_SIMPFRAME_MANAGED_METHOD 0x2
#define IMAGE_FILE_MACHINE_AMD64 0x8664
#define IMAGE_FILE_MACHINE_ARM64 0xaa64

/* The x86_64 CONTEXT (winnt.h layout, as the PAL defines it). */
#define AMD64_CONTEXT_SIZE 0x4d0
#define AMD64_CONTEXT_FLAGS 0x30
#define AMD64_CONTEXT_ALL 0x10001f
#define AMD64_RAX 0x78
#define AMD64_RSP 0x98
#define AMD64_RBP 0xa0
#define AMD64_RIP 0xf8

/* dacprivate.h structures (64-bit layout; MSVC packing = natural on x86_64). */
struct DacpThreadStoreData {
	int32_t threadCount, unstartedThreadCount, backgroundThreadCount, pendingThreadCount,
		deadThreadCount;
	uint64_t firstThread, finalizerThread, gcThread;
	uint32_t fHostConfig;
};
struct DacpThreadData {
	uint32_t corThreadId, osThreadId;
	int32_t state;
	uint32_t preemptiveGCDisabled;
	uint64_t allocContextPtr, allocContextLimit, context, domain, pFrame;
	uint32_t lockCount;
	uint64_t firstNestedException, teb, fiberData, lastThrownObjectHandle, nextThread;
};
struct DacpReJitData {
	uint64_t rejitID;
	int32_t flags;
	uint64_t NativeCodeAddr;
};
struct DacpMethodDescData {
	int32_t bHasNativeCode, bIsDynamic;
	uint16_t wSlotNumber;
	uint64_t NativeCodeAddr, AddressOfNativeCodeSlot, MethodDescPtr, MethodTablePtr, ModulePtr;
	uint32_t MDToken;
	uint64_t GCInfo, GCStressCodeCopy, managedDynamicMethodObject, requestedIP;
	struct DacpReJitData rejitDataCurrent, rejitDataRequested;
	uint32_t cJittedRejitVersions;
};
struct DacpMethodTableData {
	int32_t bIsFree;
	uint64_t Module, Class, ParentMethodTable;
	uint16_t wNumInterfaces, wNumMethods, wNumVtableSlots, wNumVirtuals;
	uint32_t BaseSize, ComponentSize, cl, dwAttrClass;
	int32_t bIsShared, bIsDynamic, bContainsPointers;
};
struct DacpUsefulGlobalsData {
	uint64_t ArrayMethodTable, StringMethodTable, ObjectMethodTable, ExceptionMethodTable,
		FreeMethodTable;
};
struct DacpExceptionObjectData {
	uint64_t Message, InnerException, StackTrace, WatsonBuckets, StackTraceString,
		RemoteStackTraceString;
	int32_t HResult, XCode;
};
struct DacpGcHeapData {
	int32_t bServerMode, bGcStructuresValid;
	uint32_t HeapCount, g_max_generation;
};
struct DacpGenerationData {
	uint64_t start_segment, allocation_start, allocContextPtr, allocContextLimit;
};
struct DacpGcHeapDetails {
	uint64_t heapAddr, alloc_allocated, mark_array, current_c_gc_state, next_sweep_obj,
		saved_sweep_ephemeral_seg, saved_sweep_ephemeral_start,
		background_saved_lowest_address, background_saved_highest_address;
	struct DacpGenerationData generation_table[4];
	uint64_t ephemeral_heap_segment;
	uint64_t finalization_fill_pointers[7];
	uint64_t lowest_address, highest_address, card_table;
};
struct DacpHeapSegmentData {
	uint64_t segmentAddr, allocated, committed, reserved, used, mem, next, gc_heap,
		highAllocMark;
	size_t flags;
	uint64_t background_allocated;
};
struct DacpAppDomainStoreData {
	uint64_t sharedDomain, systemDomain;
	int32_t DomainCount;
};
struct DacpModuleData {
	uint64_t Address, PEAssembly, ilBase, metadataStart, metadataSize, Assembly;
	int32_t bIsReflection, bIsPEFile;
	uint64_t dwBaseClassIndex, dwModuleID;
	uint32_t dwTransientFlags;
	uint64_t TypeDefToMethodTableMap, TypeRefToMethodTableMap, MethodDefToDescMap,
		FieldDefToDescMap, MemberRefToDescMap, FileReferencesMap, ManifestModuleReferencesMap,
		LoaderAllocator, ThunkHeap, dwModuleIndex;
};
struct DacpMethodTableFieldData {
	uint16_t wNumInstanceFields, wNumStaticFields, wNumThreadStaticFields;
	uint64_t FirstField;
	uint16_t wContextStaticOffset, wContextStaticsSize;
};
struct DacpFieldDescData {
	uint32_t Type, sigType;
	uint64_t MTOfType, ModuleOfType;
	uint32_t TokenOfType, mb;
	uint64_t MTOfEnclosingClass;
	uint32_t dwOffset;
	int32_t bIsThreadLocal, bIsContextLocal, bIsStatic;
	uint64_t NextField;
};
_Static_assert(sizeof(struct DacpFieldDescData) == 64, "DacpFieldDescData");
_Static_assert(sizeof(struct DacpMethodTableFieldData) == 24, "DacpMethodTableFieldData");

struct SOSHandleData {
	uint64_t AppDomain, Handle, Secondary;
	uint32_t Type;
	int32_t StrongReference;
	uint32_t RefCount, JupiterRefCount;
	int32_t IsPegged;
};
struct SOSStackRefData {
	int32_t HasRegisterInformation, Register, Offset;
	uint64_t Address, Object;
	uint32_t Flags;
	int32_t SourceType;
	uint64_t Source, StackPointer;
};

_Static_assert(sizeof(struct DacpThreadStoreData) == 0x38, "DacpThreadStoreData");

/* ----- the data target ----- */

#define DT_MAX_READ (64u << 20) /* one ReadVirtual: the DAC never needs more */

struct data_target {
	const void *vt;
	struct dac *d;
};

struct dac {
	struct data_target dt;
	const struct core_file *core;
	void *lib;
	void *process;  /* IXCLRDataProcess */
	void *sos;      /* ISOSDacInterface */
	void *sos2, *sos8, *sos14;
	uint64_t coreclr_base;
	uint64_t failed_reads;
};

static int guid_eq(const void *a, const struct guid *b)
{
	return !memcmp(a, b, sizeof(*b));
}

static HRESULT dt_query(struct data_target *t, const void *iid, void **out)
{
	if (guid_eq(iid, &IID_IUnknown) || guid_eq(iid, &IID_ICLRDataTarget)) {
		*out = t;
		return S_OK;
	}
	*out = NULL;
	return E_NOINTERFACE;
}

static uint32_t dt_addref(struct data_target *t)
{
	(void)t;
	return 1; /* lives as long as struct dac */
}

static HRESULT dt_machine(struct data_target *t, uint32_t *m)
{
	*m = core_info(t->d->core)->machine == EM_AARCH64 ? IMAGE_FILE_MACHINE_ARM64
							  : IMAGE_FILE_MACHINE_AMD64;
	return S_OK;
}

static HRESULT dt_ptrsize(struct data_target *t, uint32_t *n)
{
	(void)t;
	*n = 8;
	return S_OK;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* The lowest mapping of a file whose base name is name, mapped from offset 0. */
static uint64_t image_base(const struct core_file *c, const char *name)
{
	const struct core_mapping *m;
	uint64_t best = 0;
	size_t i;

	for (i = 0; (m = core_mapping(c, i)); i++)
		if (m->file_offset == 0 && m->path && !strcmp(base_name(m->path), name) &&
		    (!best || m->start < best))
			best = m->start;
	return best;
}

static HRESULT dt_imagebase(struct data_target *t, const WCHAR *wname, uint64_t *base)
{
	char name[256];
	size_t i;

	for (i = 0; i < sizeof(name) - 1 && wname[i]; i++)
		name[i] = wname[i] < 0x80 ? (char)wname[i] : '?';
	name[i] = '\0';
	*base = image_base(t->d->core, base_name(name));
	return *base ? S_OK : E_FAIL;
}

static ssize_t dac_read_core(const struct core_file *c, uint64_t addr, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = core_read(c, addr + done, (char *)buf + done, len - done);

		if (r <= 0)
			break;
		done += (size_t)r;
	}
	return done ? (ssize_t)done : -EFAULT;
}

ssize_t dac_read(const struct dac *d, uint64_t addr, void *buf, size_t len)
{
	return dac_read_core(d->core, addr, buf, len);
}

static HRESULT dt_read(struct data_target *t, uint64_t addr, void *buf, uint32_t len, uint32_t *got)
{
	ssize_t r;

	if (len > DT_MAX_READ)
		len = DT_MAX_READ;
	r = dac_read(t->d, addr, buf, len);
	if (r <= 0) {
		t->d->failed_reads++;
		if (got)
			*got = 0;
		return E_FAIL;
	}
	if (got)
		*got = (uint32_t)r;
	return S_OK;
}

static HRESULT dt_notimpl(void)
{
	return E_NOTIMPL;
}

static const struct core_thread *find_thread(const struct core_file *c, uint32_t tid)
{
	const struct core_thread *th;
	size_t i;

	for (i = 0; (th = core_thread(c, i)); i++)
		if ((uint32_t)th->tid == tid)
			return th;
	return NULL;
}

static void put64(uint8_t *ctx, size_t off, uint64_t v)
{
	memcpy(ctx + off, &v, 8);
}

static HRESULT dt_context(struct data_target *t, uint32_t tid, uint32_t flags, uint32_t size,
			  uint8_t *ctx)
{
	/* user_regs_struct order -> CONTEXT offsets (rax..r15, then rip) */
	static const struct {
		uint8_t gpr;
		uint16_t off;
	} map[] = {
		{ 10, 0x78 }, { 11, 0x80 }, { 12, 0x88 }, { 5, 0x90 }, { 19, 0x98 }, { 4, 0xa0 },
		{ 13, 0xa8 }, { 14, 0xb0 }, { 9, 0xb8 }, { 8, 0xc0 }, { 7, 0xc8 }, { 6, 0xd0 },
		{ 3, 0xd8 }, { 2, 0xe0 }, { 1, 0xe8 }, { 0, 0xf0 }, { 16, 0xf8 },
	};
	const struct core_thread *th = find_thread(t->d->core, tid);
	uint32_t f = AMD64_CONTEXT_ALL & (flags | 0x100000);
	uint32_t eflags;
	uint16_t cs, ss;
	size_t i;

	if (!th || th->regs.machine != EM_X86_64 || th->regs.ngpr < 21)
		return E_FAIL;
	if (size < AMD64_CONTEXT_SIZE)
		return E_INVALIDARG;
	memset(ctx, 0, AMD64_CONTEXT_SIZE);
	memcpy(ctx + AMD64_CONTEXT_FLAGS, &f, 4);
	for (i = 0; i < ARRAY_SIZE(map); i++)
		put64(ctx, map[i].off, th->regs.gpr[map[i].gpr]);
	cs = (uint16_t)th->regs.gpr[17];
	ss = (uint16_t)th->regs.gpr[20];
	eflags = (uint32_t)th->regs.gpr[18];
	memcpy(ctx + 0x38, &cs, 2);
	memcpy(ctx + 0x42, &ss, 2);
	memcpy(ctx + 0x44, &eflags, 4);
	return S_OK;
}

/* ICLRDataTarget: IUnknown, then GetMachineType .. Request (clrdata.idl order). */
static const struct {
	HRESULT (*query)(struct data_target *, const void *, void **);
	uint32_t (*addref)(struct data_target *), (*release)(struct data_target *);
	HRESULT (*machine)(struct data_target *, uint32_t *);
	HRESULT (*ptrsize)(struct data_target *, uint32_t *);
	HRESULT (*imagebase)(struct data_target *, const WCHAR *, uint64_t *);
	HRESULT (*read)(struct data_target *, uint64_t, void *, uint32_t, uint32_t *);
	HRESULT (*write)(void), (*get_tls)(void), (*set_tls)(void), (*cur_thread)(void);
	HRESULT (*context)(struct data_target *, uint32_t, uint32_t, uint32_t, uint8_t *);
	HRESULT (*set_context)(void), (*request)(void);
} dt_vtable = {
	dt_query, dt_addref, dt_addref, dt_machine, dt_ptrsize, dt_imagebase, dt_read,
	dt_notimpl, dt_notimpl, dt_notimpl, dt_notimpl, dt_context, dt_notimpl, dt_notimpl,
};

/* ----- finding the DAC ----- */

/* The GNU build id of an ELF image from its first page (memory of the dump or a file's head). */
static int elf_build_id(const uint8_t *p, size_t len, char *hex, size_t cap)
{
	const Elf64_Ehdr *eh = (const void *)p;
	size_t i;

	if (len < sizeof(*eh) || memcmp(p, ELFMAG, SELFMAG) || p[EI_CLASS] != ELFCLASS64)
		return -EINVAL;
	if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff > len ||
	    (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > len - eh->e_phoff)
		return -EINVAL;
	for (i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr ph;
		uint64_t off;

		memcpy(&ph, p + eh->e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_NOTE || ph.p_offset > len || ph.p_filesz > len - ph.p_offset)
			continue;
		for (off = ph.p_offset; off + 12 <= ph.p_offset + ph.p_filesz;) {
			uint32_t nsz, dsz, type;
			uint64_t desc, next;

			memcpy(&nsz, p + off, 4);
			memcpy(&dsz, p + off + 4, 4);
			memcpy(&type, p + off + 8, 4);
			desc = off + 12 + (((uint64_t)nsz + 3) & ~3ull);
			next = desc + (((uint64_t)dsz + 3) & ~3ull);
			if (next > ph.p_offset + ph.p_filesz)
				break;
			if (type == NT_GNU_BUILD_ID && nsz == 4 && !memcmp(p + off + 12, "GNU", 4) &&
			    dsz > 0 && dsz <= 64 && cap > 2u * dsz) {
				size_t k;

				for (k = 0; k < dsz; k++)
					snprintf(hex + 2 * k, 3, "%02x", p[desc + k]);
				return 0;
			}
			off = next;
		}
	}
	return -ENOENT;
}

static int file_build_id(const char *path, char *hex, size_t cap)
{
	uint8_t head[8192];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	if (fd < 0)
		return -errno;
	n = pread(fd, head, sizeof(head), 0);
	close(fd);
	if (n <= 0)
		return -EIO;
	return elf_build_id(head, (size_t)n, hex, cap);
}

/*
 * A DAC is loaded into clrtap: only from a regular file owned by root or by
 * us, writable by no one else (a dump names directories; it must not get
 * clrtap to load a library someone else planted).
 */
static bool safe_lib(const char *path)
{
	struct stat st;

	if (lstat(path, &st) || !S_ISREG(st.st_mode))
		return false;
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return false;
	return !(st.st_mode & (S_IWGRP | S_IWOTH));
}

/* dir/libcoreclr.so has the build id; dir/libmscordaccore.so exists: fill f. */
static bool try_dir(const char *dir, const char *want, struct dac_found *f)
{
	char p[PATH_MAX], id[sizeof(f->build_id)];

	if ((size_t)snprintf(p, sizeof(p), "%s/libcoreclr.so", dir) >= sizeof(p))
		return false;
	if (file_build_id(p, id, sizeof(id)) || strcmp(id, want))
		return false;
	if ((size_t)snprintf(p, sizeof(p), "%s/libmscordaccore.so", dir) >= sizeof(p) || !safe_lib(p))
		return false;
	ct_strlcpy(f->path, p, sizeof(f->path));
	ct_strlcpy(f->version, base_name(dir), sizeof(f->version));
	return true;
}

/* Every <root>/<version><tail> directory. */
static bool try_versions(const char *root, const char *tail, const char *want, struct dac_found *f)
{
	struct dirent *de;
	DIR *dir = opendir(root);
	bool ok = false;

	if (!dir)
		return false;
	while (!ok && (de = readdir(dir))) {
		char p[PATH_MAX];

		if (de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s%s", root, de->d_name, tail) >= sizeof(p))
			continue;
		if (try_dir(p, want, f)) {
			ct_strlcpy(f->version, de->d_name, sizeof(f->version));
			ok = true;
		}
	}
	closedir(dir);
	return ok;
}

static bool looks_like_version(const char *v)
{
	return v[0] >= '0' && v[0] <= '9' && strchr(v, '.');
}

/* The installed runtimes and the NuGet runtime packs, for a libcoreclr.so with build id want. */
static bool find_installed(const char *want, struct dac_found *f)
{
	const char *home = getenv("HOME"), *droot = getenv("DOTNET_ROOT");
	char p[PATH_MAX];
	size_t i;

	if (droot && droot[0] == '/' &&
	    (size_t)snprintf(p, sizeof(p), "%s/shared/Microsoft.NETCore.App", droot) < sizeof(p) &&
	    try_versions(p, "", want, f))
		return true;
	if (try_versions("/usr/share/dotnet/shared/Microsoft.NETCore.App", "", want, f) ||
	    try_versions("/usr/lib/dotnet/shared/Microsoft.NETCore.App", "", want, f))
		return true;
	if (home && home[0] == '/') {
		static const char *const rids[] = { "linux-x64", "linux-arm64", "linux-musl-x64" };

		for (i = 0; i < ARRAY_SIZE(rids); i++) {
			char tail[96];

			snprintf(tail, sizeof(tail), "/runtimes/%s/native", rids[i]);
			if ((size_t)snprintf(p, sizeof(p), "%s/.nuget/packages/microsoft.netcore.app.runtime.%s",
					     home, rids[i]) < sizeof(p) &&
			    try_versions(p, tail, want, f))
				return true;
		}
	}
	return false;
}

int dac_find(const struct core_file *c, const char *user_dac, struct dac_found *f, char *why,
	     size_t whylen)
{
	const struct core_mapping *m;
	uint8_t head[4096];
	size_t i;
	ssize_t n;

	memset(f, 0, sizeof(*f));
	f->coreclr_base = image_base(c, "libcoreclr.so");
	if (!f->coreclr_base) {
		snprintf(why, whylen, "no libcoreclr.so mapped in the dump: not a .NET (CoreCLR) process");
		return -ENODATA;
	}
	for (i = 0; (m = core_mapping(c, i)); i++)
		if (m->start == f->coreclr_base) {
			const char *s = strrchr(m->path, '/');

			if (s && (size_t)(s - m->path) < sizeof(f->runtime_dir))
				memcpy(f->runtime_dir, m->path, (size_t)(s - m->path));
			break;
		}
	n = dac_read_core(c, f->coreclr_base, head, sizeof(head));
	if (n <= 0 || elf_build_id(head, (size_t)n, f->build_id, sizeof(f->build_id)))
		f->build_id[0] = '\0';

	if (user_dac) {
		if (!safe_lib(user_dac)) {
			snprintf(why, whylen,
				 "--dac %s: not a regular file owned by root or you and writable only by its owner",
				 user_dac);
			return -ENOPKG;
		}
		ct_strlcpy(f->path, user_dac, sizeof(f->path));
		f->how = "--dac";
		return 0;
	}
	if (!f->build_id[0]) {
		snprintf(why, whylen,
			 "the dump holds no build id for its libcoreclr.so (%s): give the matching libmscordaccore.so with --dac",
			 f->runtime_dir[0] ? f->runtime_dir : "path unknown");
		return -ENOPKG;
	}
	f->how = "build id";
	if (f->runtime_dir[0] == '/' && try_dir(f->runtime_dir, f->build_id, f)) {
		struct dac_found named;

		/* a self-contained app's directory is no version: name it by an installed twin */
		if (!looks_like_version(f->version) && find_installed(f->build_id, &named))
			ct_strlcpy(f->version, named.version, sizeof(f->version));
		return 0;
	}
	if (find_installed(f->build_id, f))
		return 0;
	snprintf(why, whylen,
		 "no libmscordaccore.so on this host matches the dump's runtime (%s, libcoreclr.so build id %s): install that runtime or give its DAC with --dac",
		 f->runtime_dir[0] ? f->runtime_dir : "path unknown", f->build_id);
	return -ENOPKG;
}

/* ----- loading ----- */

int dac_open(const struct core_file *c, const struct dac_found *f, struct dac **out, char *why,
	     size_t whylen)
{
	HRESULT (*create)(const struct guid *, void *, void **);
	int32_t (*dllmain)(void *, uint32_t, void *);
	struct dac *d;
	HRESULT hr;

	*out = NULL;
	if (core_info(c)->machine != EM_X86_64) {
		snprintf(why, whylen, "only x86_64 dumps are analysed (this one is machine %u)",
			 core_info(c)->machine);
		return -EPROTONOSUPPORT;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->dt.vt = &dt_vtable;
	d->dt.d = d;
	d->core = c;
	d->coreclr_base = f->coreclr_base;
	d->lib = dlopen(f->path, RTLD_NOW | RTLD_LOCAL);
	if (!d->lib) {
		snprintf(why, whylen, "cannot load %s: %s", f->path, dlerror());
		free(d);
		return -ELIBBAD;
	}
	*(void **)&dllmain = dlsym(d->lib, "DllMain");
	*(void **)&create = dlsym(d->lib, "CLRDataCreateInstance");
	if (!create) {
		snprintf(why, whylen, "%s has no CLRDataCreateInstance: not a DAC", f->path);
		dac_close(d);
		return -ELIBBAD;
	}
	if (dllmain)
		dllmain(d->lib, 1 /* DLL_PROCESS_ATTACH: starts the DAC's PAL */, NULL);
	hr = create(&IID_IXCLRDataProcess, &d->dt, &d->process);
	if (HR_FAILED(hr) || !d->process) {
		snprintf(why, whylen, "the DAC refused the dump (CLRDataCreateInstance: 0x%08x)",
			 (unsigned)hr);
		d->process = NULL;
		dac_close(d);
		return -EPROTO;
	}
	hr = VFN(d->process, 0, fn_gp)(d->process, &IID_ISOSDacInterface, &d->sos);
	if (HR_FAILED(hr) || !d->sos) {
		snprintf(why, whylen, "the DAC has no ISOSDacInterface (0x%08x)", (unsigned)hr);
		d->sos = NULL;
		dac_close(d);
		return -EPROTO;
	}
	if (HR_FAILED(VFN(d->process, 0, fn_gp)(d->process, &IID_ISOSDacInterface2, &d->sos2)))
		d->sos2 = NULL;
	if (HR_FAILED(VFN(d->process, 0, fn_gp)(d->process, &IID_ISOSDacInterface8, &d->sos8)))
		d->sos8 = NULL;
	if (HR_FAILED(VFN(d->process, 0, fn_gp)(d->process, &IID_ISOSDacInterface14, &d->sos14)))
		d->sos14 = NULL;
	*out = d;
	return 0;
}

void dac_close(struct dac *d)
{
	if (!d)
		return;
	COM_RELEASE(d->sos14);
	COM_RELEASE(d->sos8);
	COM_RELEASE(d->sos2);
	COM_RELEASE(d->sos);
	COM_RELEASE(d->process);
	/* The DAC's PAL is not made to be unloaded: the library stays mapped. */
	free(d);
}

uint64_t dac_reads_failed(const struct dac *d)
{
	return d->failed_reads;
}

/* ----- threads and stacks ----- */

#define DAC_MAX_THREADS 100000

int dac_threads(struct dac *d, struct dac_thread **out, size_t *n, size_t max)
{
	struct DacpThreadStoreData ts = { 0 };
	struct dac_thread *v;
	uint64_t t;
	size_t k = 0;

	*out = NULL;
	*n = 0;
	if (HR_FAILED(VFN(d->sos, SOS_GetThreadStoreData, fn_p)(d->sos, &ts)))
		return -EPROTO;
	if (max > DAC_MAX_THREADS)
		max = DAC_MAX_THREADS;
	v = calloc(max ? max : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (t = ts.firstThread; t && k < max;) {
		struct DacpThreadData td = { 0 };
		size_t j;

		if (HR_FAILED(VFN(d->sos, SOS_GetThreadData, fn_ap)(d->sos, t, &td)))
			break;
		for (j = 0; j < k; j++) /* a cycle in a damaged dump */
			if (v[j].addr == t)
				break;
		if (j < k)
			break;
		v[k].addr = t;
		v[k].os_tid = td.osThreadId;
		v[k].managed_id = td.corThreadId;
		v[k].state = td.state;
		v[k].alloc_ptr = td.allocContextPtr;
		v[k].alloc_limit = td.allocContextLimit;
		if (td.lastThrownObjectHandle) {
			uint64_t obj = 0;

			if (dac_read(d, td.lastThrownObjectHandle, &obj, 8) == 8)
				v[k].last_thrown = obj;
		}
		k++;
		t = td.nextThread;
	}
	*out = v;
	*n = k;
	return 0;
}

int dac_stack(struct dac *d, uint32_t os_tid, struct dac_frame **out, size_t *n, size_t max)
{
	void *task = NULL, *sw = NULL;
	struct dac_frame *v;
	size_t k = 0;
	HRESULT hr;

	*out = NULL;
	*n = 0;
	v = calloc(max ? max : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	hr = VFN(d->process, XP_GetTaskByOSThreadID, fn_up)(d->process, os_tid, &task);
	if (HR_FAILED(hr) || !task) {
		*out = v;
		return 0; /* a thread with no managed task: no managed frames */
	}
	hr = VFN(task, XT_CreateStackWalk, fn_up)(task, 0xfu, &sw);
	if (!HR_FAILED(hr) && sw) {
		do {
			uint8_t ctx[AMD64_CONTEXT_SIZE];
			uint32_t got = 0;
			uint64_t ip, sp, frame = 0, md = 0;

			hr = VFN(sw, XSW_GetContext, fn_ctx)(sw, AMD64_CONTEXT_ALL, (uint32_t)sizeof(ctx),
							     &got, ctx);
			if (HR_FAILED(hr))
				break;
			memcpy(&ip, ctx + AMD64_RIP, 8);
			memcpy(&sp, ctx + AMD64_RSP, 8);
			if (HR_FAILED(VFN(sw, XSW_Request, fn_req)(sw, DACSTACKPRIV_REQUEST_FRAME_DATA, 0u, NULL,
								 8u, &frame)))
				frame = 0;
			if (frame) {
				if (HR_FAILED(VFN(d->sos, SOS_GetMethodDescPtrFromFrame, fn_ap)(d->sos, frame, &md)))
					md = 0;
			} else if (HR_FAILED(VFN(d->sos, SOS_GetMethodDescPtrFromIP, fn_ap)(d->sos, ip, &md))) {
				md = 0;
			}
			if (k && v[k - 1].ip == ip && v[k - 1].sp == sp && v[k - 1].runtime == (frame != 0) &&
			    !frame)
				break; /* no progress */
			v[k].ip = ip;
			v[k].sp = sp;
			v[k].md = md;
			v[k].runtime = frame != 0;
			k++;
			hr = VFN(sw, XSW_Next, fn_0)(sw);
		} while (k < max && hr == S_OK);
		COM_RELEASE(sw);
	}
	COM_RELEASE(task);
	*out = v;
	*n = k;
	return 0;
}

/* ----- names ----- */

/* A UTF-16 name from a DAC call into out (UTF-8). */
static int wide_to_utf8(const WCHAR *w, size_t cap_units, char *out, size_t cap)
{
	struct strbuf sb;
	size_t len = 0;
	int err;

	while (len < cap_units && w[len])
		len++;
	strbuf_init(&sb, cap);
	err = utf16le_to_utf8(&sb, (const uint8_t *)w, len, true);
	if (!err)
		err = strbuf_error(&sb);
	if (!err)
		ct_strlcpy(out, sb.buf ? sb.buf : "", cap);
	strbuf_release(&sb);
	return err;
}

#define NAME_UNITS 2048

/*
 * The runtime writes generic arguments after the whole nested name:
 * Dictionary`2+Entry[[System.String, System.Private.CoreLib],[System.Object, ...]][];
 * clrtap writes them where C# does, on the type that declares them (as ClrMD
 * and lib/heap name types): Dictionary<System.String, System.Object>+Entry[].
 */
#define GEN_MAX_ARGS 32

/* The end of the generic argument list that starts at in ("[[...]]" : in points at the first '['). */
static const char *gen_args_end(const char *in)
{
	int depth = 0;

	for (; *in; in++) {
		if (*in == '[')
			depth++;
		else if (*in == ']' && --depth == 0)
			return in + 1;
	}
	return NULL;
}

static void generic_to_csharp(const char *in, char *out, size_t cap);

/* Splits "[[A, asm],[B, asm]]" into converted args. */
static size_t gen_split(const char *p, const char *end, char args[][512], size_t max)
{
	size_t n = 0;

	p++; /* outer '[' */
	while (p < end && *p == '[' && n < max) {
		const char *q = p + 1, *stop;
		int depth = 0;
		char raw[512];
		size_t len;

		for (stop = q; stop < end; stop++) {
			if (*stop == '[')
				depth++;
			else if (*stop == ']') {
				if (!depth)
					break;
				depth--;
			} else if (*stop == ',' && !depth) {
				break;
			}
		}
		len = (size_t)(stop - q);
		if (len >= sizeof(raw))
			len = sizeof(raw) - 1;
		memcpy(raw, q, len);
		raw[len] = '\0';
		generic_to_csharp(raw, args[n++], 512);
		while (stop < end && *stop != ']') /* ", Assembly, Version=..." */
			stop++;
		p = stop + 1;
		if (p < end && *p == ',')
			p++;
	}
	return n;
}

static void generic_to_csharp(const char *in, char *out, size_t cap)
{
	char (*args)[512] = NULL;
	const char *p, *list = NULL, *list_end = NULL;
	size_t o = 0, nargs = 0, used = 0;

#define EMIT(ch) \
	do { \
		if (o + 1 < cap) \
			out[o++] = (ch); \
	} while (0)
	/* the argument list: the first "[[" */
	for (p = in; *p; p++)
		if (p[0] == '[' && p[1] == '[') {
			list = p;
			list_end = gen_args_end(p);
			break;
		}
	if (list && list_end && (args = calloc(GEN_MAX_ARGS, sizeof(*args))))
		nargs = gen_split(list, list_end - 1, args, GEN_MAX_ARGS);
	for (p = in; *p;) {
		if (list && p == list && list_end) {
			p = list_end;
			continue;
		}
		if (*p == '`' && p[1] >= '0' && p[1] <= '9') {
			size_t arity = 0, k;

			/* capped while read: a hostile "`999..." must not wrap around */
			for (p++; *p >= '0' && *p <= '9'; p++)
				if (arity <= GEN_MAX_ARGS)
					arity = arity * 10 + (size_t)(*p - '0');
			if (!args || used > nargs || arity > nargs - used)
				continue; /* an open generic type: no arguments to show */
			EMIT('<');
			for (k = 0; k < arity; k++) {
				const char *a = args[used + k];

				if (k) {
					EMIT(',');
					EMIT(' ');
				}
				for (; *a; a++)
					EMIT(*a);
			}
			EMIT('>');
			used += arity;
			continue;
		}
		EMIT(*p);
		p++;
	}
#undef EMIT
	out[o] = '\0';
	free(args);
}

void dac_type_name(const char *raw, char *out, size_t cap)
{
	if (!cap)
		return;
	generic_to_csharp(raw, out, cap);
}

int dac_build_id(const void *elf_head, size_t len, char *hex, size_t cap)
{
	return elf_build_id(elf_head, len, hex, cap);
}

int dac_mt_name(struct dac *d, uint64_t mt, char *out, size_t cap)
{
	WCHAR *w = calloc(NAME_UNITS, sizeof(*w));
	char *raw;
	uint32_t need = 0;
	int err;

	if (!w)
		return -ENOMEM;
	if (HR_FAILED(VFN(d->sos, SOS_GetMethodTableName, fn_aupp)(d->sos, mt, (uint32_t)NAME_UNITS, w, &need))) {
		free(w);
		return -EPROTO;
	}
	w[NAME_UNITS - 1] = 0;
	raw = malloc(cap);
	if (!raw) {
		free(w);
		return -ENOMEM;
	}
	err = wide_to_utf8(w, NAME_UNITS, raw, cap);
	if (!err)
		generic_to_csharp(raw, out, cap);
	free(raw);
	free(w);
	return err;
}

int dac_method_name(struct dac *d, uint64_t md, char *out, size_t cap)
{
	struct DacpMethodDescData mdd;
	char type[1024], full[2048];
	WCHAR *w;
	uint32_t need = 0;
	const char *m;
	size_t tl, ml;
	int err;

	memset(&mdd, 0, sizeof(mdd));
	if (HR_FAILED(VFN(d->sos, SOS_GetMethodDescData, fn_md)(d->sos, md, 0, &mdd, 0u, NULL, NULL)))
		return -EPROTO;
	w = calloc(NAME_UNITS, sizeof(*w));
	if (!w)
		return -ENOMEM;
	if (HR_FAILED(VFN(d->sos, SOS_GetMethodDescName, fn_aupp)(d->sos, md, (uint32_t)NAME_UNITS, w, &need))) {
		free(w);
		return -EPROTO;
	}
	w[NAME_UNITS - 1] = 0;
	err = wide_to_utf8(w, NAME_UNITS, full, sizeof(full));
	free(w);
	if (err)
		return err;
	/* full: "Type.Method(args)"; the type as GetMethodTableName writes it (raw form) */
	{
		WCHAR *tw = calloc(NAME_UNITS, sizeof(*tw));

		if (!tw)
			return -ENOMEM;
		type[0] = '\0';
		if (!HR_FAILED(VFN(d->sos, SOS_GetMethodTableName, fn_aupp)(d->sos, mdd.MethodTablePtr,
									       (uint32_t)NAME_UNITS, tw, &need))) {
			tw[NAME_UNITS - 1] = 0;
			wide_to_utf8(tw, NAME_UNITS, type, sizeof(type));
		}
		free(tw);
	}
	tl = strlen(type);
	if (tl && !strncmp(full, type, tl) && full[tl] == '.') {
		m = full + tl + 1;
	} else {
		/* the last '.' before the argument list */
		const char *paren = strchr(full, '(');
		const char *dot = NULL, *p;

		for (p = full; *p && (!paren || p < paren); p++)
			if (*p == '.' && p > full && p[-1] != '.')
				dot = p;
		if (!dot)
			return -EPROTO;
		tl = (size_t)(dot - full);
		memcpy(type, full, tl);
		type[tl] = '\0';
		m = dot + 1;
	}
	ml = strcspn(m, "([");
	{
		char t2[1024];

		generic_to_csharp(type, t2, sizeof(t2));
		if ((size_t)snprintf(out, cap, "%s::%.*s", t2, (int)ml, m) >= cap)
			return -EMSGSIZE;
	}
	return 0;
}

int dac_mt_info(struct dac *d, uint64_t mt, struct dac_mt *out)
{
	struct DacpMethodTableData t;

	memset(&t, 0, sizeof(t));
	memset(out, 0, sizeof(*out));
	if (HR_FAILED(VFN(d->sos, SOS_GetMethodTableData, fn_ap)(d->sos, mt, &t)))
		return -EPROTO;
	out->base_size = t.BaseSize;
	out->component_size = t.ComponentSize;
	out->contains_pointers = t.bContainsPointers != 0;
	out->is_free = t.bIsFree != 0;
	out->parent = t.ParentMethodTable;
	out->module = t.Module;
	out->token = t.cl;
	return 0;
}

int dac_globals(struct dac *d, struct dac_globals *out)
{
	struct DacpUsefulGlobalsData g = { 0 };

	if (HR_FAILED(VFN(d->sos, SOS_GetUsefulGlobals, fn_p)(d->sos, &g)))
		return -EPROTO;
	out->array_mt = g.ArrayMethodTable;
	out->string_mt = g.StringMethodTable;
	out->object_mt = g.ObjectMethodTable;
	out->exception_mt = g.ExceptionMethodTable;
	out->free_mt = g.FreeMethodTable;
	return 0;
}

int dac_exception(struct dac *d, uint64_t obj, struct dac_exception *out)
{
	struct DacpExceptionObjectData e = { 0 };

	memset(out, 0, sizeof(*out));
	if (!d->sos2 || HR_FAILED(VFN(d->sos2, SOS2_GetObjectExceptionData, fn_ap)(d->sos2, obj, &e)))
		return -EPROTO;
	out->message = e.Message;
	out->inner = e.InnerException;
	out->stack_trace = e.StackTrace;
	out->hresult = e.HResult;
	return 0;
}

int dac_string(struct dac *d, uint64_t obj, char *out, size_t cap)
{
	WCHAR *w = calloc(NAME_UNITS * 2, sizeof(*w));
	uint32_t need = 0;
	int err;

	if (!w)
		return -ENOMEM;
	if (HR_FAILED(VFN(d->sos, SOS_GetObjectStringData, fn_aupp)(d->sos, obj, (uint32_t)(NAME_UNITS * 2), w,
								   &need))) {
		free(w);
		return -EPROTO;
	}
	w[NAME_UNITS * 2 - 1] = 0;
	err = wide_to_utf8(w, NAME_UNITS * 2, out, cap);
	free(w);
	return err;
}

/* ----- the GC heap ----- */

static int add_chain(struct dac *d, uint64_t seg, int gen, const struct DacpGcHeapDetails *hd,
		     struct dac_segment *v, size_t *k, size_t max)
{
	size_t guard = 0;

	while (seg && *k < max && guard++ < 1000000) {
		struct DacpHeapSegmentData sd;
		size_t j;

		memset(&sd, 0, sizeof(sd));
		if (HR_FAILED(VFN(d->sos, SOS_GetHeapSegmentData, fn_ap)(d->sos, seg, &sd)))
			return -EPROTO;
		for (j = 0; j < *k; j++)
			if (v[j].mem == sd.mem)
				break;
		if (j == *k && sd.mem) {
			v[*k].mem = sd.mem;
			v[*k].end = seg == hd->ephemeral_heap_segment ? hd->alloc_allocated : sd.allocated;
			v[*k].gen = gen;
			(*k)++;
		}
		seg = sd.next;
	}
	return 0;
}

static int heap_segments(struct dac *d, uint64_t heap, bool server, struct dac_segment *v,
			 size_t *k, size_t max)
{
	struct DacpGenerationData gens[8];
	struct DacpGcHeapDetails hd;
	uint32_t ngen = 4, need = 0;
	int g, err;

	memset(&hd, 0, sizeof(hd));
	if (HR_FAILED(server ? VFN(d->sos, SOS_GetGCHeapDetails, fn_ap)(d->sos, heap, &hd)
			     : VFN(d->sos, SOS_GetGCHeapStaticData, fn_p)(d->sos, &hd)))
		return -EPROTO;
	memset(gens, 0, sizeof(gens));
	memcpy(gens, hd.generation_table, sizeof(hd.generation_table));
	if (d->sos8 && !HR_FAILED(VFN(d->sos8, SOS8_GetNumberGenerations, fn_p)(d->sos8, &ngen)) && ngen > 4 &&
	    ngen <= ARRAY_SIZE(gens)) {
		if (HR_FAILED(server ? VFN(d->sos8, SOS8_GetGenerationTableSvr, fn_aupp)(d->sos8, heap, ngen, gens, &need)
				     : VFN(d->sos8, SOS8_GetGenerationTable, fn_upp)(d->sos8, ngen, gens, &need)))
			ngen = 4;
	} else {
		ngen = 4;
	}
	/* oldest first: with segments, gen 2's chain holds the ephemeral segment too */
	for (g = (int)ngen - 1; g >= 0; g--) {
		err = add_chain(d, gens[g].start_segment, g, &hd, v, k, max);
		if (err)
			return err;
	}
	return 0;
}

int dac_segments(struct dac *d, struct dac_segment **out, size_t *n, size_t max, bool *server)
{
	struct DacpGcHeapData hd = { 0 };
	struct dac_segment *v;
	size_t k = 0;
	int err = 0;

	*out = NULL;
	*n = 0;
	if (HR_FAILED(VFN(d->sos, SOS_GetGCHeapData, fn_p)(d->sos, &hd)))
		return -EPROTO;
	if (!hd.bGcStructuresValid)
		return -EAGAIN; /* the dump was taken in the middle of a GC */
	*server = hd.bServerMode != 0;
	v = calloc(max ? max : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (!hd.bServerMode) {
		err = heap_segments(d, 0, false, v, &k, max);
	} else {
		uint64_t heaps[1024];
		uint32_t need = 0, i;

		if (hd.HeapCount > ARRAY_SIZE(heaps) ||
		    HR_FAILED(VFN(d->sos, SOS_GetGCHeapList, fn_upp)(d->sos, hd.HeapCount, heaps, &need)))
			err = -EPROTO;
		for (i = 0; !err && i < hd.HeapCount; i++)
			err = heap_segments(d, heaps[i], true, v, &k, max);
	}
	if (err) {
		free(v);
		return err;
	}
	*out = v;
	*n = k;
	return 0;
}

int dac_gen0_alloc(struct dac *d, uint64_t *ptrs, uint64_t *limits, size_t *n, size_t max)
{
	struct DacpGcHeapData hd = { 0 };
	struct DacpGcHeapDetails det;

	*n = 0;
	if (HR_FAILED(VFN(d->sos, SOS_GetGCHeapData, fn_p)(d->sos, &hd)))
		return -EPROTO;
	if (!hd.bServerMode) {
		memset(&det, 0, sizeof(det));
		if (HR_FAILED(VFN(d->sos, SOS_GetGCHeapStaticData, fn_p)(d->sos, &det)))
			return -EPROTO;
		if (max && det.generation_table[0].allocContextPtr) {
			ptrs[0] = det.generation_table[0].allocContextPtr;
			limits[0] = det.generation_table[0].allocContextLimit;
			*n = 1;
		}
	} else {
		uint64_t heaps[1024];
		uint32_t need = 0, i;

		if (hd.HeapCount > ARRAY_SIZE(heaps) ||
		    HR_FAILED(VFN(d->sos, SOS_GetGCHeapList, fn_upp)(d->sos, hd.HeapCount, heaps, &need)))
			return -EPROTO;
		for (i = 0; i < hd.HeapCount && *n < max; i++) {
			memset(&det, 0, sizeof(det));
			if (HR_FAILED(VFN(d->sos, SOS_GetGCHeapDetails, fn_ap)(d->sos, heaps[i], &det)))
				continue;
			if (det.generation_table[0].allocContextPtr) {
				ptrs[*n] = det.generation_table[0].allocContextPtr;
				limits[*n] = det.generation_table[0].allocContextLimit;
				(*n)++;
			}
		}
	}
	return 0;
}

/* ----- roots ----- */

/* A growing array of elem-byte items the DAC's enumerators fill. */
struct vec {
	void *v;
	size_t n, cap, elem, max;
};

static bool vec_push(struct vec *x, const void *item)
{
	if (x->n >= x->max)
		return false;
	if (x->n == x->cap) {
		size_t nc = x->cap ? x->cap * 2 : 256;
		void *nv = realloc(x->v, nc * x->elem);

		if (!nv)
			return false;
		x->v = nv;
		x->cap = nc;
	}
	memcpy((char *)x->v + x->n * x->elem, item, x->elem);
	x->n++;
	return true;
}

/*
 * Every element of an ISOSEnum-style enumerator (Next: count, buffer,
 * fetched), n at a time into buf, to take() until it returns false; then
 * the enumerator is released.
 */
static void enum_each(void *e, void *buf, size_t elem, uint32_t n,
		      bool (*take)(void *ctx, const void *el), void *ctx)
{
	for (;;) {
		uint32_t got = 0, i;

		if (HR_FAILED(VFN(e, ENUM_Next, fn_upp)(e, n, buf, &got)) || !got)
			break;
		for (i = 0; i < got && i < n; i++)
			if (!take(ctx, (const char *)buf + i * elem))
				goto out;
		if (got < n)
			break;
	}
out:
	COM_RELEASE(e);
}

struct handle_ctx {
	struct dac *d;
	struct vec out;
};

static bool take_handle(void *ctx, const void *el)
{
	struct handle_ctx *c = ctx;
	const struct SOSHandleData *h = el;
	struct dac_handle x = { .handle = h->Handle, .type = h->Type };

	if (dac_read(c->d, h->Handle, &x.object, 8) != 8 || !x.object)
		return true;
	return vec_push(&c->out, &x);
}

int dac_handles(struct dac *d, struct dac_handle **out, size_t *n, size_t max)
{
	struct SOSHandleData buf[256];
	struct handle_ctx c = { d, { NULL, 0, 0, sizeof(struct dac_handle), max } };
	void *e = NULL;

	*out = NULL;
	*n = 0;
	if (HR_FAILED(VFN(d->sos, SOS_GetHandleEnum, fn_p)(d->sos, &e)) || !e)
		return -EPROTO;
	enum_each(e, buf, sizeof(buf[0]), (uint32_t)ARRAY_SIZE(buf), take_handle, &c);
	*out = c.out.v;
	*n = c.out.n;
	return 0;
}

static bool take_stack_ref(void *ctx, const void *el)
{
	const struct SOSStackRefData *r = el;

	return !r->Object || vec_push(ctx, &r->Object);
}

int dac_stack_refs(struct dac *d, uint32_t os_tid, uint64_t **out, size_t *n, size_t max)
{
	struct SOSStackRefData buf[128];
	struct vec v = { NULL, 0, 0, sizeof(uint64_t), max };
	void *e = NULL;

	*out = NULL;
	*n = 0;
	if (HR_FAILED(VFN(d->sos, SOS_GetStackReferences, fn_up)(d->sos, os_tid, &e)) || !e)
		return -EPROTO;
	enum_each(e, buf, sizeof(buf[0]), (uint32_t)ARRAY_SIZE(buf), take_stack_ref, &v);
	*out = v.v;
	*n = v.n;
	return 0;
}

/* ----- statics ----- */

typedef HRESULT (*fn_asm)(void *, uint64_t, int32_t, uint64_t *, int32_t *);
typedef HRESULT (*fn_map)(void *, int32_t, uint64_t, void (*)(uint32_t, uint64_t, void *), void *);
typedef HRESULT (*fn_app)(void *, uint64_t, void *, void *);

static int add_unique(uint64_t *v, size_t *k, size_t max, uint64_t x)
{
	size_t i;

	for (i = 0; i < *k; i++)
		if (v[i] == x)
			return 0;
	if (*k >= max)
		return -E2BIG;
	v[(*k)++] = x;
	return 0;
}

#define DAC_MAX_DOMAINS 64
#define DAC_MAX_ASSEMBLIES 8192

int dac_modules(struct dac *d, uint64_t **out, size_t *n, size_t max)
{
	struct DacpAppDomainStoreData ads = { 0 };
	uint64_t domains[DAC_MAX_DOMAINS + 1], *asms = NULL, *mods;
	uint32_t need = 0;
	size_t nd = 0, i, k = 0;

	*out = NULL;
	*n = 0;
	if (HR_FAILED(VFN(d->sos, SOS_GetAppDomainStoreData, fn_p)(d->sos, &ads)))
		return -EPROTO;
	if (ads.systemDomain)
		domains[nd++] = ads.systemDomain;
	if (ads.DomainCount > 0 && ads.DomainCount <= DAC_MAX_DOMAINS &&
	    !HR_FAILED(VFN(d->sos, SOS_GetAppDomainList, fn_upp)(d->sos, (uint32_t)ads.DomainCount,
								 domains + nd, &need)))
		nd += CT_MIN(need, (uint32_t)ads.DomainCount);
	mods = calloc(max ? max : 1, sizeof(*mods));
	asms = calloc(DAC_MAX_ASSEMBLIES, sizeof(*asms));
	if (!mods || !asms) {
		free(mods);
		free(asms);
		return -ENOMEM;
	}
	for (i = 0; i < nd; i++) {
		int32_t na = 0, j;

		if (HR_FAILED(VFN(d->sos, SOS_GetAssemblyList, fn_asm)(d->sos, domains[i], DAC_MAX_ASSEMBLIES,
								   asms, &na)))
			continue;
		for (j = 0; j < na && j < DAC_MAX_ASSEMBLIES; j++) {
			uint64_t m[64];
			uint32_t nm = 0, q;

			if (HR_FAILED(VFN(d->sos, SOS_GetAssemblyModuleList, fn_aupp)(d->sos, asms[j], 64u, m,
										      &nm)))
				continue;
			for (q = 0; q < nm && q < 64; q++)
				if (m[q])
					add_unique(mods, &k, max, m[q]);
		}
	}
	free(asms);
	*out = mods;
	*n = k;
	return 0;
}

struct map_ctx {
	void (*fn)(void *ctx, uint64_t mt);
	void *ctx;
};

static void map_cb(uint32_t index, uint64_t mt, void *token)
{
	struct map_ctx *m = token;

	(void)index;
	if (mt)
		m->fn(m->ctx, mt);
}

int dac_module_types(struct dac *d, uint64_t module, void (*fn)(void *ctx, uint64_t mt), void *ctx)
{
	struct map_ctx m = { fn, ctx };

	if (HR_FAILED(VFN(d->sos, SOS_TraverseModuleMap, fn_map)(d->sos, 0 /* TYPEDEFTOMETHODTABLE */,
								 module, map_cb, &m)))
		return -EPROTO;
	return 0;
}

int dac_module_metadata(struct dac *d, uint64_t module, uint64_t *addr, uint64_t *size)
{
	struct DacpModuleData md;

	memset(&md, 0, sizeof(md));
	if (HR_FAILED(VFN(d->sos, SOS_GetModuleData, fn_ap)(d->sos, module, &md)) || !md.metadataStart)
		return -EPROTO;
	*addr = md.metadataStart;
	*size = md.metadataSize;
	return 0;
}

int dac_mt_fields(struct dac *d, uint64_t mt, struct dac_field *out, size_t *n, size_t max)
{
	struct DacpMethodTableFieldData fd;
	uint64_t f;
	size_t k = 0, total;

	*n = 0;
	memset(&fd, 0, sizeof(fd));
	if (HR_FAILED(VFN(d->sos, SOS_GetMethodTableFieldData, fn_ap)(d->sos, mt, &fd)))
		return -EPROTO;
	total = (size_t)fd.wNumInstanceFields + fd.wNumStaticFields + fd.wNumThreadStaticFields;
	for (f = fd.FirstField; f && k < max && k < total;) {
		struct DacpFieldDescData fdd;

		memset(&fdd, 0, sizeof(fdd));
		if (HR_FAILED(VFN(d->sos, SOS_GetFieldDescData, fn_ap)(d->sos, f, &fdd)))
			break;
		out[k].token = fdd.mb;
		out[k].offset = fdd.dwOffset;
		out[k].elem_type = fdd.Type;
		out[k].is_static = fdd.bIsStatic != 0;
		out[k].thread_local = fdd.bIsThreadLocal != 0;
		k++;
		if (fdd.NextField == f)
			break;
		f = fdd.NextField;
	}
	*n = k;
	return 0;
}

int dac_static_base(struct dac *d, uint64_t mt, uint64_t *gc_base)
{
	uint64_t nongc = 0;

	*gc_base = 0;
	if (!d->sos14)
		return -EOPNOTSUPP;
	if (HR_FAILED(VFN(d->sos14, SOS14_GetStaticBaseAddress, fn_app)(d->sos14, mt, &nongc, gc_base)))
		return -EPROTO;
	return *gc_base ? 0 : -ENODATA;
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
/*
 * Sanitizer builds: the DAC's handle enumerator keeps a reference to itself
 * after its last Release (the DAC's own leak, seen with GetHandleEnum):
 * LeakSanitizer is told to look away from allocations made inside the DAC.
 */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libmscordaccore.so\n";
}
#endif
#endif
