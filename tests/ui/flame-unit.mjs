// SPDX-License-Identifier: MIT
// Unit checks of web/flame.js's data side (no browser): the folded and
// speedscope parsers, tree totals, the differential tree's shares, the top
// self table and frame kinds. Run by tests/integration/t-ui.sh with node.
// Prints "ok NAME" / "not ok NAME" lines.
import fs from 'fs';
import path from 'path';
import vm from 'vm';
import { fileURLToPath } from 'url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ctx = { window: {} };
vm.createContext(ctx);
for (const f of ['web/util.js', 'web/flame.js'])
	vm.runInContext(fs.readFileSync(path.join(root, f), 'utf8'), ctx, { filename: f });
const CT = ctx.window.CT;
let failed = 0;
function check(name, cond, detail) {
	console.log((cond ? 'ok ' : 'not ok ') + name);
	if (!cond) {
		failed++;
		if (detail !== undefined)
			console.log('    ' + JSON.stringify(detail).slice(0, 400));
	}
}

// folded: names with spaces and semicolon-free odd bytes; malformed lines skipped
const folded = 'a;b;c 5\na;b 2\na;b;d x 3\nnot a line\n\n[k] f;g 1\n';
const st = CT.parseFolded(folded);
check('folded: 4 stacks, the name with a blank kept whole', st.length === 4 && st[2].frames[2] === 'd x' && st[2].count === 3, st);

const t = CT.flameTree(st);
const kid = (n, name) => n.list.find(k => k.name === name);
check('tree: root total 11, a 10, a;b 10 (self 2), c 5, d x 3', t.v === 11 && kid(t, 'a').v === 10 && kid(kid(t, 'a'), 'b').v === 10 &&
	kid(kid(t, 'a'), 'b').self === 2 && kid(kid(kid(t, 'a'), 'b'), 'c').v === 5 && kid(kid(kid(t, 'a'), 'b'), 'd x').v === 3);
check('tree: children ordered by weight', kid(kid(t, 'a'), 'b').list.map(k => k.name).join(',') === 'c,d x');

const top = CT.flameTopSelf(t, 10);
check('top self: c 5, d x 3, b 2, g 1', top.map(r => r.name + ' ' + r.self).slice(0, 4).join(',') === 'c 5,d x 3,b 2,g 1', top);

// a recursive frame is counted once in "total"
const rec = CT.flameTree([{ frames: ['m', 'r', 'r', 'r'], count: 4 }]);
const rtop = CT.flameTopSelf(rec, 5).find(r => r.name === 'r');
check('top self: recursion counted once in total', rtop.total === 4 && rtop.self === 4, rtop);

// speedscope sampled (frames root first, weights) and evented
const ss = { shared: { frames: [{ name: 'Main' }, { name: 'Hot' }, { name: 'Cold' }] },
	profiles: [{ type: 'sampled', samples: [[0, 1], [0, 1], [0, 2]], weights: [1, 2, 7] }] };
const sst = CT.flameTree(CT.parseSpeedscope(ss));
check('speedscope sampled: weights summed per stack', sst.v === 10 && kid(kid(sst, 'Main'), 'Hot').v === 3 && kid(kid(sst, 'Main'), 'Cold').v === 7);
const ev = { shared: { frames: [{ name: 'A' }, { name: 'B' }] },
	profiles: [{ type: 'evented', startValue: 0, events: [{ type: 'O', frame: 0, at: 0 }, { type: 'O', frame: 1, at: 2 }, { type: 'C', frame: 1, at: 7 }, { type: 'C', frame: 0, at: 10 }] }] };
const evt = CT.flameTree(CT.parseSpeedscope(ev));
check('speedscope evented: A 10, A;B 5', evt.v === 10 && kid(evt, 'A').v === 10 && kid(evt, 'A').self === 5 && kid(kid(evt, 'A'), 'B').v === 5, evt.v);

// diff: shares, not counts
const before = [{ frames: ['r', 'x'], count: 30 }, { frames: ['r', 'y'], count: 10 }];
const after = [{ frames: ['r', 'x'], count: 10 }, { frames: ['r', 'y'], count: 10 }, { frames: ['r', 'z'], count: 20 }];
const d = CT.flameDiffTree(before, after, 'after');
const near = (a, b) => Math.abs(a - b) < 1e-9;
const r = kid(d, 'r');
check('diff: shares of all samples (x 0.75 -> 0.25, y 0.25 -> 0.25, z 0 -> 0.5)', near(kid(r, 'x').a, 0.75) && near(kid(r, 'x').b, 0.25) &&
	near(kid(r, 'y').a, 0.25) && near(kid(r, 'y').b, 0.25) && near(kid(r, 'z').a, 0) && near(kid(r, 'z').b, 0.5));
check('diff: width by after, or by before', near(kid(r, 'z').v, 0.5) && near(kid(kid(CT.flameDiffTree(before, after, 'before'), 'r'), 'z').v, 0));
check('diff: totals kept', d.totals.before === 40 && d.totals.after === 40);

check('frame kinds', ['Ns.T::M', 'System.String::Concat', 'libc.so.6!read', '[k] do_syscall_64', '[unknown]', '[thread] main']
	.map(CT.frameKind).join(',') === 'managed,framework,native,kernel,other,other');

process.exit(failed ? 1 : 0);
