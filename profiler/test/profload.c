/* SPDX-License-Identifier: MIT */
/*
 * profload - loads libclrtap-profiler.so the way the runtime does (dlopen,
 * dlsym DllGetClassObject, IClassFactory::CreateInstance, QueryInterface
 * for every ICorProfilerCallback version, LoadAsNotificationOnly) and checks
 * the answers. Built with gcc and with musl-gcc, so the musl build is
 * loaded by musl's own dynamic loader. Prints "ok ..." lines; exit 0 if all
 * checks pass.
 *
 * Usage: profload LIBRARY
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "agent/agent_proto.h"

struct guid {
	uint32_t d1;
	uint16_t d2, d3;
	uint8_t d4[8];
};

typedef int32_t (*get_class_fn)(const struct guid *, const struct guid *, void **);
typedef int32_t (*qi_fn)(void *, const struct guid *, void **);
typedef uint32_t (*release_fn)(void *);
typedef int32_t (*create_fn)(void *, void *, const struct guid *, void **);
typedef int32_t (*notif_fn)(void *, int32_t *);

#define SLOT(obj, n) ((*(void ***)(obj))[n])

static int fails;

static void check(int cond, const char *what)
{
	printf("%s %s\n", cond ? "ok" : "FAIL", what);
	if (!cond)
		fails++;
}

int main(int argc, char **argv)
{
	static const struct guid cls_main = { PRF_CLSID_MAIN_D1, PRF_CLSID_D2, PRF_CLSID_D3,
					      PRF_CLSID_D4_MAIN };
	static const struct guid cls_notify = { PRF_CLSID_NOTIFY_D1, PRF_CLSID_D2, PRF_CLSID_D3,
						PRF_CLSID_D4_NOTIFY };
	static const struct guid bogus = { 1, 2, 3, { 4 } };
	static const struct guid iid_factory = { 1, 0, 0, { 0xC0, 0, 0, 0, 0, 0, 0, 0x46 } };
	static const struct guid iid_cb2 = { 0x8A8CC829, 0xCCF2, 0x49FE,
					     { 0xBB, 0xAE, 0x0F, 0x02, 0x22, 0x28, 0x07, 0x1A } };
	static const struct guid iid_cb11 = { 0x42350846, 0xAAED, 0x47F7,
					      { 0xB1, 0x28, 0xFD, 0x0C, 0x98, 0x88, 0x1C, 0xDE } };
	static const struct guid iid_info12 = { 0x27B24CCD, 0x1CB1, 0x47C5,
						{ 0x96, 0xEE, 0x98, 0x19, 0x0D, 0xC3, 0x09, 0x59 } };
	const struct guid *cls[2] = { &cls_main, &cls_notify };
	void *h, *fac = NULL, *obj = NULL, *o11 = NULL, *none = (void *)1;
	get_class_fn get;
	int32_t notif = -1;

	if (argc != 2) {
		fprintf(stderr, "usage: profload LIBRARY\n");
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	check(h != NULL, "dlopen");
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	get = (get_class_fn)dlsym(h, "DllGetClassObject");
	check(get != NULL, "DllGetClassObject exported");
	check(dlsym(h, "cb_QueryInterface") == NULL && dlsym(h, "prf_ev_write") == NULL &&
		      dlsym(h, "g_info") == NULL,
	      "nothing else visible");
	if (!get)
		return 1;
	check(get(&bogus, &iid_factory, &fac) == (int32_t)0x80040111 && fac == NULL,
	      "unknown class id refused");
	for (int m = 0; m < 2; m++) {
		fac = obj = o11 = NULL;
		check(get(cls[m], &iid_factory, &fac) == 0 && fac, "IClassFactory");
		if (!fac)
			continue;
		check(((create_fn)SLOT(fac, 3))(fac, NULL, &iid_cb2, &obj) == 0 && obj,
		      "CreateInstance(ICorProfilerCallback2)");
		if (!obj)
			continue;
		check(((qi_fn)SLOT(obj, 0))(obj, &iid_cb11, &o11) == 0 && o11 == obj,
		      "QueryInterface(ICorProfilerCallback11)");
		check(((qi_fn)SLOT(obj, 0))(obj, &iid_info12, &none) == (int32_t)0x80004002 &&
			      none == NULL,
		      "QueryInterface of an Info IID refused");
		check(((notif_fn)SLOT(obj, 97))(obj, &notif) == 0 && notif == m,
		      m ? "LoadAsNotificationOnly = TRUE (notification class id)"
			: "LoadAsNotificationOnly = FALSE (main class id)");
		((release_fn)SLOT(obj, 2))(obj);
		((release_fn)SLOT(obj, 2))(obj);
	}
	printf("%s\n", fails ? "FAILED" : "all ok");
	return fails ? 1 : 0;
}
