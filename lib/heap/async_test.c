/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/heap/async.c on a hand-built heap graph shaped like the
 * async-stuck fixture's snapshot (two requests awaiting one
 * TaskCompletionSource, whose task keeps its continuations in a list), plus a
 * state machine tied to nothing and one tied to two callers. */
#include "common/compat.h"

#include <setjmp.h>
#include <cmocka.h>

#include "heap/async.h"

enum { T_TCS, T_TASK, T_LIST, T_ARR, T_RES, T_GET, T_HANDLE, T_LOOSE, T_CLOSURE, NTYPES };

static char *tnames[NTYPES] = {
	"System.Threading.Tasks.TaskCompletionSource<System.Int32>",
	"System.Threading.Tasks.Task<System.Int32>",
	"System.Collections.Generic.List<System.Object>",
	"System.Object[]",
	"AsyncStateMachineBox<System.Int32,Shop.Inventory+<Reserve>d__4>",
	"AsyncStateMachineBox<System.Int32,Shop.Orders+<Get>d__0>",
	"AsyncStateMachineBox<System.Int32,Shop.OrderEndpoint+<Handle>d__0<Shop.Ctx>>",
	"AsyncStateMachineBox<System.Threading.Tasks.VoidTaskResult,Shop.Loose+<Wait>d__1>",
	"AsyncStateMachineBox<System.Int32,Shop.Routes+[]c+<<Map>b__1_6>d>",
};

/* nodes: 0 tcs, 1 task, 2 list, 3 array, 4/5/6 chain one, 7/8/9 chain two, 10 loose */
static uint32_t ntype[] = { T_TCS, T_TASK, T_LIST, T_ARR, T_RES, T_GET, T_HANDLE,
			    T_RES, T_GET, T_HANDLE, T_LOOSE };

static void build(struct heap_graph *g, struct heap_type *types, uint32_t (*adj)[4], uint32_t n,
		  uint32_t *start, uint32_t *edges)
{
	uint32_t i, k, m = 0;

	memset(g, 0, sizeof(*g));
	for (i = 0; i < NTYPES; i++)
		types[i] = (struct heap_type){ i, tnames[i] };
	for (i = 0; i < n; i++) {
		start[i] = m;
		for (k = 0; k < 4 && adj[i][k] != HEAP_NONE; k++)
			edges[m++] = adj[i][k];
	}
	start[n] = m;
	g->nnodes = n;
	g->type = ntype;
	g->edge_start = start;
	g->edges = edges;
	g->nedges = m;
	g->types = types;
	g->ntypes = NTYPES;
}

#define X HEAP_NONE

static void test_stuck_requests(void **state)
{
	uint32_t adj[][4] = {
		{ 1, X, X, X },  /* tcs -> its task */
		{ 2, X, X, X },  /* task -> continuation list */
		{ 3, X, X, X },  /* list -> items */
		{ 4, 7, X, X },  /* items: both Reserve boxes */
		{ 1, 5, X, X },  /* Reserve: awaiter (task), continuation (Get) */
		{ 4, 6, X, X },  /* Get: awaiter (Reserve), continuation (Handle) */
		{ 5, X, X, X },  /* Handle: awaiter (Get) */
		{ 1, 8, X, X },
		{ 7, 9, X, X },
		{ 8, X, X, X },
		{ X, X, X, X },  /* a box tied to nothing */
	};
	uint32_t start[12], edges[32];
	struct heap_type types[NTYPES];
	struct heap_graph g;
	struct heap_async *a = NULL;
	const struct heap_async_group *gr;

	(void)state;
	build(&g, types, adj, 11, start, edges);
	assert_int_equal(heap_async_chains(&g, &a), 0);
	assert_int_equal(a->boxes, 7);
	assert_int_equal(a->chained, 6);
	assert_int_equal(a->ngroups, 1);
	gr = &a->groups[0];
	assert_int_equal(gr->count, 2);
	assert_string_equal(gr->awaited, tnames[T_TASK]);
	assert_string_equal(gr->source, tnames[T_TCS]);
	assert_false(gr->cut);
	assert_int_equal(gr->nframes, 3);
	assert_string_equal(gr->frames[0], "Shop.OrderEndpoint::Handle [async]");
	assert_string_equal(gr->frames[1], "Shop.Orders::Get [async]");
	assert_string_equal(gr->frames[2], "Shop.Inventory::Reserve [async]");
	assert_int_equal(a->nloose, 1);
	assert_string_equal(a->loose[0].frame, "Shop.Loose::Wait [async]");
	assert_int_equal(a->loose[0].count, 1);
	heap_async_free(a);
}

static void test_two_callers_cut(void **state)
{
	/* 0 task, 1 inner box awaiting it, 2 and 3 two boxes both tied to 1: no guess */
	static uint32_t t2[] = { T_TASK, T_RES, T_GET, T_CLOSURE };
	uint32_t adj[][4] = {
		{ 1, X, X, X },
		{ 0, 2, 3, X },
		{ 1, X, X, X },
		{ 1, X, X, X },
	};
	uint32_t start[5], edges[16];
	struct heap_type types[NTYPES];
	struct heap_graph g;
	struct heap_async *a = NULL;

	(void)state;
	build(&g, types, adj, 4, start, edges);
	g.type = t2;
	assert_int_equal(heap_async_chains(&g, &a), 0);
	assert_int_equal(a->ngroups, 1);
	assert_true(a->groups[0].cut);
	assert_null(a->groups[0].source);
	assert_int_equal(a->groups[0].nframes, 1);
	assert_string_equal(a->groups[0].frames[0], "Shop.Inventory::Reserve [async]");
	/* the two it could not choose between are left on no chain, named */
	assert_int_equal(a->nloose, 2);
	assert_true(!strcmp(a->loose[0].frame, "Shop.Routes::Map [async lambda]") ||
		    !strcmp(a->loose[1].frame, "Shop.Routes::Map [async lambda]"));
	heap_async_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stuck_requests),
		cmocka_unit_test(test_two_callers_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
