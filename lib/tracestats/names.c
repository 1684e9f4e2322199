/* SPDX-License-Identifier: MIT */
/*
 * names.c - names of the runtime's native events (their metadata carries an
 * id but no name) and of GC reasons, as the CLR event manifest spells them.
 */
#include "common/compat.h"

#include "tracestats/tracestats.h"

struct idname {
	uint16_t id;
	const char *name;
};

static const struct idname runtime_names[] = {
	{ 1, "GCStart" }, { 2, "GCEnd" }, { 3, "GCRestartEEEnd" }, { 4, "GCHeapStats" },
	{ 5, "GCCreateSegment" }, { 6, "GCFreeSegment" }, { 7, "GCRestartEEBegin" },
	{ 8, "GCSuspendEEEnd" }, { 9, "GCSuspendEEBegin" }, { 10, "GCAllocationTick" },
	{ 11, "GCCreateConcurrentThread" }, { 12, "GCTerminateConcurrentThread" },
	{ 13, "GCFinalizersEnd" }, { 14, "GCFinalizersBegin" }, { 15, "BulkType" },
	{ 16, "GCBulkRootEdge" }, { 17, "GCBulkRootConditionalWeakTableElementEdge" },
	{ 18, "GCBulkNode" }, { 19, "GCBulkEdge" }, { 20, "GCSampledObjectAllocationHigh" },
	{ 21, "GCBulkSurvivingObjectRanges" }, { 22, "GCBulkMovedObjectRanges" },
	{ 23, "GCGenerationRange" }, { 25, "GCMarkStackRoots" }, { 26, "GCMarkFinalizeQueueRoots" },
	{ 27, "GCMarkHandles" }, { 28, "GCMarkOlderGenerationRoots" }, { 29, "FinalizeObject" },
	{ 30, "SetGCHandle" }, { 31, "DestroyGCHandle" }, { 32, "GCSampledObjectAllocationLow" },
	{ 33, "PinObjectAtGCTime" }, { 35, "GCTriggered" }, { 36, "GCBulkRootCCW" },
	{ 37, "GCBulkRCW" }, { 38, "GCBulkRootStaticVar" }, { 39, "GCDynamicEvent" },
	{ 40, "WorkerThreadCreate" }, { 41, "WorkerThreadTerminate" }, { 42, "WorkerThreadRetire" },
	{ 43, "WorkerThreadUnretire" }, { 44, "IOThreadCreate" }, { 45, "IOThreadTerminate" },
	{ 46, "IOThreadRetire" }, { 47, "IOThreadUnretire" },
	{ 48, "ThreadpoolSuspensionSuspendThread" }, { 49, "ThreadpoolSuspensionResumeThread" },
	{ 50, "ThreadPoolWorkerThreadStart" }, { 51, "ThreadPoolWorkerThreadStop" },
	{ 52, "ThreadPoolWorkerThreadRetirementStart" }, { 53, "ThreadPoolWorkerThreadRetirementStop" },
	{ 54, "ThreadPoolWorkerThreadAdjustmentSample" },
	{ 55, "ThreadPoolWorkerThreadAdjustmentAdjustment" },
	{ 56, "ThreadPoolWorkerThreadAdjustmentStats" }, { 57, "ThreadPoolWorkerThreadWait" },
	{ 58, "YieldProcessorMeasurement" }, { 59, "ThreadPoolMinMaxThreads" },
	{ 60, "ThreadPoolWorkingThreadCount" }, { 61, "ThreadPoolEnqueue" },
	{ 62, "ThreadPoolDequeue" }, { 63, "ThreadPoolIOEnqueue" }, { 64, "ThreadPoolIODequeue" },
	{ 65, "ThreadPoolIOPack" }, { 70, "ThreadCreating" }, { 71, "ThreadRunning" },
	{ 72, "MethodDetails" }, { 73, "TypeLoadStart" }, { 74, "TypeLoadStop" },
	{ 80, "ExceptionThrown" }, { 81, "ContentionStart" }, { 82, "CLRStackWalk" },
	{ 83, "AppDomainMemAllocated" }, { 84, "AppDomainMemSurvived" }, { 85, "ThreadCreated" },
	{ 86, "ThreadTerminated" }, { 87, "ThreadDomainEnter" }, { 88, "ILStubGenerated" },
	{ 89, "ILStubCacheHit" }, { 90, "ContentionLockCreated" }, { 91, "ContentionStop" },
	{ 135, "DCStartCompleteV2" }, { 136, "DCEndCompleteV2" }, { 137, "MethodDCStartV2" },
	{ 138, "MethodDCEndV2" }, { 139, "MethodDCStartVerboseV2" }, { 140, "MethodDCEndVerboseV2" },
	{ 141, "MethodLoad" }, { 142, "MethodUnload" }, { 143, "MethodLoadVerbose" },
	{ 144, "MethodUnloadVerbose" }, { 145, "MethodJittingStarted" },
	{ 146, "MethodJitMemoryAllocatedForCode" }, { 151, "DomainModuleLoad" },
	{ 152, "ModuleLoad" }, { 153, "ModuleUnload" }, { 154, "AssemblyLoad" },
	{ 155, "AssemblyUnload" }, { 156, "AppDomainLoad" }, { 157, "AppDomainUnload" },
	{ 158, "ModuleRangeLoad" }, { 159, "R2RGetEntryPoint" }, { 160, "R2RGetEntryPointStart" },
	{ 185, "MethodJitInliningSucceeded" },
	{ 186, "MethodJitInliningFailedAnsi" }, { 187, "RuntimeInformationStart" },
	{ 188, "MethodJitTailCallSucceeded" }, { 189, "MethodJitTailCallFailedAnsi" },
	{ 190, "MethodILToNativeMap" }, { 191, "MethodJitTailCallFailed" },
	{ 192, "MethodJitInliningFailed" }, { 200, "GCSettings" }, { 202, "GCMarkWithType" },
	{ 203, "GCJoin" }, { 204, "GCPerHeapHistory" }, { 205, "GCGlobalHeapHistory" },
	{ 206, "GenAwareBegin" }, { 207, "GenAwareEnd" }, { 208, "GCLOHCompact" },
	{ 209, "GCFitBucketInfo" }, { 240, "DebugIPCEventStart" }, { 241, "DebugIPCEventEnd" },
	{ 242, "DebugExceptionProcessingStart" }, { 243, "DebugExceptionProcessingEnd" },
	{ 250, "ExceptionCatchStart" }, { 251, "ExceptionCatchStop" },
	{ 252, "ExceptionFinallyStart" }, { 253, "ExceptionFinallyStop" },
	{ 254, "ExceptionFilterStart" }, { 255, "ExceptionFilterStop" },
	{ 256, "ExceptionThrownStop" }, { 260, "CodeSymbols" }, { 270, "EventSource" },
	{ 280, "TieredCompilationSettings" }, { 281, "TieredCompilationPause" },
	{ 282, "TieredCompilationResume" }, { 283, "TieredCompilationBackgroundJitStart" },
	{ 284, "TieredCompilationBackgroundJitStop" }, { 290, "AssemblyLoadStart" },
	{ 291, "AssemblyLoadStop" }, { 292, "ResolutionAttempted" },
	{ 293, "AssemblyLoadContextResolvingHandlerInvoked" },
	{ 294, "AppDomainAssemblyResolveHandlerInvoked" },
	{ 295, "AssemblyLoadFromResolveHandlerInvoked" }, { 296, "KnownPathProbed" },
	{ 297, "JitInstrumentationData" }, { 298, "JitInstrumentationDataVerbose" },
	{ 299, "ProfilerMessage" }, { 300, "ExecutionCheckpoint" }, { 301, "WaitHandleWaitStart" },
	{ 302, "WaitHandleWaitStop" }, { 303, "AllocationSampled" },
};

