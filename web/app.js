/* SPDX-License-Identifier: MIT */
/*
 * app.js - clrtap's web UI: the API client (bearer token from ?token=, kept
 * in sessionStorage), server-sent events over fetch (so the token goes in a
 * header), a #fragment router and the pages: processes, process detail with
 * live counters, new analysis, sessions, session report, profile diff.
 *
 * Every string from the server (which may come from a hostile target) goes
 * into the DOM as text (textContent / text nodes), never as markup.
 */
'use strict';
(function () {
	const CT = window.CT = window.CT || {};
	const TOKEN_KEY = 'clrtap-token';

	/* ---------- token ---------- */
	(function takeToken() {
		const u = new URL(location.href);
		const t = u.searchParams.get('token');
		if (t !== null) {
			sessionStorage.setItem(TOKEN_KEY, t);
			u.searchParams.delete('token');
			history.replaceState(null, '', u.pathname + u.search + u.hash);
		}
	})();
	CT.token = () => sessionStorage.getItem(TOKEN_KEY);
	const authHeaders = () => (CT.token() ? { Authorization: 'Bearer ' + CT.token() } : {});

	/*
	 * Target-chosen text made visible: C0/C1 control characters (but newline
	 * and tab) as \xNN and bidi overrides/isolates as \u{NNNN}, so an escape
	 * sequence or a right-to-left override shows as what it is.
	 */
	CT.vis = function (s) {
		return String(s).replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g, c => {
			const n = c.charCodeAt(0);
			return n < 0x100 ? '\\x' + n.toString(16).padStart(2, '0') : '\\u{' + n.toString(16) + '}';
		});
	};

	/* ---------- DOM helper ---------- */
	/* h('div.cls#id', {attr..., on: {click: fn}}, child, 'text', [children]) */
	function h(spec, attrs, ...kids) {
		const m = /^([a-z0-9]+)?((?:[.#][\w-]+)*)$/i.exec(spec);
		const e = document.createElement(m[1] || 'div');
		(m[2].match(/[.#][\w-]+/g) || []).forEach(p => {
			if (p[0] === '.')
				e.classList.add(p.slice(1));
			else
				e.id = p.slice(1);
		});
		if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
			kids.unshift(attrs);
			attrs = null;
		}
		for (const k in attrs || {}) {
			const v = attrs[k];
			if (v === undefined || v === null || v === false)
				continue;
			if (k === 'on')
				for (const ev in v)
					e.addEventListener(ev, v[ev]);
			else if (k === 'style')
				Object.assign(e.style, v);
			else if (k === 'dataset')
				Object.assign(e.dataset, v);
			else if (k in e && typeof v !== 'string' || k === 'value' || k === 'checked' || k === 'disabled')
				e[k] = v;
			else
				e.setAttribute(k, v === true ? '' : v);
		}
		const add = c => {
			if (c === null || c === undefined || c === false)
				return;
			if (Array.isArray(c))
				c.forEach(add);
			else if (c instanceof Node)
				e.appendChild(c);
			else
				e.appendChild(document.createTextNode(CT.vis(c)));
		};
		kids.forEach(add);
		return e;
	}
	CT.h = h;

	/* ---------- API ---------- */
	class ApiError extends Error {
		constructor(status, body) {
			const er = body && body.error;
			super(er && er.message ? er.message : 'HTTP ' + status);
			this.status = status;
			this.body = body;
			this.code = er ? er.code : null;
			this.errname = er ? er.name : null;
		}
	}

	CT.api = async function (path, opts) {
		opts = opts || {};
		const headers = Object.assign({ Accept: 'application/json' }, authHeaders(), opts.headers || {});
		let body = opts.body;
		if (body !== undefined && typeof body !== 'string') {
			body = JSON.stringify(body);
			headers['Content-Type'] = 'application/json';
		}
		let r;
		try {
			r = await fetch('/api/v1' + path, { method: opts.method || 'GET', headers, body, signal: opts.signal });
		} catch (e) {
			setConn(false, e.message);
			throw e;
		}
		setConn(r.status !== 401, r.status === 401 ? 'token needed' : null);
		const ct = r.headers.get('content-type') || '';
		let data;
		if (opts.raw)
			data = await r.text();
		else if (ct.indexOf('json') >= 0)
			data = await r.json().catch(() => null);
		else
			data = await r.text();
		if (!r.ok) {
			let b = data;
			if (typeof b === 'string') {
				try {
					b = JSON.parse(b);
				} catch (e) { /* not JSON */ }
			}
			throw new ApiError(r.status, b);
		}
		return data;
	};

	CT.artifactUrl = (id, name) => '/api/v1/sessions/' + encodeURIComponent(id) + '/artifacts/' + encodeURIComponent(name);

	/*
	 * Server-sent events read through fetch (EventSource cannot send the
	 * bearer header). onEvent(type, data) gets parsed JSON (or the text when
	 * it is not JSON). onState('open'|'closed'|'error', detail). With
	 * opts.reconnect the stream is opened again 2 s after it ends.
	 * Returns a function that stops it.
	 */
	CT.sse = function (path, onEvent, onState, opts) {
		opts = opts || {};
		const ctl = new AbortController();
		onState = onState || (() => {});
		(async () => {
			for (;;) {
				try {
					const r = await fetch('/api/v1' + path, {
						headers: Object.assign({ Accept: 'text/event-stream' }, authHeaders()),
						signal: ctl.signal, cache: 'no-store',
					});
					if (!r.ok) {
						let msg = 'HTTP ' + r.status;
						try {
							const b = await r.json();
							if (b && b.error && b.error.message)
								msg = b.error.message;
						} catch (e) { /* not JSON */ }
						onState('error', msg, r.status);
						if (r.status >= 400 && r.status < 500)
							return;
					} else {
						onState('open');
						const rd = r.body.getReader();
						const dec = new TextDecoder();
						let buf = '';
						for (;;) {
							const { value, done } = await rd.read();
							if (done)
								break;
							buf += dec.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
							let i;
							while ((i = buf.indexOf('\n\n')) >= 0) {
								const block = buf.slice(0, i);
								buf = buf.slice(i + 2);
								let type = 'message';
								const data = [];
								for (const line of block.split('\n')) {
									if (line.startsWith(':'))
										continue;
									const c = line.indexOf(':');
									const f = c < 0 ? line : line.slice(0, c);
									let v = c < 0 ? '' : line.slice(c + 1);
									if (v.startsWith(' '))
										v = v.slice(1);
									if (f === 'event')
										type = v;
									else if (f === 'data')
										data.push(v);
								}
								if (!data.length)
									continue;
								const text = data.join('\n');
								let parsed = text;
								try {
									parsed = JSON.parse(text);
								} catch (e) { /* plain text */ }
								try {
									onEvent(type, parsed);
								} catch (e) {
									console.error(e);
								}
							}
						}
						onState('closed');
					}
				} catch (e) {
					if (ctl.signal.aborted)
						return;
					onState('error', e.message);
				}
				if (!opts.reconnect || ctl.signal.aborted)
					return;
				await new Promise(res => setTimeout(res, 2000));
				if (ctl.signal.aborted)
					return;
			}
		})();
		return () => ctl.abort();
	};

	/* ---------- small UI pieces ---------- */
	let connOk = null;
	function setConn(ok, why) {
		const c = document.getElementById('conn');
		if (!c || connOk === ok && !why)
			return;
		connOk = ok;
		c.className = 'conn ' + (ok ? 'ok' : 'bad');
		c.textContent = ok ? 'connected' : (why || 'no connection');
		c.title = ok ? 'the API answers' : 'API: ' + (why || 'no connection');
	}

	CT.toast = function (msg, bad) {
		const t = document.getElementById('toast');
		t.textContent = msg;
		t.className = 'toast' + (bad ? ' bad' : '');
		t.hidden = false;
		clearTimeout(CT.toast.timer);
		CT.toast.timer = setTimeout(() => {
			t.hidden = true;
		}, bad ? 7000 : 3500);
	};

	CT.errorBox = function (e, what) {
		const box = h('div.errorbox', { role: 'alert' },
			h('strong', what ? what + ': ' : 'Error: '), e.message || String(e));
		if (e.errname || e.code !== undefined && e.code !== null)
			box.appendChild(h('div.muted', [e.code !== null && e.code !== undefined ? 'exit code ' + e.code : null, e.errname ? '(' + e.errname + ')' : null,
				e.status ? 'HTTP ' + e.status : null].filter(Boolean).join(' ')));
		if (e.status === 401)
			box.appendChild(h('div', 'This server needs a token: open the address it printed at start (…/?token=…).'));
		return box;
	};

	CT.statusBadge = s => h('span.badge.st-' + (s || 'unknown'), { dataset: { status: s || '' } }, s || '?');

	CT.containerBadge = function (c) {
		if (!c || !c.namespaced && !c.id && !c.pod_uid)
			return null;
		const parts = [];
		if (c.id)
			parts.push('container ' + c.id);
		if (c.pod_uid)
			parts.push('pod ' + c.pod_uid);
		if (!parts.length)
			parts.push('own PID/mount namespace');
		return h('span.badge.container', { title: parts.join(', '), dataset: { container: c.id || 'namespaced' } },
			'⬡ ', c.id ? 'container ' + String(c.id).slice(0, 12) : 'namespaced');
	};

	CT.relTime = function (iso) {
		if (!iso)
			return '–';
		const t = Date.parse(iso);
		if (Number.isNaN(t))
			return iso;
		const s = (Date.now() - t) / 1000;
		if (s < 5)
			return 'just now';
		if (s < 60)
			return Math.round(s) + ' s ago';
		if (s < 3600)
			return Math.round(s / 60) + ' min ago';
		if (s < 86400)
			return Math.round(s / 3600) + ' h ago';
		return new Date(t).toISOString().slice(0, 16).replace('T', ' ');
	};
	CT.fmtTime = iso => {
		const t = Date.parse(iso);
		return Number.isNaN(t) ? (iso || '–') : new Date(t).toISOString().slice(0, 19).replace('T', ' ') + ' UTC';
	};
	CT.fmtDur = s => {
		if (s === null || s === undefined || Number.isNaN(s))
			return '–';
		if (s < 1)
			return Math.round(s * 1000) + ' ms';
		if (s < 120)
			return (s < 10 ? s.toFixed(1) : Math.round(s)) + ' s';
		return Math.floor(s / 60) + ' min ' + Math.round(s % 60) + ' s';
	};

	CT.sessionDuration = function (s) {
		const a = Date.parse(s.created), b = s.ended ? Date.parse(s.ended) : NaN;
		if (!Number.isNaN(a) && !Number.isNaN(b))
			return (b - a) / 1000;
		return s.progress && s.progress.elapsed_s;
	};

	/*
	 * Kinds of analysis: the server's task table (GET /api/v1/tasks, the one
	 * list serve, the CLI's --help and openapi.json read): names, params,
	 * types, defaults, bounds and help come from there. Only how a kind is
	 * shown (a title and a line) is written here; a kind without one shows
	 * its name and the table's summary.
	 */
	CT.KIND_LOOK = {
		profile: ['CPU profile', 'Sample stacks (perf_event or EventPipe) into a flame graph, with the hottest methods.'],
		analyze: ['Analyze', 'One question answered (as clrtap analyze): exceptions, GC, memory, locks, CPU…'],
		doctor: ['Doctor', 'Watch the process and list what is wrong, worst first, each with its evidence and next command.'],
		trace: ['EventPipe trace', 'Record runtime events into a .nettrace file and report on it.'],
		counters: ['Counters', 'Record EventCounters for a while and chart them.'],
		gcdump: ['Heap snapshot', 'Walk the managed heap (forces a gen-2 GC): types, retained sizes, duplicated strings.'],
		stacks: ['Stacks', 'The managed stack of every thread, now.'],
		probe: ['Probe a method', 'Each call of a .NET method, with arguments, return value, latency.'],
		dump: ['Core dump', 'Ask the runtime to write a dump (createdump).'],
	};

	/* the task table, once: {name: task} in the server's order (null: the server did not say) */
	CT.tasks = async function () {
		if (CT.tasks.cache !== undefined)
			return CT.tasks.cache;
		let tasks = null;
		try {
			const doc = await CT.api('/tasks');
			tasks = {};
			for (const t of doc.tasks || [])
				tasks[t.name] = t;
		} catch (e) { /* shown as "no kinds" */ }
		CT.tasks.cache = tasks;
		return tasks;
	};
	CT.kindTitle = (k, t) => (CT.KIND_LOOK[k] || [])[0] || k;
	CT.kindLine = (k, t) => (CT.KIND_LOOK[k] || [])[1] || (t && t.summary) || '';
	/* a param's default as the form shows it ("3" seconds, 99, true) */
	CT.paramDefault = function (t, name) {
		const p = t && (t.params || []).find(x => x.name === name);
		if (!p || p.default === undefined)
			return undefined;
		if (p.type === 'bool')
			return p.default === 'true';
		if (p.type === 'int' || p.type === 'number' || (p.type === 'duration' && /^[0-9.]+$/.test(p.default)))
			return Number(p.default);
		return p.default;
	};

	CT.sessionTitle = function (s) {
		let t = CT.kindTitle(s.kind);
		const p = s.params || {};
		if (s.kind === 'analyze' && p.analyzer)
			t += ': ' + p.analyzer;
		if (s.kind === 'probe' && p.method)
			t += ': ' + p.method;
		if (s.kind === 'trace' && p.profile)
			t += ': ' + p.profile;
		return t;
	};

	/* start a session and go to its page */
	CT.startSession = async function (kind, pid, params, btn) {
		if (btn)
			btn.disabled = true;
		try {
			const s = await CT.api('/sessions', { method: 'POST', body: { kind, pid: Number(pid), params: params || {} } });
			location.hash = '#/session/' + encodeURIComponent(s.id);
		} catch (e) {
			CT.toast(`Could not start ${kind}: ${e.message}`, true);
			if (btn)
				btn.disabled = false;
			throw e;
		}
	};

	/* the counters a person looks at first (the rest are folded away on the process page) */
	CT.PREFERRED_COUNTERS = ['cpu-usage', 'working-set', 'gc-heap-size', 'alloc-rate', 'exception-count', 'threadpool-thread-count',
		'threadpool-queue-length', 'monitor-lock-contention-count'];

	/* a process's name: its main assembly when known ("sample"), else the comm ("dotnet") */
	CT.procName = p => p.assembly || p.name || '?';

	/* ---------- router ---------- */
	const main = () => document.getElementById('main');
	let cleanups = [];
	CT.onLeave = fn => cleanups.push(fn);
	CT.every = function (ms, fn) {
		const t = setInterval(fn, ms);
		CT.onLeave(() => clearInterval(t));
		return t;
	};

	const routes = [
		[/^#?\/?$/, () => pageProcesses()],
		[/^#\/processes$/, () => pageProcesses()],
		[/^#\/process\/(\d+)$/, m => pageProcess(+m[1])],
		[/^#\/new(?:\?(.*))?$/, m => pageNew(new URLSearchParams(m[1] || ''))],
		[/^#\/sessions$/, () => pageSessions()],
		[/^#\/session\/([^/?]+)$/, m => CT.pageSession(decodeURIComponent(m[1]))],
		[/^#\/diff\/([^/?]+)\/([^/?]+)$/, m => CT.pageDiff(decodeURIComponent(m[1]), decodeURIComponent(m[2]))],
	];

	function route() {
		cleanups.forEach(f => {
			try {
				f();
			} catch (e) { /* ignore */ }
		});
		cleanups = [];
		const hash = location.hash || '#/';
		const m0 = /^#\/(\w+)/.exec(hash);
		const sect = m0 ? (m0[1] === 'process' ? 'processes' : m0[1] === 'session' || m0[1] === 'diff' ? 'sessions' : m0[1]) : 'processes';
		document.querySelectorAll('[data-nav]').forEach(a => a.classList.toggle('active', a.dataset.nav === sect));
		const root = main();
		root.replaceChildren();
		window.scrollTo(0, 0);
		for (const [re, fn] of routes) {
			const m = re.exec(hash);
			if (m) {
				Promise.resolve(fn(m)).catch(e => root.appendChild(CT.errorBox(e)));
				return;
			}
		}
		root.appendChild(h('div.empty', 'No such page. ', h('a', { href: '#/processes' }, 'Processes')));
	}
	CT.main = main;

	/* ---------- pages ---------- */

	function pageHead(title, sub, actions) {
		return h('div.pagehead', h('div', h('h1', title), sub ? h('div.sub', sub) : null), h('div.actions', actions || []));
	}

	async function pageProcesses() {
		document.title = 'Processes · clrtap';
		const root = main();
		const filter = h('input.filter', { type: 'search', placeholder: 'Filter by name, pid, container…', 'aria-label': 'filter processes' });
		const refresh = h('button.btn', { type: 'button' }, 'Refresh');
		root.append(pageHead('.NET processes', 'Every .NET process clrtap can see on this host, containers included.', [filter, refresh]));
		const tbody = h('tbody');
		const table = h('table.grid.procs', h('thead', h('tr',
			h('th.num', 'PID'), h('th', 'Name'), h('th', 'Runtime'), h('th', 'Where'), h('th.num', 'CPU'), h('th.num', 'RSS'),
			h('th', 'Command line'), h('th', ''))), tbody);
		const status = h('div.muted.small');
		root.append(h('div.card.flush', table), status);
		const live = new Map();
		const cells = new Map();
		let procs = [];
		let sig = null;
		const cpuText = l => (l && l.cpu !== undefined && l.cpu !== null ? CT.fmtNum(l.cpu) + ' %' : '–');
		const draw = () => {
			cells.clear();
			const q = filter.value.trim().toLowerCase();
			tbody.replaceChildren();
			const shown = procs.filter(p => !q || [p.pid, p.name, p.cmdline, p.container && p.container.id, p.container && p.container.pod_uid]
				.some(x => x !== undefined && x !== null && String(x).toLowerCase().indexOf(q) >= 0));
			for (const p of shown) {
				const l = live.get(p.pid);
				const tr = h('tr.click', { dataset: { pid: p.pid, name: p.name || '' }, on: { click: e => {
					if (!e.target.closest('a,button'))
						location.hash = '#/process/' + p.pid;
				} } },
				h('td.num.mono', String(p.pid)),
				h('td', h('a.pname', { href: '#/process/' + p.pid }, CT.procName(p)), p.assembly && p.name && p.assembly !== p.name ? h('span.muted.small', ' ' + p.name) : null),
				h('td', p.runtime ? h('span.mono', p.runtime) : h('span.muted', '–')),
				h('td', CT.containerBadge(p.container) || h('span.muted', 'host'), p.nspid && p.nspid !== p.pid ? h('span.muted.small', ` pid ${p.nspid} inside`) : null),
				h('td.num.cpu', cpuText(l)),
				h('td.num.rss', CT.fmtBytes(l && l.rss_bytes !== undefined ? l.rss_bytes : p.rss_bytes)),
				h('td.cmdline.mono', { title: p.cmdline || '' }, p.cmdline || ''),
				h('td.right', h('a.btn.small', { href: '#/new?pid=' + p.pid }, 'Analyze…')));
				tbody.appendChild(tr);
				cells.set(p.pid, { cpu: tr.querySelector('td.cpu'), rss: tr.querySelector('td.rss') });
			}
			if (!shown.length)
				tbody.appendChild(h('tr', h('td.empty', { colSpan: 8 }, procs.length ? 'Nothing matches the filter.' : 'No .NET process found.')));
			status.textContent = `${procs.length} process${procs.length === 1 ? '' : 'es'}` + (live.size ? ' · CPU and RSS live (every 2 s)' : '');
		};
		const load = async () => {
			try {
				const r = await CT.api('/processes');
				procs = (r.processes || []).slice().sort((a, b) => a.pid - b.pid);
				/* redraw only when the list changed (a redraw loses a text selection) */
				const now = JSON.stringify(procs.map(p => Object.assign({}, p, { rss_bytes: null, threads: null })));
				if (now !== sig) {
					sig = now;
					draw();
				}
			} catch (e) {
				tbody.replaceChildren(h('tr', h('td', { colSpan: 8 }, CT.errorBox(e, 'Could not list processes'))));
			}
		};
		filter.addEventListener('input', draw);
		refresh.addEventListener('click', () => {
			sig = null;
			load();
		});
		await load();
		CT.every(5000, load);
		CT.onLeave(CT.sse('/top/live', (type, d) => {
			if (!d || !Array.isArray(d.rows))
				return;
			live.clear();
			d.rows.forEach(r => live.set(r.pid, r));
			for (const [pid, c] of cells) {
				const l = live.get(pid);
				c.cpu.textContent = cpuText(l);
				if (l && l.rss_bytes !== undefined)
					c.rss.textContent = CT.fmtBytes(l.rss_bytes);
			}
			status.textContent = `${procs.length} process${procs.length === 1 ? '' : 'es'} · CPU and RSS live (every 2 s)`;
		}, null, { reconnect: true }));
	}

	async function pageProcess(pid) {
		document.title = 'pid ' + pid + ' · clrtap';
		const root = main();
		let p;
		try {
			p = await CT.api('/processes/' + pid);
		} catch (e) {
			root.append(pageHead('Process ' + pid), CT.errorBox(e, 'Process ' + pid));
			return;
		}
		document.title = CT.procName(p) + ' ' + pid + ' · clrtap';
		const tasks = await CT.tasks() || {};
		/* the table's defaults, said on the button ("Doctor 10 s") */
		const secs = (kind) => {
			const d = CT.paramDefault(tasks[kind], 'duration');
			return typeof d === 'number' ? ' ' + d + ' s' : '';
		};
		const quick = [
			['Profile' + secs('profile'), 'profile', {}],
			['Exceptions' + secs('analyze'), 'analyze', { analyzer: 'exceptions' }],
			['Heap snapshot', 'gcdump', {}],
			['Doctor' + secs('doctor'), 'doctor', {}],
			['Stacks', 'stacks', {}],
		].filter(([, kind]) => tasks[kind]).map(([label, kind, params]) => h('button.btn', { type: 'button', dataset: { quick: kind + (params.analyzer ? ':' + params.analyzer : '') },
			on: { click: e => CT.startSession(kind, pid, params, e.currentTarget).catch(() => {}) } }, label));
		quick.push(h('a.btn.primary', { href: '#/new?pid=' + pid }, 'Other analysis…'));
		root.append(pageHead(h('span', CT.procName(p), ' ', h('span.muted', 'pid ' + pid)), null, []));
		const facts = h('dl.facts',
			h('dt', 'Runtime'), h('dd', p.runtime || '–'),
			p.assembly ? [h('dt', 'Program'), h('dd', p.assembly, p.name ? h('span.muted', ' (process name ' + p.name + ')') : null)] : null,
			p.nspid && p.nspid !== p.pid ? [h('dt', 'PID inside'), h('dd', String(p.nspid))] : null,
			h('dt', 'Where'), h('dd', CT.containerBadge(p.container) || 'host'),
			p.container && p.container.id ? [h('dt', 'Container id'), h('dd.mono', p.container.id)] : null,
			p.container && p.container.pod_uid ? [h('dt', 'Pod uid'), h('dd.mono', p.container.pod_uid)] : null,
			p.threads !== undefined ? [h('dt', 'Threads'), h('dd', String(p.threads))] : null,
			p.rss_bytes !== undefined ? [h('dt', 'RSS'), h('dd', CT.fmtBytes(p.rss_bytes))] : null,
			p.env_count !== undefined ? [h('dt', 'Environment'), h('dd', p.env_count + ' variables')] : null,
			h('dt', 'Command line'), h('dd.mono.wrap', p.cmdline || '–'));
		root.append(h('div.cols',
			h('div.card', h('h2', 'Process'), facts),
			h('div.card', h('h2', 'Start an analysis'), h('div.quick', quick),
				h('p.muted.small', 'Each button starts a session on this process at once; its page shows progress and then the report.'))));
		/* live counters */
		const grid = h('div.charts');
		const moreGrid = h('div.charts');
		const moreSum = h('summary', 'More counters');
		const more = h('details.more', moreSum, moreGrid);
		more.hidden = true;
		const state = h('span.muted.small', 'connecting…');
		root.append(h('div.card', h('div.cardhead', h('h2', 'Live counters'), state), grid, more));
		const charts = new Map();
		const palette = ['#2563eb', '#dc2626', '#059669', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#4b5563'];
		const preferred = CT.PREFERRED_COUNTERS;
		let nvalues = 0;
		const stop = CT.sse('/processes/' + pid + '/counters/live', (type, d) => {
			if (type === 'end') {
				state.textContent = 'the live view ended' + (d && d.reason ? ': ' + d.reason : '');
				state.className = 'muted small';
				return;
			}
			if (!d || typeof d !== 'object' || d.name === undefined)
				return;
			const key = (d.provider || '') + '/' + d.name;
			let c = charts.get(key);
			if (!c) {
				const canvas = h('canvas');
				const val = h('span.cval', '–');
				const sum = h('span.csum');
				const card = h('div.chart', { dataset: { counter: d.name, provider: d.provider || '' } },
					h('div.chead', h('span.ctitle', { title: (d.provider || '') + ' ' + d.name }, d.display || d.name), val),
					canvas, h('div.cfoot', h('span.muted', d.name), sum));
				const rank = preferred.indexOf(d.name);
				card.dataset.rank = rank < 0 ? 100 + charts.size : rank;
				const into = rank < 0 ? moreGrid : grid;
				const after = Array.from(into.children).find(x => +x.dataset.rank > +card.dataset.rank);
				into.insertBefore(card, after || null);
				if (rank < 0) {
					more.hidden = false;
					moreSum.textContent = `${moreGrid.childElementCount} more counters`;
				}
				c = { card, val, sum, total: 0, n: 0, kind: d.kind,
					chart: new CT.LineChart(canvas, { unit: d.unit, color: palette[charts.size % palette.length] }) };
				charts.set(key, c);
				CT.onLeave(() => c.chart.destroy());
			}
			const t = typeof d.t === 'number' ? d.t : Date.now() / 1000;
			const v = typeof d.value === 'number' ? d.value : null;
			c.chart.add(t, v);
			c.n++;
			if (v !== null)
				c.total += v;
			c.val.textContent = CT.fmtValue(v, d.unit);
			c.card.dataset.value = v === null ? '' : String(v);
			c.card.dataset.total = String(c.total);
			c.card.dataset.count = String(c.n);
			if (d.kind === 'delta' || c.kind === 'delta')
				c.sum.textContent = 'total since opened: ' + CT.fmtValue(c.total, d.unit);
			nvalues++;
			state.textContent = `live · ${charts.size} counters · ${nvalues} values`;
			state.className = 'live small';
		}, (st, msg) => {
			if (st === 'open') {
				state.textContent = 'live · waiting for the first values (1 s interval)';
				state.className = 'live small';
			} else if (st === 'error') {
				state.textContent = 'no live counters: ' + msg;
				state.className = 'bad small';
			} else if (st === 'closed' && !/ended/.test(state.textContent)) {
				state.textContent = 'the stream ended; reconnecting…';
				state.className = 'muted small';
			}
		}, { reconnect: true });
		CT.onLeave(stop);
		/* recent sessions on this pid */
		const recent = h('div');
		root.append(h('div.card', h('h2', 'Sessions on this process'), recent));
		try {
			const r = await CT.api('/sessions');
			const mine = (r.sessions || []).filter(s => s.pid === pid);
			recent.append(mine.length ? sessionsTable(mine.slice(0, 20), false) : h('p.muted', 'None yet.'));
		} catch (e) {
			recent.append(CT.errorBox(e));
		}
	}

	/* a form field for one param of the task table */
	function paramField(pd) {
		const id = 'p-' + pd.name;
		const label = pd.name.replace(/_/g, ' ') + (pd.type === 'duration' ? ' (s)' : '');
		const def = CT.paramDefault({ params: [pd] }, pd.name);
		let input;
		if (pd.type === 'enum') {
			input = h('select', { id, name: pd.name, title: pd.help }, (pd.choices || []).map(v => h('option', { value: v, selected: v === pd.default }, v)));
		} else if (pd.type === 'bool') {
			input = h('input', { id, name: pd.name, type: 'checkbox', checked: def === true, dataset: { ptype: pd.type } });
			return h('label.check', { title: pd.help }, input, ' ', label, h('span.muted.small', ' ' + pd.help));
		} else {
			const num = pd.type === 'int' || pd.type === 'number' || pd.type === 'duration';
			input = h('input', { id, name: pd.name, type: num ? 'number' : 'text', value: def !== undefined ? String(def) : '',
				min: num ? pd.min : undefined, max: num ? pd.max : undefined, step: pd.type === 'int' ? 1 : (num ? 'any' : undefined),
				placeholder: pd.help, required: pd.required, title: pd.help, dataset: { ptype: pd.type } });
		}
		return h('label.field', h('span', label), input);
	}

	async function pageNew(q) {
		document.title = 'New analysis · clrtap';
		const root = main();
		root.append(pageHead('New analysis', 'Pick a process and what to find out. The session runs on the server; its page shows progress and the report.'));
		const procSel = h('select', { id: 'f-pid', name: 'pid', required: true });
		let procs = [];
		try {
			procs = (await CT.api('/processes')).processes || [];
		} catch (e) {
			root.append(CT.errorBox(e, 'Could not list processes'));
		}
		const want = q.get('pid');
		for (const p of procs.slice().sort((a, b) => a.pid - b.pid)) {
			const label = `${p.pid} · ${CT.procName(p)}${p.container && (p.container.id || p.container.namespaced) ? ' · container' : ''} · ${(p.cmdline || '').slice(0, 90)}`;
			procSel.appendChild(h('option', { value: String(p.pid), selected: String(p.pid) === want }, label));
		}
		if (want && !procs.some(p => String(p.pid) === want))
			procSel.appendChild(h('option', { value: want, selected: true }, want + ' (not in the list)'));
		const tasks = await CT.tasks() || {};
		const params = k => (tasks[k] && tasks[k].params || []).filter(p => !p.cli_only);
		let kind = tasks[q.get('kind')] ? q.get('kind') : (tasks.profile ? 'profile' : Object.keys(tasks)[0]);
		const kindsBox = h('div.kinds', { role: 'radiogroup', 'aria-label': 'kind of analysis' });
		const paramsBox = h('div.params');
		const drawParams = () => {
			paramsBox.replaceChildren(...params(kind).map(paramField));
			if (!params(kind).length)
				paramsBox.append(h('p.muted', 'No parameters.'));
			const an = q.get('analyzer');
			if (an && paramsBox.querySelector('[name=analyzer]'))
				paramsBox.querySelector('[name=analyzer]').value = an;
			kindsBox.querySelectorAll('.kind').forEach(b => {
				b.classList.toggle('sel', b.dataset.kind === kind);
				b.setAttribute('aria-checked', b.dataset.kind === kind ? 'true' : 'false');
			});
		};
		for (const k in tasks) {
			kindsBox.appendChild(h('button.kind', { type: 'button', role: 'radio',
				dataset: { kind: k }, on: { click: () => {
					kind = k;
					drawParams();
				} } }, h('strong', CT.kindTitle(k)), h('span', CT.kindLine(k, tasks[k]))));
		}
		if (!kind)
			root.append(CT.errorBox(new Error('the server lists no kinds (GET /api/v1/tasks)'), 'No kinds'));
		const start = h('button.btn.primary.big', { type: 'submit', id: 'start' }, 'Start');
		const form = h('form.card.newform', { on: { submit: async e => {
			e.preventDefault();
			const body = {};
			for (const pd of params(kind)) {
				const inp = form.querySelector('[name="' + pd.name + '"]');
				if (!inp)
					continue;
				if (pd.type === 'bool')
					body[pd.name] = inp.checked;
				else if (inp.value !== '')
					body[pd.name] = inp.type === 'number' ? Number(inp.value) : inp.value;
			}
			if (!procSel.value) {
				CT.toast('Pick a process first.', true);
				return;
			}
			CT.startSession(kind, procSel.value, body, start).catch(() => {});
		} } },
		h('label.field.wide', h('span', 'Process'), procSel),
		h('div.fieldlabel', 'Analysis'), kindsBox,
		h('div.fieldlabel', 'Parameters'), paramsBox,
		h('div.formfoot', start));
		root.append(form);
		drawParams();
	}

	function sessionsTable(list, selectable, onSel) {
		const tbody = h('tbody');
		for (const s of list) {
			const dur = CT.sessionDuration(s);
			const cb = selectable && s.kind === 'profile' && s.status === 'done'
				? h('input', { type: 'checkbox', 'aria-label': 'compare ' + s.id, dataset: { id: s.id }, on: { change: onSel } }) : null;
			tbody.appendChild(h('tr.click', { dataset: { id: s.id, kind: s.kind, status: s.status }, on: { click: e => {
				if (!e.target.closest('a,button,input'))
					location.hash = '#/session/' + encodeURIComponent(s.id);
			} } },
			selectable ? h('td.sel', cb) : null,
			h('td', h('a', { href: '#/session/' + encodeURIComponent(s.id) }, CT.sessionTitle(s))),
			h('td', h('span', s.process_name || '?'), ' ', h('span.muted.mono', String(s.pid))),
			h('td', CT.statusBadge(s.status), s.status === 'running' && s.progress ? h('span.muted.small', ' ' + progressText(s.progress)) : null),
			h('td', { title: CT.fmtTime(s.created) }, CT.relTime(s.created)),
			h('td.num', CT.fmtDur(dur)),
			h('td.num', String((s.artifacts || []).length)),
			h('td.mono.muted.small', s.id)));
		}
		return h('table.grid.sessions', h('thead', h('tr', selectable ? h('th', '') : null, h('th', 'Analysis'), h('th', 'Process'), h('th', 'Status'),
			h('th', 'Started'), h('th.num', 'Took'), h('th.num', 'Files'), h('th', 'Id'))), tbody);
	}
	CT.sessionsTable = sessionsTable;

	function progressText(p) {
		if (!p)
			return '';
		if (p.duration_s)
			return `${CT.fmtDur(p.elapsed_s || 0)} of ${CT.fmtDur(p.duration_s)}`;
		return p.elapsed_s !== undefined ? CT.fmtDur(p.elapsed_s) : '';
	}
	CT.progressText = progressText;

	async function pageSessions() {
		document.title = 'Sessions · clrtap';
		const root = main();
		const cmp = h('button.btn.primary', { type: 'button', disabled: true, id: 'compare' }, 'Compare 2 profiles');
		const hint = h('span.muted.small', 'Tick two finished profiles to see a differential flame graph.');
		root.append(pageHead('Sessions', 'Every analysis this server ran, newest first (kept across restarts).', [hint, cmp]));
		const box = h('div.card.flush');
		root.append(box);
		let list = [];
		const picked = [];
		const onSel = e => {
			const id = e.target.dataset.id;
			const i = picked.indexOf(id);
			if (e.target.checked && i < 0)
				picked.push(id);
			if (!e.target.checked && i >= 0)
				picked.splice(i, 1);
			while (picked.length > 2) {
				const old = picked.shift();
				const o = box.querySelector(`input[data-id="${CSS.escape(old)}"]`);
				if (o)
					o.checked = false;
			}
			cmp.disabled = picked.length !== 2;
		};
		cmp.addEventListener('click', () => {
			const byId = new Map(list.map(s => [s.id, s]));
			const [a, b] = picked.slice().sort((x, y) => Date.parse(byId.get(x).created) - Date.parse(byId.get(y).created));
			location.hash = `#/diff/${encodeURIComponent(a)}/${encodeURIComponent(b)}`;
		});
		const load = async () => {
			try {
				list = (await CT.api('/sessions')).sessions || [];
			} catch (e) {
				box.replaceChildren(CT.errorBox(e, 'Could not list sessions'));
				return;
			}
			box.replaceChildren(list.length ? sessionsTable(list, true, onSel)
				: h('div.empty', 'No session yet. ', h('a', { href: '#/new' }, 'Start an analysis'), '.'));
			for (const id of picked) {
				const o = box.querySelector(`input[data-id="${CSS.escape(id)}"]`);
				if (o)
					o.checked = true;
			}
		};
		await load();
		CT.every(3000, () => {
			if (list.some(s => s.status === 'running' || s.status === 'queued'))
				load();
		});
	}

	window.addEventListener('hashchange', route);
	window.addEventListener('DOMContentLoaded', route);
	if (document.readyState !== 'loading')
		setTimeout(route, 0);
})();
