/* SPDX-License-Identifier: MIT */
/*
 * reports.js - the session page (progress, cancel, artifacts, report) and
 * one renderer per kind of report: profile (flame graph), exceptions,
 * analyzers, heap (gcdump), doctor findings, probe stream, counters, stacks,
 * trace; and the differential flame graph of two profile sessions.
 * Loaded before app.js: it uses CT.h & co. only when a page is drawn.
 */
'use strict';
(function () {
	const CT = window.CT = window.CT || {};
	const h = (...a) => CT.h(...a);

	function section(title, ...kids) {
		return h('section.card', h('h2', title), ...kids);
	}

	/* a table from rows and column specs [label, fn(row) -> text|Node, cls] */
	function table(rows, cols, opts) {
		opts = opts || {};
		const body = h('tbody');
		for (const r of rows) {
			body.appendChild(h('tr', cols.map(([, fn, cls]) => {
				const v = fn(r);
				return h('td' + (cls ? '.' + cls.split(' ').join('.') : ''), v instanceof Node ? v : (v === null || v === undefined ? '–' : String(v)));
			})));
		}
		if (!rows.length)
			body.appendChild(h('tr', h('td.empty', { colSpan: cols.length }, opts.empty || 'None.')));
		return h('table.grid' + (opts.cls ? '.' + opts.cls : ''), h('thead', h('tr', cols.map(([l, , cls]) => h('th' + (cls ? '.' + cls.split(' ')[0] : ''), l)))), body);
	}
	CT.table = table;

	function bar(frac, label) {
		const b = h('span.bar', h('i'));
		b.firstChild.style.width = Math.max(0, Math.min(100, frac * 100)).toFixed(1) + '%';
		return h('span.barcell', b, h('span', label));
	}

	function stat(label, value, opts) {
		opts = opts || {};
		return h('div.stat' + (opts.cls ? '.' + opts.cls : ''), h('div.stat-value', { dataset: opts.testid ? { testid: opts.testid } : {} }, value), h('div.stat-label', label));
	}

	function stackList(frames) {
		return h('ol.stack', (frames || []).map(f => h('li.mono', f)));
	}

	function warnBox(text) {
		return h('div.warnbox', { role: 'note' }, text);
	}

	function rawJson(obj) {
		let s;
		try {
			s = JSON.stringify(obj, null, 2);
		} catch (e) {
			s = String(obj);
		}
		if (s && s.length > 400000)
			s = s.slice(0, 400000) + '\n… (cut: download the file for all of it)';
		return h('details.raw', h('summary', 'Raw JSON report'), h('pre.mono', s));
	}

	/* ---------- profile data from a session ---------- */

	async function fetchArtifactText(s, name) {
		const r = await fetch(CT.artifactUrl(s.id, name), { headers: CT.token() ? { Authorization: 'Bearer ' + CT.token() } : {} });
		if (!r.ok)
			throw new Error(`${name}: HTTP ${r.status}`);
		return r.text();
	}

	/* stacks of a profile session: the report's stacks/folded, else a speedscope or folded artifact */
	CT.profileStacks = async function (s, report) {
		const rep = report && (report.profile || report);
		if (rep && Array.isArray(rep.stacks) && rep.stacks.length && Array.isArray(rep.stacks[0].frames))
			return { stacks: rep.stacks, unit: rep.unit || 'samples', from: 'report' };
		if (rep && typeof rep.folded === 'string')
			return { stacks: CT.parseFolded(rep.folded), unit: rep.unit || 'samples', from: 'report' };
		if (rep && rep.shared && rep.profiles)
			return { stacks: CT.parseSpeedscope(rep), unit: 'samples', from: 'report' };
		const arts = s.artifacts || [];
		const ss = arts.find(a => /speedscope\.json$/.test(a.name));
		if (ss) {
			const doc = JSON.parse(await fetchArtifactText(s, ss.name));
			const p = (doc.profiles || [])[0] || {};
			return { stacks: CT.parseSpeedscope(doc), unit: p.unit === 'nanoseconds' ? 'ns' : 'samples', from: ss.name };
		}
		const fo = arts.find(a => /\.(folded|collapsed)$/.test(a.name));
		if (fo)
			return { stacks: CT.parseFolded(await fetchArtifactText(s, fo.name)), unit: 'samples', from: fo.name };
		return null;
	};

	function topSelfTable(root, unit) {
		const rows = CT.flameTopSelf(root, 15).filter(r => r.self > 0);
		const tot = root.v || 1;
		return table(rows, [
			['Method (self)', r => h('span.mono', { title: r.name }, r.name), 'name'],
			['Self', r => bar(r.self / tot, CT.pct(r.self / tot)), 'barcol'],
			['Total', r => CT.pct(r.total / tot), 'num'],
		], { cls: 'topself' });
	}

	/* the profile task's result (docs/tasks/profile.md): what clrtap saw, and what it could not */
	function profileSummary(rep, out) {
		if (!rep || rep.task !== 'profile')
			return;
		const num = v => v === undefined || v === null ? '–' : CT.fmtNum(v);
		const sec = section('Summary', h('div.stats',
			stat('engine', rep.engine || '–', { testid: 'profile-engine' }),
			stat('samples', num(rep.samples), { testid: 'profile-samples', cls: 'big' }),
			stat('lost samples', num(rep.lost_samples), { testid: 'profile-lost' }),
			stat('unnamed frames', num(rep.unnamed_frames), { testid: 'profile-unnamed' }),
			rep.threads !== undefined ? stat('threads', num(rep.threads)) : null,
			rep.duration_s !== undefined ? stat('duration', CT.fmtDur(rep.duration_s)) : null));
		for (const st of rep.statements || [])
			sec.append(warnBox(String(st)));
		if (rep.partial)
			sec.append(warnBox('Partial: the session was stopped before its end; these are the samples up to then.'));
		sec.append(h('h3', 'Top methods (by own samples)'), table(rep.top || [], [
			['Method', t => h('span.mono', { title: t.name }, t.name), 'name'],
			['Module', t => t.module ? h('span.mono.muted', t.module) : '–', 'name'],
			['Self', t => bar((t.self_pct || 0) / 100, CT.fmtNum(t.self) + ' · ' + (t.self_pct || 0).toFixed(1) + '%'), 'barcol'],
			['Total', t => t.total !== undefined ? CT.fmtNum(t.total) : '–', 'num'],
		], { cls: 'profiletop', empty: 'No sample was kept.' }));
		out.append(sec);
	}

	async function renderProfile(s, report, out) {
		profileSummary(report, out);
		const card = h('section.card', h('h2', 'Flame graph'));
		out.append(card);
		let got;
		try {
			got = await CT.profileStacks(s, report);
		} catch (e) {
			card.append(CT.errorBox(e, 'Could not read the profile'));
			return;
		}
		if (!got || !got.stacks.length) {
			card.append(h('p.muted', 'This profile holds no samples.'));
			return;
		}
		const rep = report && (report.profile || report) || {};
		const notes = [];
		if (rep.engine)
			notes.push('engine: ' + rep.engine);
		if (rep.samples !== undefined)
			notes.push(CT.fmtNum(rep.samples) + ' samples');
		if (rep.lost_samples)
			notes.push(CT.fmtNum(rep.lost_samples) + ' samples lost');
		if (rep.duration_s !== undefined)
			notes.push(CT.fmtDur(rep.duration_s));
		if (got.from !== 'report')
			notes.push('from ' + got.from);
		card.append(h('p.muted.small', notes.join(' · ') || ' '));
		if (rep.warning || rep.partial)
			card.append(warnBox(String(rep.warning || rep.partial)));
		const fbox = h('div#flame');
		card.append(fbox);
		const topBox = h('div');
		let fg = null;
		/* the table follows the graph's tree (".NET frames only" too) */
		const drawTop = tree => {
			topBox.replaceChildren(topSelfTable(tree, got.unit));
			topBox.querySelectorAll('tbody tr').forEach(tr => {
				tr.classList.add('click');
				tr.addEventListener('click', () => {
					fg.search.value = tr.querySelector('.mono').textContent;
					fg.render();
					fbox.scrollIntoView({ behavior: 'smooth', block: 'start' });
				});
			});
		};
		out.append(section('Hottest methods', h('p.muted.small', 'By own (self) samples; click a row to find it in the flame graph.'), topBox));
		fg = new CT.FlameGraph(fbox, { unit: got.unit === 'ns' ? 'ns' : 'samples', onTree: drawTop });
		fg.setStacks(got.stacks);
		CT.onLeave(() => fg.destroy());
	}

	/* ---------- exceptions (analyze exceptions, trace report) ---------- */

	function renderExceptions(ex, out, title) {
		if (!ex)
			return;
		const total = ex.total !== undefined ? ex.total : (ex.types || []).reduce((a, t) => a + (t.count || 0), 0);
		const stats = h('div.stats', stat('exceptions thrown', CT.fmtNum(total), { testid: 'exceptions-total', cls: 'big' }),
			stat('types', CT.fmtNum((ex.types || []).length)),
			ex.groups ? stat('distinct type + message', CT.fmtNum(ex.groups.length)) : null);
		const sec = section(title || 'Exceptions', stats);
		if (ex.collected === false)
			sec.append(warnBox('Exception events were not collected in this session: the count above is not a count of exceptions.'));
		sec.append(h('h3', 'By type'), table(ex.types || [], [
			['Type', t => h('span.mono', t.type), 'name'],
			['Count', t => CT.fmtNum(t.count), 'num'],
			['Distinct messages', t => (t.messages !== undefined ? CT.fmtNum(t.messages) : '–') + (t.messages_capped ? '+' : ''), 'num'],
		], { empty: 'No exception was thrown.' }));
		if (ex.groups && ex.groups.length) {
			sec.append(h('h3', 'By type and message (with where it was thrown)'));
			const list = h('div.groups');
			for (const g of ex.groups) {
				list.append(h('details.group', { open: ex.groups.length <= 3 }, h('summary',
					h('span.count', CT.fmtNum(g.count) + '×'), ' ', h('span.mono', g.type), ': ', h('span.msg', g.message === null || g.message === undefined ? '(no message)' : g.message),
					g.thrown_at || g.thrown_in ? h('span.muted', ' · at ', h('span.mono', g.thrown_at || g.thrown_in)) : null),
				g.stack && g.stack.length ? stackList(g.stack) : h('p.muted', 'no stack')));
			}
			sec.append(list);
		}
		out.append(sec);
	}

	/* ---------- heap (gcdump) ---------- */

	function renderHeap(r, out) {
		out.append(section('Heap', h('div.stats',
			stat('objects', CT.fmtNum(r.objects)), stat('heap size', CT.fmtBytes(r.bytes)),
			stat('reachable objects', CT.fmtNum(r.reachable)), stat('unreachable (garbage)', CT.fmtBytes(r.unreachable_bytes)),
			stat('roots', CT.fmtNum(r.roots)), stat('references', CT.fmtNum(r.references))),
		r.lost_events ? warnBox(`${CT.fmtNum(r.lost_events)} events of the heap walk were lost: sizes and paths may be incomplete.`) : null,
		r.unresolved_references ? h('p.muted.small', CT.fmtNum(r.unresolved_references) + ' references point outside the walked heap.') : null,
		r.gc ? h('p.muted.small', `Snapshot GC #${r.gc.number} (gen ${r.gc.generation}${r.gc.induced ? ', induced' : ''}), paused ${CT.fmtDur((r.gc.pause_ns || 0) / 1e9)}.`) : null));
		const types = r.types || [];
		if (types.length && r.bytes)
			out.append(section('Where the heap\'s bytes are', h('p.muted.small', 'Each box is a type, its area the objects\' own (shallow) size; together they are the heap. Hover for numbers.'), treemap(types, r.bytes)));
		const maxRet = types.reduce((m, t) => Math.max(m, t.retained || 0), 1);
		const tot = r.bytes || 1;
		const SHOW = 100;
		const typeCols = [
			['Type', t => h('span.mono', t.type), 'name'],
			['Objects', t => CT.fmtNum(t.count), 'num'],
			['Shallow', t => CT.fmtBytes(t.shallow), 'num'],
			['Retained', t => bar((t.retained || 0) / Math.max(tot, maxRet), CT.fmtBytes(t.retained)), 'barcol'],
		];
		const typeBox = h('div', table(types.slice(0, SHOW), typeCols, { cls: 'heap' }));
		if (types.length > SHOW)
			typeBox.append(h('button.btn.small', { type: 'button', on: { click: () => typeBox.replaceChildren(table(types, typeCols, { cls: 'heap' })) } },
				`Show all ${CT.fmtNum(types.length)} types`));
		out.append(section('Types by retained size', h('p.muted.small', 'Retained: what would be freed if every object of the type went away (dominator tree). Bars are relative to the heap.'),
			typeBox));
		if (r.retainers && r.retainers.length)
			out.append(section('Biggest single retainers', table(r.retainers, [
				['Object', x => h('span.mono', x.type), 'name'],
				['Address', x => h('span.mono.muted', x.address)],
				['Size', x => CT.fmtBytes(x.size), 'num'],
				['Retained', x => CT.fmtBytes(x.retained), 'num'],
			])));
		const st = r.strings;
		if (st && st.read) {
			out.append(section('Duplicated strings', h('p.muted.small', `${CT.fmtNum(st.strings)} strings read, ${CT.fmtNum(st.duplicated_values)} values held more than once, ${CT.fmtBytes(st.wasted)} wasted.`),
				table(st.top || [], [
					['Value', x => h('span.mono', x.value + (x.truncated ? '…' : '')), 'name'],
					['Copies', x => CT.fmtNum(x.count), 'num'],
					['Chars', x => CT.fmtNum(x.chars), 'num'],
					['Wasted', x => CT.fmtBytes(x.wasted), 'num'],
				], { empty: 'No duplicated string.' })));
		}
		if (r.paths && r.paths.groups)
			out.append(section('Retention paths of ' + r.paths.type, table(r.paths.groups, [
				['Root', g => g.root], ['Objects', g => CT.fmtNum(g.count), 'num'], ['Retained', g => CT.fmtBytes(g.retained), 'num'],
				['Path (root first)', g => h('span.mono.small', (g.path || []).join(' → '))],
			])));
	}

	/*
	 * A squarified treemap (Bruls, Huizing, van Wijk) of the types' shallow
	 * sizes, on SVG; what the table does not list is one "other types" box.
	 */
	function treemap(types, total) {
		const W = 1000, H = 260;
		const items = types.filter(t => t.shallow > 0).map(t => ({ name: t.type, v: t.shallow, count: t.count }))
			.sort((a, b) => b.v - a.v).slice(0, 40);
		const listed = items.reduce((a, t) => a + t.v, 0);
		if (total > listed)
			items.push({ name: 'other types', v: total - listed, other: true });
		const scale = W * H / items.reduce((a, t) => a + t.v, 0);
		const rects = [];
		let x = 0, y = 0, w = W, hh = H, row = [];
		const worst = (r, side) => {
			const sum = r.reduce((a, t) => a + t.v * scale, 0);
			let mx = 0;
			for (const t of r) {
				const a = t.v * scale;
				mx = Math.max(mx, side * side * a / (sum * sum), sum * sum / (side * side * a));
			}
			return mx;
		};
		const lay = r => {
			const sum = r.reduce((a, t) => a + t.v * scale, 0);
			if (w >= hh) {
				const cw = sum / hh;
				let cy = y;
				for (const t of r) {
					const ch = t.v * scale / cw;
					rects.push({ t, x, y: cy, w: cw, h: ch });
					cy += ch;
				}
				x += cw;
				w -= cw;
			} else {
				const ch = sum / w;
				let cx = x;
				for (const t of r) {
					const cw = t.v * scale / ch;
					rects.push({ t, x: cx, y, w: cw, h: ch });
					cx += cw;
				}
				y += ch;
				hh -= ch;
			}
		};
		for (const t of items) {
			const side = Math.min(w, hh);
			if (row.length && worst(row.concat([t]), side) > worst(row, side)) {
				lay(row);
				row = [];
			}
			row.push(t);
		}
		if (row.length)
			lay(row);
		const NS = 'http://www.w3.org/2000/svg';
		const svg = document.createElementNS(NS, 'svg');
		svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
		svg.setAttribute('class', 'treemap');
		svg.setAttribute('role', 'img');
		svg.setAttribute('aria-label', 'heap by type');
		rects.forEach((r, i) => {
			const g = document.createElementNS(NS, 'g');
			const rect = document.createElementNS(NS, 'rect');
			const hue = r.t.other ? 0 : 250 + (i * 37) % 90;
			for (const [k, v] of Object.entries({ x: r.x + 0.5, y: r.y + 0.5, width: Math.max(0, r.w - 1), height: Math.max(0, r.h - 1), rx: 3,
				fill: r.t.other ? 'hsl(0, 0%, 86%)' : `hsl(${hue}, 45%, ${70 + (i % 3) * 5}%)` }))
				rect.setAttribute(k, v);
			const title = document.createElementNS(NS, 'title');
			title.textContent = `${CT.vis(r.t.name)}\n${CT.fmtBytes(r.t.v)} (${CT.pct(r.t.v / total)})${r.t.count !== undefined ? ', ' + CT.fmtNum(r.t.count) + ' objects' : ''}`;
			g.append(title, rect);
			if (r.w > 60 && r.h > 16) {
				const t = document.createElementNS(NS, 'text');
				t.setAttribute('x', r.x + 6);
				t.setAttribute('y', r.y + 16);
				const chars = Math.floor((r.w - 10) / 6.6);
				const nm = CT.vis(CT.shortName(r.t.name));
				t.textContent = nm.length > chars ? nm.slice(0, Math.max(1, chars - 1)) + '…' : nm;
				g.append(t);
				if (r.h > 34) {
					const t2 = document.createElementNS(NS, 'text');
					t2.setAttribute('x', r.x + 6);
					t2.setAttribute('y', r.y + 31);
					t2.setAttribute('class', 'sub');
					t2.textContent = CT.fmtBytes(r.t.v);
					g.append(t2);
				}
			}
			svg.append(g);
		});
		return svg;
	}

	/* ---------- doctor ---------- */

	function renderDoctor(r, out) {
		const f = r.findings || [];
		const sec = section('Findings');
		sec.dataset.testid = 'doctor-findings';
		sec.dataset.count = String(f.length);
		sec.append(h('p', r.alarming ? h('strong.bad', 'Something needs a look.') : h('strong.good', 'Nothing alarming.'),
			h('span.muted', ` Watched ${CT.fmtDur(r.duration_s)}, ${CT.fmtNum(r.events)} events` + (r.dropped_events ? `, ${CT.fmtNum(r.dropped_events)} dropped` : '') + '.')));
		if (r.partial)
			sec.append(warnBox('Partial: ' + r.partial));
		const order = { critical: 0, warning: 1, notice: 2, info: 3 };
		f.slice().sort((a, b) => (order[a.severity] ?? 9) - (order[b.severity] ?? 9)).forEach((x, i) => {
			const next = x.analyzer ? h('button.btn.small', { type: 'button', on: { click: e => CT.startSession('analyze', r.pid, { analyzer: x.analyzer, duration: 10 }, e.currentTarget).catch(() => {}) } },
				'Run analyze ' + x.analyzer) : null;
			sec.append(h('div.finding.sev-' + (x.severity || 'info'), { dataset: { testid: 'finding', severity: x.severity || 'info' } },
				h('div.fhead', h('span.badge.sev', x.severity || 'info'), h('strong.ftitle', `${i + 1}. ${x.title || ''}`)),
				x.evidence ? h('div.evidence', h('span.muted', 'evidence: '), x.evidence) : null,
				h('div.fnext', x.next ? [h('span.muted.small', 'next: '), h('span.mono.small.fcmd', x.next)] : null, next)));
		});
		if (!f.length)
			sec.append(h('p.muted', 'No finding.'));
		out.append(sec);
	}

	/* ---------- analyze ---------- */

	function genericValue(v) {
		if (v === null || v === undefined)
			return '–';
		if (Array.isArray(v))
			return v.every(x => typeof x !== 'object') ? v.join(v.length > 3 && typeof v[0] === 'string' ? ' ← ' : ', ') : JSON.stringify(v);
		if (typeof v === 'object')
			return JSON.stringify(v);
		return typeof v === 'number' ? CT.fmtNum(v) : String(v);
	}

	/* tables for every array of objects, key/value stats for the rest */
	function renderGeneric(obj, out, title) {
		const scal = [], arrays = [];
		for (const k in obj) {
			const v = obj[k];
			if (Array.isArray(v) && v.length && typeof v[0] === 'object' && v[0] !== null && !Array.isArray(v[0]))
				arrays.push([k, v]);
			else if (v === null || typeof v !== 'object' || Array.isArray(v) && v.every(x => typeof x !== 'object'))
				scal.push([k, v]);
		}
		const sec = section(title || 'Result');
		const objs = [];
		for (const k in obj) {
			const v = obj[k];
			if (v !== null && typeof v === 'object' && !Array.isArray(v))
				objs.push([k, v]);
		}
		if (scal.length)
			sec.append(h('dl.facts', scal.map(([k, v]) => [h('dt', k.replace(/_/g, ' ')), h('dd', genericValue(v))])));
		for (const [k, v] of objs)
			sec.append(h('h3', k.replace(/_/g, ' ')), h('dl.facts', Object.keys(v).map(kk => [h('dt', kk.replace(/_/g, ' ')), h('dd', genericValue(v[kk]))])));
		for (const [k, rows] of arrays) {
			const keys = Object.keys(rows[0]);
			sec.append(h('h3', k.replace(/_/g, ' ')), table(rows, keys.map(key => [key.replace(/_/g, ' '), r => {
				const v = r[key];
				if (Array.isArray(v) && key === 'stack')
					return h('span.mono.small', v.slice(0, 6).join(' ← ') + (v.length > 6 ? ' …' : ''));
				return typeof v === 'string' ? h('span.mono', v) : genericValue(v);
			}, typeof rows[0][key] === 'number' ? 'num' : ''])));
		}
		out.append(sec);
	}

	function renderAnalyze(r, s, out) {
		const an = r.analyzer || (s.params || {}).analyzer;
		if (r.trace && !r.result) {
			/* serve runs analyze as a trace + trace report: the trace report's shape */
			return renderTrace(r, s, out, an);
		}
		if (r.measured)
			out.append(h('p.muted', { dataset: { testid: 'analyze-measured' } }, r.measured));
		out.append(h('div.stats.inline', stat('analyzer', an || '?'), r.duration_s !== undefined ? stat('for', CT.fmtDur(r.duration_s)) : null,
			r.events !== undefined ? stat('events', CT.fmtNum(r.events)) : null,
			r.dropped_events ? stat('dropped events', CT.fmtNum(r.dropped_events), { cls: 'bad' }) : null));
		if (r.partial)
			out.append(warnBox('Partial: ' + r.partial));
		if (r.dropped_events)
			out.append(warnBox(`${CT.fmtNum(r.dropped_events)} events were dropped by the runtime: counts are lower bounds.`));
		const res = r.result || {};
		if (an === 'exceptions')
			renderExceptions(res, out);
		else if (an === 'hotpaths' && Array.isArray(res.methods)) {
			out.append(section('Hot methods', h('p.muted.small', CT.fmtNum(res.samples) + ' samples'), table(res.methods, [
				['Method', m => h('span.mono', m.method), 'name'],
				['Self', m => bar((m.self_pct || 0) / 100, (m.self_pct || 0).toFixed(1) + ' %'), 'barcol'],
				['Total', m => (m.total_pct || 0).toFixed(1) + ' %', 'num'],
			])));
		} else if (an === 'allocations' && Array.isArray(res.types)) {
			out.append(section('Allocations', h('p.muted.small', `${CT.fmtBytes(res.bytes)} sampled in ${CT.fmtNum(res.ticks)} ticks`), table(res.types, [
				['Type', t => h('span.mono', t.type), 'name'],
				['Bytes', t => bar((t.share_pct || 0) / 100, CT.fmtBytes(t.bytes)), 'barcol'],
				['Ticks', t => CT.fmtNum(t.ticks), 'num'],
				['Share', t => (t.share_pct || 0).toFixed(1) + ' %', 'num'],
			])));
		} else if (an === 'survivors' && Array.isArray(res.types)) {
			renderHeap({ objects: res.objects, bytes: res.reachable_bytes, roots: res.roots, types: res.types.map(t => ({ type: t.type, count: t.count, shallow: t.shallow_bytes, retained: t.retained_bytes })) }, out);
		} else
			renderGeneric(res, out, 'Result: ' + (an || ''));
		if (r.not_seen && r.not_seen.length)
			out.append(section('Not seen', h('ul', r.not_seen.map(x => h('li', typeof x === 'string' ? x : JSON.stringify(x))))));
		if (r.next && r.next.length)
			out.append(section('Next', h('ul', r.next.map(x => h('li.mono', typeof x === 'string' ? x : JSON.stringify(x))))));
	}

	/* ---------- trace report ---------- */

	function renderTrace(r, s, out, focus) {
		const t = r.trace || {};
		out.append(h('div.stats.inline', stat('events', CT.fmtNum(t.events)), stat('lost events', CT.fmtNum(t.lost_events), { cls: t.lost_events ? 'bad' : '' }),
			stat('duration', CT.fmtDur((t.duration_ns || 0) / 1e9)), stat('file', CT.fmtBytes(t.bytes))));
		if (r.complete === false)
			out.append(warnBox('The trace is incomplete' + (r.error ? ': ' + r.error.message + ' (offset ' + r.error.offset + ')' : '')));
		if (r.exceptions && (r.exceptions.total || (s.params || {}).profile === 'exceptions' || focus === 'exceptions'))
			renderExceptions(r.exceptions, out);
		const gc = r.gc;
		if (gc && (gc.count || focus === 'gc'))
			out.append(section('GC', h('div.stats', stat('GCs', CT.fmtNum(gc.count)), stat('gen 0/1/2', (gc.by_gen || []).join(' / ')),
				stat('induced', (gc.induced_by_gen || []).reduce((a, b) => a + b, 0)), stat('paused', (gc.paused_pct || 0).toFixed(2) + ' %'),
				stat('max pause', CT.fmtDur((gc.pause_max_ns || 0) / 1e9)))));
		if (r.allocations && r.allocations.types && r.allocations.types.length)
			renderGeneric({ types: r.allocations.types }, out, 'Allocations (sampled)');
		if (r.contention && (r.contention.sites && r.contention.sites.length || focus === 'contention'))
			renderContention(r.contention, out);
		if (r.samples && r.samples.top_self && r.samples.top_self.length)
			renderGeneric({ top_self: r.samples.top_self }, out, 'CPU samples');
		if ((s.artifacts || []).some(a => /speedscope\.json$|\.folded$/.test(a.name)) && r.samples && r.samples.in_flame)
			return renderProfile(s, null, out);
		out.append(h('section.card', h('details.events', h('summary', h('strong', 'Events in the trace'), h('span.muted', ` ${CT.fmtNum((r.events || []).length)} kinds, ${CT.fmtNum(t.events)} events`)),
			table((r.events || []).slice(0, 200), [
				['Provider', e => h('span.mono.small', e.provider)], ['Event', e => e.name || '#' + e.id], ['Count', e => CT.fmtNum(e.count), 'num'],
			]))));
	}

	function renderContention(c, out) {
		const sec = section('Lock contention', h('div.stats', stat('contended acquisitions', CT.fmtNum(c.starts)),
			stat('waited in total', CT.fmtDur((c.total_ns || 0) / 1e9)), stat('longest wait', CT.fmtDur((c.max_ns || 0) / 1e9))));
		if (c.timed !== undefined && c.timed < c.starts)
			sec.append(h('p.muted.small', `${CT.fmtNum(c.timed)} of ${CT.fmtNum(c.starts)} waits have a measured time.`));
		const list = h('div.groups');
		for (const site of c.sites || []) {
			list.append(h('details.group', h('summary', h('span.count', CT.fmtNum(site.count) + '×'), ' ',
				h('span.mono', (site.stack || [])[0] || '(no stack)'), h('span.muted', ' · waited ' + CT.fmtDur((site.total_ns || 0) / 1e9))),
			stackList(site.stack)));
		}
		if (!(c.sites || []).length)
			list.append(h('p.muted', 'No lock was contended.'));
		sec.append(list);
		out.append(sec);
	}

	/* ---------- stacks ---------- */

	function renderStacks(r, out) {
		const groups = new Map();
		for (const t of r.threads || []) {
			const key = (t.frames || []).join('\n');
			if (!groups.has(key))
				groups.set(key, []);
			groups.get(key).push(t);
		}
		const sec = section('Threads', h('p.muted.small', `${CT.fmtNum(r.threads_sampled)} threads sampled, ${CT.fmtNum(r.threads_with_managed_frames)} with managed frames; threads with the same stack are grouped.`));
		for (const [key, ts] of Array.from(groups).sort((a, b) => b[1].length - a[1].length)) {
			const frames = key ? key.split('\n') : [];
			sec.append(h('details.group', { open: groups.size <= 6 }, h('summary',
				h('span.count', ts.length + ' thread' + (ts.length > 1 ? 's' : '')), ' ', h('span.mono', frames[0] || '(no managed frame)'),
				h('span.muted.small', ' · ' + ts.map(t => (t.name ? t.name + ' ' : '') + t.tid).join(', '))),
			stackList(frames)));
		}
		out.append(sec);
	}

	/* ---------- counters ---------- */

	function renderCounters(r, out) {
		const vals = r.values || [];
		const by = new Map();
		for (const v of vals) {
			const k = (v.source || v.provider || '') + '/' + v.name + (v.tags ? '[' + v.tags + ']' : '');
			if (!by.has(k))
				by.set(k, { v, pts: [] });
			const t = v.timestamp ? Date.parse(v.timestamp) / 1000 : (v.t || 0);
			by.get(k).pts.push([t, typeof v.value === 'number' ? v.value : null]);
		}
		const grid = h('div.charts');
		out.append(section('Counters', h('p.muted.small', `${CT.fmtNum(vals.length)} values of ${by.size} counters`), grid));
		const rank = c => {
			const i = CT.PREFERRED_COUNTERS.indexOf(c.v.name);
			return i < 0 ? 100 : i;
		};
		for (const c of Array.from(by.values()).sort((a, b) => rank(a) - rank(b))) {
			const canvas = h('canvas');
			const last = c.pts[c.pts.length - 1][1];
			grid.append(h('div.chart', { dataset: { counter: c.v.name } }, h('div.chead', h('span.ctitle', c.v.display_name || c.v.display || c.v.name), h('span.cval', CT.fmtValue(last, c.v.units || c.v.unit))),
				canvas, h('div.cfoot', h('span.muted', c.v.name + (c.v.tags ? ' ' + c.v.tags : '')))));
			const t0 = c.pts[0][0];
			const ch = new CT.LineChart(canvas, { unit: c.v.units || c.v.unit, windowSec: null });
			c.pts.forEach(p => ch.add(p[0] - t0, p[1]));
			CT.onLeave(() => ch.destroy());
		}
	}

	/* ---------- probe: the task's result (docs/tasks/probe.md) ---------- */

	function probeValue(v) {
		if (v === null || v === undefined)
			return '–';
		return (v.type ? v.type + ' ' : '') + String(v.value);
	}

	function renderProbe(rep, out) {
		const methods = rep.methods || [];
		const calls = rep.calls || [];
		const sec = section('Calls', h('div.stats',
			stat('calls', CT.fmtNum(rep.calls_total !== undefined ? rep.calls_total : methods.reduce((a, m) => a + (m.calls || 0), 0)), { testid: 'probe-calls', cls: 'big' }),
			rep.mechanism ? stat('mechanism', rep.mechanism) : null,
			rep.budget_pct !== undefined ? stat('budget', rep.budget_pct + '% of a core') : null));
		if (rep.over_budget)
			sec.append(warnBox('The probe went over its budget and was stopped or handed over.'));
		for (const st of rep.statements || [])
			sec.append(warnBox(String(st)));
		if (methods.length)
			sec.append(h('h3', 'Methods'), table(methods, [
				['Method', m => h('span.mono', m.name || m.method), 'name'],
				['Tier', m => m.tier || '–'],
				['Calls', m => CT.fmtNum(m.calls), 'num'],
			]));
		if (calls.length || rep.calls) {
			sec.append(h('h3', 'Each call' + (rep.calls_shown !== undefined && rep.calls_total > rep.calls_shown ? ` (the first ${CT.fmtNum(rep.calls_shown)} of ${CT.fmtNum(rep.calls_total)})` : '')),
				table(calls, [
					['t (s)', c => c.t_s !== undefined ? (+c.t_s).toFixed(3) : '–', 'num'],
					['Method', c => h('span.mono', c.method), 'name'],
					['Tier', c => c.tier || '–'],
					['Arguments', c => h('span.mono', (c.args || []).map(a => (a.name ? a.name + ' = ' : '') + probeValue(a)).join(', ')), 'name'],
					['Return', c => h('span.mono', probeValue(c.ret))],
					['Latency', c => c.latency_ns !== null && c.latency_ns !== undefined ? CT.fmtDur(c.latency_ns / 1e9) : '–', 'num'],
				], { cls: 'probecalls', empty: 'No call was seen.' }));
		}
		out.append(sec);
	}

	/* ---------- the session page ---------- */

	CT.pageSession = async function (id) {
		const root = CT.main();
		document.title = 'Session · clrtap';
		const head = h('div.pagehead');
		const info = h('div.card.sessinfo');
		const body = h('div.report');
		root.append(head, info, body);
		let s;
		try {
			s = await CT.api('/sessions/' + encodeURIComponent(id));
		} catch (e) {
			root.replaceChildren(CT.errorBox(e, 'Session ' + id));
			return;
		}
		let left = false;
		CT.onLeave(() => {
			left = true;
		});
		let rendered = false;
		let lastSig = null;
		const drawHead = () => {
			/* while only the progress moves, move the bar (a redraw would lose a text selection) */
			const sig = JSON.stringify(Object.assign({}, s, { progress: null }));
			const bar = info.querySelector('.progress');
			if (sig === lastSig && bar) {
				const p = s.progress || {};
				const frac = p.duration_s ? Math.min(1, (p.elapsed_s || 0) / p.duration_s) : null;
				if (frac !== null) {
					bar.querySelector('i').style.width = (frac * 100).toFixed(1) + '%';
					bar.setAttribute('aria-valuenow', Math.round(frac * 100));
				}
				bar.querySelector('span').textContent = s.status === 'queued' ? 'queued…'
					: (frac !== null && frac >= 1 ? (s.kind === 'profile' ? 'finishing (naming frames, writing the report)…' : 'finishing (writing the report)…') : 'running · ' + CT.progressText(p));
				return;
			}
			lastSig = sig;
			document.title = CT.sessionTitle(s) + ' · clrtap';
			const running = s.status === 'running' || s.status === 'queued';
			const cancel = running ? h('button.btn.danger', { type: 'button', id: 'cancel', on: { click: async e => {
				e.currentTarget.disabled = true;
				try {
					s = await CT.api('/sessions/' + encodeURIComponent(s.id), { method: 'DELETE' });
					drawHead();
				} catch (er) {
					CT.toast('Cancel failed: ' + er.message, true);
				}
			} } }, 'Cancel') : null;
			const again = !running ? h('button.btn', { type: 'button', on: { click: e => CT.startSession(s.kind, s.pid, s.params, e.currentTarget).catch(() => {}) } }, 'Run again') : null;
			head.replaceChildren(h('div', h('h1', CT.sessionTitle(s), ' ', CT.statusBadge(s.status)),
				h('div.sub', h('a', { href: '#/process/' + s.pid }, (s.process_name || '?') + ' · pid ' + s.pid), ' · started ', CT.fmtTime(s.created),
					s.ended ? ' · took ' + CT.fmtDur(CT.sessionDuration(s)) : '')),
			h('div.actions', cancel, again));
			const p = s.progress || {};
			const frac = p.duration_s ? Math.min(1, (p.elapsed_s || 0) / p.duration_s) : null;
			const prog = running ? h('div.progress', { role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': frac === null ? undefined : Math.round(frac * 100) },
				h('div.ptrack', h('i' + (frac === null ? '.indet' : ''))), h('span', s.status === 'queued' ? 'queued…' : (frac !== null && frac >= 1 ? (s.kind === 'profile' ? 'finishing (naming frames, writing the report)…' : 'finishing (writing the report)…') : 'running · ' + CT.progressText(p)))) : null;
			if (prog && frac !== null)
				prog.querySelector('i').style.width = (frac * 100).toFixed(1) + '%';
			const params = Object.entries(s.params || {});
			const arts = s.artifacts || [];
			info.replaceChildren(...[
				prog,
				s.error ? CT.errorBox({ message: s.error.message, errname: s.error.name, code: s.error.code }, 'Failed') : null,
				s.status === 'cancelled' ? warnBox('Cancelled: what was collected until then is shown below, if anything.') : null,
				h('div.infocols',
					h('div', h('h3', 'Parameters'), params.length ? h('dl.facts', params.map(([k, v]) => [h('dt', k), h('dd.mono', typeof v === 'object' ? JSON.stringify(v) : String(v))])) : h('p.muted', 'defaults')),
					h('div', h('h3', 'Files'), arts.length ? h('ul.artifacts', arts.map(a => h('li',
						h('a.dl', { href: CT.artifactUrl(s.id, a.name), download: a.name, dataset: { artifact: a.name }, on: { click: ev => downloadWithToken(ev, s, a) } }, '↓ ', a.name),
						h('span.muted', ' ' + CT.fmtBytes(a.size) + (a.content_type ? ' · ' + a.content_type : ''))))) : h('p.muted', running ? 'when done' : 'none')),
					h('div', h('h3', 'Session'), h('dl.facts', h('dt', 'id'), h('dd.mono', s.id), s.exit_code !== undefined && s.exit_code !== null ? [h('dt', 'exit code'), h('dd', String(s.exit_code))] : null))),
			].filter(Boolean));
		};
		drawHead();
		const waitNote = (s.status === 'running' || s.status === 'queued')
			? h('p.muted.waitnote', 'The report appears here when the session is done.') : null;
		if (waitNote)
			body.append(waitNote);
		const poll = async () => {
			while (!left && (s.status === 'running' || s.status === 'queued')) {
				await new Promise(r => setTimeout(r, 500));
				if (left)
					return;
				try {
					s = await CT.api('/sessions/' + encodeURIComponent(id));
				} catch (e) {
					continue;
				}
				drawHead();
			}
			if (!left && !rendered) {
				rendered = true;
				if (waitNote)
					waitNote.remove();
				await renderReport(s, body);
			}
		};
		poll();
	};

	async function downloadWithToken(ev, s, a) {
		if (!CT.token())
			return; /* a plain link: the browser downloads it */
		ev.preventDefault();
		try {
			const r = await fetch(CT.artifactUrl(s.id, a.name), { headers: { Authorization: 'Bearer ' + CT.token() } });
			if (!r.ok)
				throw new Error('HTTP ' + r.status);
			const url = URL.createObjectURL(await r.blob());
			const tmp = h('a', { href: url, download: a.name });
			document.body.append(tmp);
			tmp.click();
			tmp.remove();
			setTimeout(() => URL.revokeObjectURL(url), 10000);
		} catch (e) {
			CT.toast('Download failed: ' + e.message, true);
		}
	}

	async function renderReport(s, out) {
		let report = null;
		if (s.report || s.status === 'done') {
			try {
				report = await CT.api('/sessions/' + encodeURIComponent(s.id) + '/report');
			} catch (e) {
				if (e.status !== 404)
					out.append(CT.errorBox(e, 'Could not load the report'));
			}
		}
		if (typeof report === 'string') {
			try {
				report = JSON.parse(report);
			} catch (e) {
				out.append(section('Report', h('pre.mono', report)));
				return;
			}
		}
		try {
			switch (s.status === 'failed' && !report ? '' : s.kind) {
			case '':
				break;
			case 'profile':
				await renderProfile(s, report, out);
				break;
			case 'analyze':
				if (report)
					renderAnalyze(report, s, out);
				break;
			case 'doctor':
				if (report)
					renderDoctor(report, out);
				break;
			case 'gcdump':
				if (report)
					renderHeap(report, out);
				break;
			case 'trace':
				if (report)
					await renderTrace(report, s, out);
				break;
			case 'stacks':
				if (report)
					renderStacks(report, out);
				break;
			case 'counters':
				if (report)
					renderCounters(report, out);
				break;
			case 'probe':
				if (report)
					renderProbe(report, out);
				break;
			default:
				if (report)
					renderGeneric(report, out, 'Report');
			}
		} catch (e) {
			console.error(e);
			out.append(CT.errorBox(e, 'Could not draw the report'));
		}
		/* the command's own messages (warnings, what it could not see) */
		const msg = (s.artifacts || []).find(a => a.name === 'stderr.txt');
		if (msg && msg.size > 0 && msg.size <= 65536) {
			try {
				const text = await fetchArtifactText(s, msg.name);
				out.append(h('section.card', h('details.messages', { open: s.status === 'failed' },
					h('summary', h('strong', 'Messages of the command'), h('span.muted', ` ${text.split('\n').filter(Boolean).length} lines`)),
					h('pre.mono.msgs', text))));
			} catch (e) { /* the report stands without them */ }
		}
		if (report && typeof report === 'object')
			out.append(rawJson(report));
	}

	/* ---------- differential flame graph ---------- */

	CT.pageDiff = async function (a, b) {
		const root = CT.main();
		document.title = 'Profile diff · clrtap';
		let sa, sb;
		try {
			[sa, sb] = await Promise.all([CT.api('/sessions/' + encodeURIComponent(a)), CT.api('/sessions/' + encodeURIComponent(b))]);
		} catch (e) {
			root.append(CT.errorBox(e, 'Could not load the sessions'));
			return;
		}
		const lab = s => `${s.process_name || '?'} pid ${s.pid}, ${CT.fmtTime(s.created)}`;
		const swap = h('a.btn', { href: `#/diff/${encodeURIComponent(b)}/${encodeURIComponent(a)}` }, 'Swap before/after');
		root.append(h('div.pagehead', h('div', h('h1', 'Differential flame graph'),
			h('div.sub', 'Before: ', h('a', { href: '#/session/' + encodeURIComponent(a) }, lab(sa)), ' → after: ', h('a', { href: '#/session/' + encodeURIComponent(b) }, lab(sb)))),
		h('div.actions', swap)));
		const load = async s => {
			const rep = await CT.api('/sessions/' + encodeURIComponent(s.id) + '/report').catch(() => null);
			const got = await CT.profileStacks(s, rep);
			if (!got)
				throw new Error('session ' + s.id + ' has no profile');
			return got;
		};
		let ga, gb;
		try {
			[ga, gb] = await Promise.all([load(sa), load(sb)]);
		} catch (e) {
			root.append(CT.errorBox(e, 'Could not read the profiles'));
			return;
		}
		const widthSel = h('select', { 'aria-label': 'frame width' }, h('option', { value: 'after' }, 'width: after'), h('option', { value: 'before' }, 'width: before'));
		const card = h('section.card', h('div.cardhead', h('h2', 'Change of each frame\'s share of all samples'), widthSel),
			h('p.muted.small', 'Shares are compared, not sample counts, so profiles of different length compare fairly. Red: the frame (with what it calls) takes a larger share after; blue: smaller. Hover for numbers.'));
		const fbox = h('div#flame');
		card.append(fbox);
		root.append(card);
		const fg = new CT.FlameGraph(fbox, { diff: true });
		CT.onLeave(() => fg.destroy());
		const draw = () => fg.setStacks(ga.stacks, gb.stacks, widthSel.value);
		widthSel.addEventListener('change', draw);
		draw();
		const tree = CT.flameDiffTree(ga.stacks, gb.stacks, 'after');
		const rows = CT.flameDiffTop(tree).map(r => Object.assign(r, { d: r.selfB - r.selfA }))
			.filter(r => Math.abs(r.d) > 0.0005).sort((x, y) => Math.abs(y.d) - Math.abs(x.d)).slice(0, 15);
		const sgn = d => (d >= 0 ? '+' : '') + (d * 100).toFixed(2) + ' pp';
		root.append(section('Biggest changes (own samples)', table(rows, [
			['Method', r => h('span.mono', r.name), 'name'],
			['Before', r => CT.pct(r.selfA), 'num'],
			['After', r => CT.pct(r.selfB), 'num'],
			['Change', r => h('span.' + (r.d > 0 ? 'up' : 'down'), sgn(r.d)), 'num'],
		], { empty: 'No method\'s share changed by more than 0.05 percentage points.' })));
	};
})();
