/* SPDX-License-Identifier: MIT */
/*
 * pdb_fuzz.c - libFuzzer harness for the portable PDB reader: the input is
 * tried as a standalone PDB (sequence points of the first methods) and as an
 * assembly whose embedded PDB and CodeView entry are read.
 * Seed corpus: tests/data/pdb/.
 */
#include "common/compat.h"

#include "pe/pdb.h"
#include "pe/pe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pe_open_opts o = { .max_names_bytes = 1 << 20, .flags = PE_OPEN_NO_RESOLVE };
	struct pe_file *pf = NULL;
	struct pe_pdb *pdb = NULL;
	struct pe_srcline sl;
	uint8_t id[20];
	char path[64];
	uint32_t t;

	if (pe_pdb_open_mem(data, size, &pdb) == 0) {
		for (t = 1; t <= 16; t++) {
			(void)pe_pdb_line(pdb, 0x06000000 | t, 0, &sl);
			(void)pe_pdb_line(pdb, 0x06000000 | t, 37, &sl);
			(void)pe_pdb_line(pdb, 0x06000000 | t, UINT32_MAX, &sl);
		}
		pe_pdb_close(pdb);
		pdb = NULL;
	}
	if (pe_file_open_mem(data, size, &o, &pf) == 0) {
		(void)pe_file_pdb_id(pf, id, path, sizeof(path));
		/* no path: only the embedded PDB is read, no file is opened */
		if (pe_pdb_open_for(pf, NULL, NULL, &pdb) == 0) {
			(void)pe_pdb_line(pdb, 0x06000001, 10, &sl);
			pe_pdb_close(pdb);
		}
		pe_file_close(pf);
	}
	return 0;
}
