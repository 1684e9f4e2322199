/* SPDX-License-Identifier: MIT */
/*
 * flame.js - flame graphs on SVG, written for clrtap's UI: one profile (frame
 * width = samples or time, colour = kind of code) or the difference of two
 * (width = the "after" profile, colour = change of each frame's share of all
 * samples: red grew, blue shrank). Click a frame to zoom into it, click an
 * ancestor (or press Escape / "Reset zoom") to go back, type in the search
 * box to highlight frames. Every label is an SVG <text> node holding the
 * name as text (never markup), so target-chosen names cannot inject anything.
 *
 * Input: stacks [{frames: [root, ..., leaf], count: N}], from a report, a
 * speedscope file or folded text (parsers below).
 */
'use strict';
(function () {
	const CT = window.CT = window.CT || {};
	const SVGNS = 'http://www.w3.org/2000/svg';
	const ROW = 18;
	const MAX_NODES = 200000;

	/* ---------- input parsers ---------- */

	/* "a;b;c 12" lines -> stacks */
	CT.parseFolded = function (text) {
		const out = [];
		for (const line of String(text).split('\n')) {
			const m = /^(.*) (\d+(?:\.\d+)?)\s*$/.exec(line);
			if (!m || !m[1])
				continue;
			out.push({ frames: m[1].split(';'), count: Number(m[2]) });
		}
		return out;
	};

	/* speedscope file (sampled or evented profiles; the first profile) -> stacks */
	CT.parseSpeedscope = function (doc) {
		const frames = (doc.shared && doc.shared.frames || []).map(f => String(f.name));
		const out = [];
		const prof = (doc.profiles || [])[0];
		if (!prof)
			return out;
		if (prof.type === 'sampled') {
			const w = prof.weights || [];
			const agg = new Map();
			(prof.samples || []).forEach((s, i) => {
				const key = s.join(',');
				agg.set(key, (agg.get(key) || 0) + (w[i] === undefined ? 1 : w[i]));
			});
			for (const [key, count] of agg) {
				const idx = key === '' ? [] : key.split(',');
				out.push({ frames: idx.map(i => frames[+i] || '[unknown]'), count });
			}
		} else if (prof.type === 'evented') {
			const stack = [];
			let last = prof.startValue || 0;
			const agg = new Map();
			for (const ev of prof.events || []) {
				if (stack.length && ev.at > last) {
					const key = stack.join(',');
					agg.set(key, (agg.get(key) || 0) + (ev.at - last));
				}
				last = ev.at;
				if (ev.type === 'O')
					stack.push(ev.frame);
				else
					stack.pop();
			}
			for (const [key, count] of agg)
				out.push({ frames: key.split(',').map(i => frames[+i] || '[unknown]'), count });
		}
		return out;
	};

	/* ---------- trees ---------- */

	function node(name, parent) {
		return { name, parent, v: 0, self: 0, a: 0, b: 0, selfA: 0, selfB: 0, kids: new Map(), list: null };
	}

	function finish(root) {
		const walk = n => {
			n.list = Array.from(n.kids.values()).sort((x, y) => y.v - x.v || (x.name < y.name ? -1 : 1));
			n.list.forEach(walk);
		};
		walk(root);
		return root;
	}

	/* stacks -> tree; n.v = total weight of the subtree, n.self = own */
	CT.flameTree = function (stacks) {
		const root = node('all', null);
		let count = 0;
		for (const s of stacks) {
			const c = Number(s.count) || 0;
			if (c <= 0)
				continue;
			let n = root;
			n.v += c;
			for (const f of s.frames) {
				let k = n.kids.get(f);
				if (!k) {
					if (++count > MAX_NODES)
						break;
					k = node(f, n);
					n.kids.set(f, k);
				}
				k.v += c;
				n = k;
			}
			n.self += c;
		}
		return finish(root);
	};

	/*
	 * Two stack sets -> one tree: n.a/n.b = share (0..1) of all samples of
	 * before/after, n.selfA/n.selfB likewise for own samples. n.v (the width)
	 * is the after share, or the before share with widthBy 'before'.
	 */
	CT.flameDiffTree = function (before, after, widthBy) {
		const root = node('all', null);
		const tot = ss => ss.reduce((s, x) => s + (Number(x.count) > 0 ? Number(x.count) : 0), 0);
		const ta = tot(before) || 1, tb = tot(after) || 1;
		const add = (ss, total, key, selfKey) => {
			for (const s of ss) {
				const c = (Number(s.count) || 0) / total;
				if (c <= 0)
					continue;
				let n = root;
				n[key] += c;
				for (const f of s.frames) {
					let k = n.kids.get(f);
					if (!k) {
						k = node(f, n);
						n.kids.set(f, k);
					}
					k[key] += c;
					n = k;
				}
				n[selfKey] += c;
			}
		};
		add(before, ta, 'a', 'selfA');
		add(after, tb, 'b', 'selfB');
		const walk = n => {
			n.v = widthBy === 'before' ? n.a : n.b;
			n.self = widthBy === 'before' ? n.selfA : n.selfB;
			n.kids.forEach(walk);
		};
		walk(root);
		root.totals = { before: ta, after: tb };
		return finish(root);
	};

	/* frames by own weight: [{name, self, total}] summed over every place the name occurs */
	CT.flameTopSelf = function (root, n) {
		const self = new Map(), total = new Map();
		const walk = (x, seen) => {
			if (x.parent) {
				self.set(x.name, (self.get(x.name) || 0) + x.self);
				if (!seen.has(x.name))
					total.set(x.name, (total.get(x.name) || 0) + x.v);
			}
			let s2 = seen;
			if (x.parent) {
				s2 = new Set(seen);
				s2.add(x.name);
			}
			x.list.forEach(k => walk(k, s2));
		};
		walk(root, new Set());
		return Array.from(self.entries()).map(([name, s]) => ({ name, self: s, total: total.get(name) || 0 }))
			.sort((x, y) => y.self - x.self || y.total - x.total).slice(0, n || 20);
	};

	/* the same summed per name for a diff tree: [{name, a, b, selfA, selfB}] */
	CT.flameDiffTop = function (root) {
		const m = new Map();
		const walk = x => {
			if (x.parent) {
				const e = m.get(x.name) || { name: x.name, selfA: 0, selfB: 0 };
				e.selfA += x.selfA;
				e.selfB += x.selfB;
				m.set(x.name, e);
			}
			x.list.forEach(walk);
		};
		walk(root);
		return Array.from(m.values());
	};

	/* ---------- colours ---------- */

	function hash(s) {
		let h = 2166136261;
		for (let i = 0; i < s.length; i++) {
			h ^= s.charCodeAt(i);
			h = Math.imul(h, 16777619);
		}
		return ((h >>> 0) % 1000) / 1000;
	}

	/* kind of a frame from clrtap's naming: "[k] f", "lib.so!f", "Ns.Type::M" */
	CT.frameKind = function (name) {
		if (name.startsWith('[k] '))
			return 'kernel';
		if (/^\[[^\]]*\]/.test(name) && name.indexOf('!') < 0)
			return 'other';
		if (name.indexOf('!') >= 0)
			return 'native';
		if (/^(System|Microsoft|Internal)\./.test(name))
			return 'framework';
		if (name.indexOf('::') >= 0)
			return 'managed';
		return 'other';
	};

	function kindColor(name) {
		const h = hash(name);
		switch (CT.frameKind(name)) {
		case 'managed': return `hsl(${Math.round(8 + h * 22)}, 78%, ${Math.round(60 + h * 8)}%)`;
		case 'framework': return `hsl(${Math.round(44 + h * 10)}, 85%, ${Math.round(64 + h * 8)}%)`;
		case 'native': return `hsl(${Math.round(80 + h * 25)}, 35%, ${Math.round(62 + h * 8)}%)`;
		case 'kernel': return `hsl(${Math.round(198 + h * 18)}, 55%, ${Math.round(66 + h * 8)}%)`;
		default: return `hsl(0, 0%, ${Math.round(76 + h * 8)}%)`;
		}
	}

	CT.flameLegend = [
		['managed', 'your .NET code', kindColor('Ns.T::m')],
		['framework', '.NET framework', kindColor('System.X::y')],
		['native', 'native (lib!func)', kindColor('lib.so!f')],
		['kernel', 'kernel', kindColor('[k] f')],
		['other', 'other', kindColor('[x]')],
	];

	function diffColor(d, maxAbs) {
		if (!maxAbs || Math.abs(d) < 1e-12)
			return 'hsl(0, 0%, 94%)';
		const k = Math.min(1, Math.abs(d) / maxAbs);
		const light = Math.round(93 - 38 * Math.sqrt(k));
		return d > 0 ? `hsl(2, 85%, ${light}%)` : `hsl(215, 85%, ${light}%)`;
	}

	/* short form: drop the namespace of "Ns.Sub.Type::Method" */
	function shortName(name) {
		const i = name.indexOf('::');
		if (i < 0)
			return name;
		const head = name.slice(0, i);
		const j = head.lastIndexOf('.', head.indexOf('<') >= 0 ? head.indexOf('<') : head.length);
		return j >= 0 ? name.slice(j + 1) : name;
	}

	const vis = s => CT.vis(s);

	let measureCtx = null;
	function textWidth(s) {
		if (!measureCtx) {
			measureCtx = document.createElement('canvas').getContext('2d');
			measureCtx.font = '12px ui-sans-serif, system-ui, "DejaVu Sans", sans-serif';
		}
		return measureCtx.measureText(s).width;
	}

	function fitLabel(name, px) {
		if (px < 34)
			return '';
		if (textWidth(name) <= px)
			return name;
		const s = shortName(name);
		if (textWidth(s) <= px)
			return s;
		let n = Math.floor(s.length * px / textWidth(s)) - 1;
		while (n > 3 && textWidth(s.slice(0, n) + '…') > px)
			n--;
		return n > 3 ? s.slice(0, n) + '…' : '';
	}

	function el(tag, attrs, parent) {
		const e = document.createElementNS(SVGNS, tag);
		for (const k in attrs)
			e.setAttribute(k, attrs[k]);
		if (parent)
			parent.appendChild(e);
		return e;
	}

	function pct(x) {
		if (x >= 0.1)
			return (x * 100).toFixed(1) + ' %';
		return (x * 100).toFixed(2) + ' %';
	}

	/* ---------- the widget ---------- */

	class FlameGraph {
		/*
		 * opts: {diff: bool, unit: 'samples'|'ns', title, onZoom}
		 * The container gets a toolbar, a zoom trail, the SVG and a tooltip.
		 */
		constructor(container, opts) {
			this.opts = Object.assign({ diff: false, unit: 'samples' }, opts || {});
			this.box = container;
			this.box.classList.add('flame');
			this.box.replaceChildren();
			const bar = document.createElement('div');
			bar.className = 'flame-toolbar';
			this.search = document.createElement('input');
			this.search.type = 'search';
			this.search.placeholder = 'Search frames (text or /regex/)';
			this.search.className = 'flame-search';
			this.search.setAttribute('aria-label', 'search frames');
			this.matchInfo = document.createElement('span');
			this.matchInfo.className = 'flame-match';
			this.reset = document.createElement('button');
			this.reset.type = 'button';
			this.reset.className = 'btn small';
			this.reset.textContent = 'Reset zoom';
			this.reset.disabled = true;
			const legend = document.createElement('span');
			legend.className = 'flame-legend';
			if (this.opts.diff) {
				for (const [cls, label] of [['grew', 'share grew (after > before)'], ['shrank', 'share shrank'], ['same', 'unchanged']]) {
					const chip = document.createElement('span');
					chip.className = 'chip diff-' + cls;
					chip.textContent = label;
					legend.appendChild(chip);
				}
			} else {
				for (const [, label, col] of CT.flameLegend) {
					const chip = document.createElement('span');
					chip.className = 'chip';
					const sw = document.createElement('i');
					sw.style.background = col;
					chip.append(sw, label);
					legend.appendChild(chip);
				}
			}
			this.only = document.createElement('input');
			this.only.type = 'checkbox';
			this.only.className = 'flame-only';
			const onlyLab = document.createElement('label');
			onlyLab.className = 'flame-onlylab';
			onlyLab.title = 'hide native and kernel frames: each stack keeps only its .NET methods';
			onlyLab.append(this.only, ' .NET frames only');
			this.only.addEventListener('change', () => this.rebuild());
			bar.append(this.search, this.matchInfo, this.reset, onlyLab, legend);
			this.trail = document.createElement('div');
			this.trail.className = 'flame-trail';
			this.svg = el('svg', { class: 'flame-svg', role: 'img', 'aria-label': 'flame graph' });
			this.tip = document.createElement('div');
			this.tip.className = 'flame-tip';
			this.tip.hidden = true;
			this.box.append(bar, this.trail, this.svg, this.tip);
			this.focus = null;
			this.drawn = [];
			this.search.addEventListener('input', () => this.render());
			this.reset.addEventListener('click', () => this.zoom(null));
			this.svg.addEventListener('mousemove', e => this.hover(e));
			this.svg.addEventListener('mouseleave', () => {
				this.tip.hidden = true;
			});
			this.svg.addEventListener('click', e => {
				const n = this.nodeAt(e);
				if (n)
					this.zoom(n === this.root ? null : n);
			});
			this.keyh = e => {
				if (e.key === 'Escape' && this.focus)
					this.zoom(null);
			};
			document.addEventListener('keydown', this.keyh);
			this.ro = new ResizeObserver(() => {
				const w = this.svg.clientWidth;
				if (w && w !== this.lastW)
					this.render();
			});
			this.ro.observe(this.box);
		}

		destroy() {
			this.ro.disconnect();
			document.removeEventListener('keydown', this.keyh);
		}

		/* stacks (or before/after for a diff): kept, so ".NET frames only" can rebuild the tree */
		setStacks(stacks, after, widthBy) {
			this.src = { stacks, after, widthBy };
			this.rebuild();
		}

		rebuild() {
			if (!this.src)
				return;
			const keep = this.only.checked ? ss => ss.map(x => ({ count: x.count, frames: x.frames.filter(f => {
				const k = CT.frameKind(f);
				return k === 'managed' || k === 'framework';
			}) })).filter(x => x.frames.length) : ss => ss;
			const { stacks, after, widthBy } = this.src;
			this.setTree(this.opts.diff ? CT.flameDiffTree(keep(stacks), keep(after), widthBy) : CT.flameTree(keep(stacks)));
		}

		setTree(root) {
			this.root = root;
			this.focus = null;
			this.maxAbs = 0;
			if (this.opts.diff) {
				const walk = n => {
					this.maxAbs = Math.max(this.maxAbs, Math.abs(n.b - n.a));
					n.list.forEach(walk);
				};
				root.list.forEach(walk);
			}
			this.render();
			if (this.opts.onTree)
				this.opts.onTree(root);
		}

		zoom(n) {
			this.focus = n;
			this.reset.disabled = !n;
			this.render();
			if (this.opts.onZoom)
				this.opts.onZoom(n);
		}

		matcher() {
			const q = this.search.value.trim();
			if (!q)
				return null;
			const m = /^\/(.+)\/([i]*)$/.exec(q);
			if (m) {
				try {
					const re = new RegExp(m[1], m[2]);
					return s => re.test(s);
				} catch (e) {
					return null;
				}
			}
			const lq = q.toLowerCase();
			return s => s.toLowerCase().indexOf(lq) >= 0;
		}

		render() {
			const root = this.root;
			this.svg.replaceChildren();
			this.drawn = [];
			if (!root)
				return;
			const W = this.svg.clientWidth || this.box.clientWidth || 800;
			this.lastW = W;
			const match = this.matcher();
			const focus = this.focus || root;
			/* ancestors of the focus, full width */
			const chain = [];
			for (let n = focus; n; n = n.parent)
				chain.unshift(n);
			const items = [];
			chain.forEach((n, d) => items.push({ n, x: 0, w: W, d, dim: n !== focus }));
			const base = chain.length - 1;
			const scale = focus.v > 0 ? W / focus.v : 0;
			let maxD = base;
			const place = (n, x, d) => {
				let cx = x;
				for (const k of n.list) {
					const w = k.v * scale;
					if (w >= 0.35) {
						items.push({ n: k, x: cx, w, d, dim: false });
						if (d > maxD)
							maxD = d;
						if (items.length < 30000)
							place(k, cx, d + 1);
					}
					cx += w;
				}
			};
			place(focus, 0, base + 1);
			const H = (maxD + 1) * ROW + 2;
			this.svg.setAttribute('height', H);
			this.svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
			let matched = 0;
			const matchedSeen = new Set();
			const frag = document.createDocumentFragment();
			for (const it of items) {
				const n = it.n;
				const g = el('g', { class: 'fr' + (it.dim ? ' dim' : '') });
				g.dataset.i = this.drawn.length;
				this.drawn.push(n);
				let fill;
				if (n === root)
					fill = 'hsl(220, 10%, 82%)';
				else if (this.opts.diff)
					fill = diffColor(n.b - n.a, this.maxAbs);
				else
					fill = kindColor(n.name);
				const hit = match && n !== root && match(n.name);
				if (hit) {
					fill = 'hsl(300, 75%, 62%)';
					/* count a matched subtree once (not again for matches inside it) */
					let p = n.parent, inside = false;
					while (p) {
						if (matchedSeen.has(p)) {
							inside = true;
							break;
						}
						p = p.parent;
					}
					if (!inside && !it.dim)
						matched += n.v;
					matchedSeen.add(n);
				}
				el('rect', { x: it.x.toFixed(2), y: it.d * ROW, width: Math.max(it.w - 0.6, 0.3).toFixed(2), height: ROW - 1, rx: 2, fill }, g);
				const label = fitLabel(n === root ? this.rootLabel() : vis(n.name), it.w - 8);
				if (label) {
					const t = el('text', { x: (it.x + 4).toFixed(2), y: it.d * ROW + 12.5 }, g);
					t.textContent = label;
				}
				frag.appendChild(g);
			}
			this.svg.appendChild(frag);
			this.matchInfo.textContent = match ? `matched ${pct(focus.v ? matched / focus.v : 0)} of ${this.focus ? 'the zoomed frame' : 'all'}` : '';
			/* zoom trail */
			this.trail.replaceChildren();
			if (this.focus) {
				const lab = document.createElement('span');
				lab.textContent = 'Zoomed into: ';
				this.trail.appendChild(lab);
				chain.forEach((n, i) => {
					if (i)
						this.trail.append(' › ');
					const a = document.createElement('button');
					a.type = 'button';
					a.className = 'linkish';
					a.textContent = n === root ? 'all' : vis(shortName(n.name));
					a.title = vis(n.name);
					a.addEventListener('click', () => this.zoom(n === root ? null : n));
					this.trail.appendChild(a);
				});
			}
		}

		rootLabel() {
			const r = this.root;
			if (this.opts.diff)
				return `all (before ${CT.fmtNum(r.totals.before)} → after ${CT.fmtNum(r.totals.after)} ${this.opts.unit})`;
			return `all (${CT.fmtNum(r.v)} ${this.opts.unit}${this.only.checked ? ' with .NET frames' : ''})`;
		}

		nodeAt(e) {
			const g = e.target.closest && e.target.closest('g.fr');
			return g ? this.drawn[+g.dataset.i] : null;
		}

		hover(e) {
			const n = this.nodeAt(e);
			if (!n) {
				this.tip.hidden = true;
				return;
			}
			const root = this.root;
			const lines = [];
			if (this.opts.diff) {
				lines.push(['before', `${pct(n.a)} of all (self ${pct(n.selfA)})`]);
				lines.push(['after', `${pct(n.b)} of all (self ${pct(n.selfB)})`]);
				const d = (n.b - n.a) * 100;
				lines.push(['change', `${d >= 0 ? '+' : ''}${d.toFixed(2)} percentage points`]);
			} else {
				const u = this.opts.unit === 'ns' ? 'time' : this.opts.unit;
				lines.push(['total', `${CT.fmtNum(n.v)} ${u} · ${pct(root.v ? n.v / root.v : 0)}`]);
				lines.push(['self', `${CT.fmtNum(n.self)} ${u} · ${pct(root.v ? n.self / root.v : 0)}`]);
				if (this.focus && this.focus.v)
					lines.push(['of zoom', pct(n.v / this.focus.v)]);
			}
			const title = document.createElement('div');
			title.className = 'tip-name';
			title.textContent = n === root ? 'all' : vis(n.name);
			const tbl = document.createElement('div');
			tbl.className = 'tip-rows';
			for (const [k, v] of lines) {
				const a = document.createElement('span');
				a.textContent = k;
				const b = document.createElement('span');
				b.textContent = v;
				tbl.append(a, b);
			}
			const hint = document.createElement('div');
			hint.className = 'tip-hint';
			hint.textContent = n === this.focus ? 'click: zoom out' : 'click: zoom in';
			this.tip.replaceChildren(title, tbl, hint);
			this.tip.hidden = false;
			const r = this.box.getBoundingClientRect();
			let x = e.clientX - r.left + 14, y = e.clientY - r.top + 16;
			const tw = this.tip.offsetWidth, th = this.tip.offsetHeight;
			if (x + tw > r.width)
				x = Math.max(0, e.clientX - r.left - tw - 10);
			if (y + th > r.height && y - th - 24 > 0)
				y = y - th - 24;
			this.tip.style.left = x + 'px';
			this.tip.style.top = y + 'px';
		}
	}
	CT.FlameGraph = FlameGraph;
	CT.shortName = shortName;
	CT.pct = pct;
})();
