/* SPDX-License-Identifier: MIT */
/*
 * callbacks.h - the 98 slots of ICorProfilerCallback..ICorProfilerCallback11
 * in vtable order: CB(slot, name, parameters after This).
 *
 * Slots marked OWN are implemented in profiler.c; every other slot gets a
 * generated method with the exact parameter list that returns S_OK.
 * The three slots whose out-parameter the runtime reads are OWN.
 */
#ifndef CLRTAP_PROFILER_CALLBACKS_H
#define CLRTAP_PROFILER_CALLBACKS_H

#define CALLBACK_SLOTS(CB, CB0, OWN, OWN0) \
	/* 0 QueryInterface, 1 AddRef, 2 Release: written by hand */ \
	CB(3, Initialize, void *info_unk) \
	OWN0(4, Shutdown) \
	CB(5, AppDomainCreationStarted, ID_T ad) \
	CB(6, AppDomainCreationFinished, ID_T ad, HRESULT hr) \
	CB(7, AppDomainShutdownStarted, ID_T ad) \
	CB(8, AppDomainShutdownFinished, ID_T ad, HRESULT hr) \
	CB(9, AssemblyLoadStarted, ID_T as) \
	CB(10, AssemblyLoadFinished, ID_T as, HRESULT hr) \
	CB(11, AssemblyUnloadStarted, ID_T as) \
	CB(12, AssemblyUnloadFinished, ID_T as, HRESULT hr) \
	CB(13, ModuleLoadStarted, ID_T mod) \
	OWN(14, ModuleLoadFinished, ID_T mod, HRESULT hr) \
	CB(15, ModuleUnloadStarted, ID_T mod) \
	CB(16, ModuleUnloadFinished, ID_T mod, HRESULT hr) \
	CB(17, ModuleAttachedToAssembly, ID_T mod, ID_T as) \
	CB(18, ClassLoadStarted, ID_T cls) \
	CB(19, ClassLoadFinished, ID_T cls, HRESULT hr) \
	CB(20, ClassUnloadStarted, ID_T cls) \
	CB(21, ClassUnloadFinished, ID_T cls, HRESULT hr) \
	CB(22, FunctionUnloadStarted, ID_T fn) \
	CB(23, JITCompilationStarted, ID_T fn, BOOL safe) \
	OWN(24, JITCompilationFinished, ID_T fn, HRESULT hr, BOOL safe) \
	OWN(25, JITCachedFunctionSearchStarted, ID_T fn, BOOL *use_cached) \
	CB(26, JITCachedFunctionSearchFinished, ID_T fn, uint32_t result) \
	CB(27, JITFunctionPitched, ID_T fn) \
	OWN(28, JITInlining, ID_T caller, ID_T callee, BOOL *should_inline) \
	OWN(29, ThreadCreated, ID_T th) \
	CB(30, ThreadDestroyed, ID_T th) \
	CB(31, ThreadAssignedToOSThread, ID_T th, DWORD os_tid) \
	CB0(32, RemotingClientInvocationStarted) \
	CB(33, RemotingClientSendingMessage, struct guid *cookie, BOOL async) \
	CB(34, RemotingClientReceivingReply, struct guid *cookie, BOOL async) \
	CB0(35, RemotingClientInvocationFinished) \
	CB(36, RemotingServerReceivingMessage, struct guid *cookie, BOOL async) \
	CB0(37, RemotingServerInvocationStarted) \
	CB0(38, RemotingServerInvocationReturned) \
	CB(39, RemotingServerSendingReply, struct guid *cookie, BOOL async) \
	CB(40, UnmanagedToManagedTransition, ID_T fn, uint32_t reason) \
	CB(41, ManagedToUnmanagedTransition, ID_T fn, uint32_t reason) \
	CB(42, RuntimeSuspendStarted, uint32_t reason) \
	CB0(43, RuntimeSuspendFinished) \
	CB0(44, RuntimeSuspendAborted) \
	CB0(45, RuntimeResumeStarted) \
	CB0(46, RuntimeResumeFinished) \
	CB(47, RuntimeThreadSuspended, ID_T th) \
	CB(48, RuntimeThreadResumed, ID_T th) \
	CB(49, MovedReferences, ULONG n, ID_T *old_start, ID_T *new_start, ULONG *len) \
	CB(50, ObjectAllocated, ID_T obj, ID_T cls) \
	CB(51, ObjectsAllocatedByClass, ULONG n, ID_T *classes, ULONG *counts) \
	CB(52, ObjectReferences, ID_T obj, ID_T cls, ULONG n, ID_T *refs) \
	CB(53, RootReferences, ULONG n, ID_T *roots) \
	OWN(54, ExceptionThrown, ID_T obj) \
	CB(55, ExceptionSearchFunctionEnter, ID_T fn) \
	CB0(56, ExceptionSearchFunctionLeave) \
	CB(57, ExceptionSearchFilterEnter, ID_T fn) \
	CB0(58, ExceptionSearchFilterLeave) \
	CB(59, ExceptionSearchCatcherFound, ID_T fn) \
	CB(60, ExceptionOSHandlerEnter, UINT_PTR unused) \
	CB(61, ExceptionOSHandlerLeave, UINT_PTR unused) \
	CB(62, ExceptionUnwindFunctionEnter, ID_T fn) \
	CB0(63, ExceptionUnwindFunctionLeave) \
	CB(64, ExceptionUnwindFinallyEnter, ID_T fn) \
	CB0(65, ExceptionUnwindFinallyLeave) \
	CB(66, ExceptionCatcherEnter, ID_T fn, ID_T obj) \
	CB0(67, ExceptionCatcherLeave) \
	CB(68, COMClassicVTableCreated, ID_T cls, const struct guid *iid, void *vtable, ULONG nslots) \
	CB(69, COMClassicVTableDestroyed, ID_T cls, const struct guid *iid, void *vtable) \
	CB0(70, ExceptionCLRCatcherFound) \
	CB0(71, ExceptionCLRCatcherExecute) \
	CB(72, ThreadNameChanged, ID_T th, ULONG cch, WCHAR *name) \
	CB(73, GarbageCollectionStarted, int ngen, BOOL *collected, uint32_t reason) \
	CB(74, SurvivingReferences, ULONG n, ID_T *start, ULONG *len) \
	CB0(75, GarbageCollectionFinished) \
	CB(76, FinalizeableObjectQueued, DWORD flags, ID_T obj) \
	CB(77, RootReferences2, ULONG n, ID_T *roots, uint32_t *kinds, uint32_t *flags, \
	   UINT_PTR *ids) \
	CB(78, HandleCreated, ID_T handle, ID_T obj) \
	CB(79, HandleDestroyed, ID_T handle) \
	OWN(80, InitializeForAttach, void *info_unk, void *client_data, UINT cb_client_data) \
	OWN0(81, ProfilerAttachComplete) \
	OWN0(82, ProfilerDetachSucceeded) \
	CB(83, ReJITCompilationStarted, ID_T fn, ID_T rejit, BOOL safe) \
	OWN(84, GetReJITParameters, ID_T mod, mdToken method, void *function_control) \
	CB(85, ReJITCompilationFinished, ID_T fn, ID_T rejit, HRESULT hr, BOOL safe) \
	OWN(86, ReJITError, ID_T mod, mdToken method, ID_T fn, HRESULT hr) \
	CB(87, MovedReferences2, ULONG n, ID_T *old_start, ID_T *new_start, SIZE_T *len) \
	CB(88, SurvivingReferences2, ULONG n, ID_T *start, SIZE_T *len) \
	CB(89, ConditionalWeakTableElementReferences, ULONG n, ID_T *keys, ID_T *values, \
	   ID_T *ids) \
	CB(90, GetAssemblyReferences, const WCHAR *path, void *provider) \
	CB(91, ModuleInMemorySymbolsUpdated, ID_T mod) \
	CB(92, DynamicMethodJITCompilationStarted, ID_T fn, BOOL safe, const uint8_t *il, \
	   ULONG cb_il) \
	CB(93, DynamicMethodJITCompilationFinished, ID_T fn, HRESULT hr, BOOL safe) \
	CB(94, DynamicMethodUnloaded, ID_T fn) \
	CB(95, EventPipeEventDelivered, ID_T provider, DWORD id, DWORD version, ULONG cb_meta, \
	   const uint8_t *meta, ULONG cb_data, const uint8_t *data, const struct guid *activity, \
	   const struct guid *related, ID_T thread, ULONG nframes, UINT_PTR *frames) \
	CB(96, EventPipeProviderCreated, ID_T provider) \
	OWN(97, LoadAsNotificationOnly, BOOL *notification_only)

#define CALLBACK_NSLOTS 98

#endif
