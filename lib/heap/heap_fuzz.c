/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for lib/heap's snapshot file reader: the input is a
 * snapshot file. What parses is analyzed like a real one (dominators, paths,
 * the HTML view), so a file that passes the checks cannot break the analysis
 * either. Seeds: tests/data/heap/.
 */
#include "common/compat.h"

#include "heap/heap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct heap_graph *g = NULL;
	struct heap_analysis *a = NULL;
	struct heap_paths *p = NULL;
	const char *why;

	if (heap_file_parse(data, size, &g, &why))
		return 0;
	if (!heap_analyze(g, &a) && !heap_paths_new(g, &p)) {
		struct strbuf sb = STRBUF_INIT;
		struct heap_path_group *gr = NULL;
		size_t n = 0;
		uint64_t un;

		if (g->ntypes && !heap_paths_group(g, p, a, 0, 5, &gr, &n, &un))
			heap_path_groups_free(gr, n);
		(void)heap_html_write(g, a, p, &sb);
		strbuf_release(&sb);
	}
	heap_paths_free(p);
	heap_analysis_free(a);
	heap_graph_free(g);
	return 0;
}