static const struct idname rundown_names[] = {
	{ 0, "CLRStackWalk" }, { 10, "GCSettingsRundown" }, { 141, "MethodDCStart" }, { 142, "MethodDCEnd" },
	{ 143, "MethodDCStartVerbose" }, { 144, "MethodDCEndVerbose" }, { 145, "DCStartComplete" },
	{ 146, "DCEndComplete" }, { 147, "DCStartInit" }, { 148, "DCEndInit" },
	{ 149, "MethodDCStartILToNativeMap" }, { 150, "MethodDCEndILToNativeMap" },
	{ 151, "DomainModuleDCStart" }, { 152, "DomainModuleDCEnd" }, { 153, "ModuleDCStart" },
	{ 154, "ModuleDCEnd" }, { 155, "AssemblyDCStart" }, { 156, "AssemblyDCEnd" },
	{ 157, "AppDomainDCStart" }, { 158, "AppDomainDCEnd" }, { 159, "ThreadDCEnd" },
	{ 187, "RuntimeInformationDCStart" }, { 280, "TieredCompilationSettingsDCStart" },
	{ 300, "ExecutionCheckpointDCEnd" },
};

static const char *find(const struct idname *t, size_t n, uint32_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t[mid].id == id)
			return t[mid].name;
		if (t[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const char *tracestats_runtime_event_name(enum nt_provider kind, uint32_t id)
{
	switch (kind) {
	case NT_PROV_RUNTIME:
		return find(runtime_names, ARRAY_SIZE(runtime_names), id);
	case NT_PROV_RUNDOWN:
		return find(rundown_names, ARRAY_SIZE(rundown_names), id);
	case NT_PROV_SAMPLEPROFILER:
		return id == 0 ? "ThreadSample" : id == 1 ? "ThreadStackWalk" : NULL;
	case NT_PROV_EVENTPIPE:
		return id == 1 ? "ProcessInfo" : NULL;
	default:
		return NULL;
	}
}

static const char *const gc_reasons[] = {
	"AllocSmall", "Induced", "LowMemory", "Empty", "AllocLarge", "OutOfSpaceSOH",
	"OutOfSpaceLOH", "InducedNotForced", "Internal", "InducedLowMemory",
	"InducedCompacting", "LowMemoryHost", "PMFullGC", "LowMemoryHostBlocking",
	"BGCStepping",
};

const char *tracestats_gc_reason_name(unsigned reason)
{
	return reason < ARRAY_SIZE(gc_reasons) ? gc_reasons[reason] : NULL;
}
