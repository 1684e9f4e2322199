// SPDX-License-Identifier: MIT
// Browser tests of clrtap serve's web UI: Debian's chromium driven by
// playwright-core against a real `clrtap serve` and real fixture processes,
// started by tests/integration/t-ui.sh, which passes:
//   UI_NPM   directory holding node_modules/playwright-core (tests/ui/setup.sh)
//   BASE     the server, http://127.0.0.1:PORT
//   SERVE_TOKEN  the token it printed at start (the UI is opened at BASE/?token=T once)
//   CPU_PID  a `sample cpu-split` fixture (hot method Clrtap.Fixtures.CpuSplit::HotA)
//   WEB_PID, WEB_PORT  a `sample web --port WEB_PORT` fixture (/api/exception/N throws N)
//   NS_PID   a fixture in its own PID + mount namespace (a container, seen from the host)
//   OUT      where screenshots and downloads go (kept for a person to look at)
//   HOSTILE_PID, HOSTILE_LABEL  a `sample hostile --label LABEL` fixture (markup in its argv)
//   BASE_TOK, TOKEN  a second server of the same host, with --token-file (optional)
// Prints one "ok NAME" / "not ok NAME" line per check (details indented).
import { createRequire } from 'module';
import fs from 'fs';
import path from 'path';
import crypto from 'crypto';
import http from 'http';

const env = process.env;
const require = createRequire(path.join(env.UI_NPM, 'package.json'));
const { chromium } = require('playwright-core');
const BASE = env.BASE, OUT = env.OUT, SERVE_TOKEN = env.SERVE_TOKEN;
const AUTH = { Authorization: 'Bearer ' + SERVE_TOKEN };
const CPU = env.CPU_PID, WEB = env.WEB_PID, WEB_PORT = env.WEB_PORT, NS = env.NS_PID;
const HOT = 'Clrtap.Fixtures.CpuSplit::HotA';
const SLOW = 120000; // generous: two shared cores, other jobs running

let failed = 0;
const pageErrors = [];

function report(good, name, details) {
	if (good) {
		console.log('ok ' + name);
		return;
	}
	failed++;
	console.log('not ok ' + name);
	for (const d of details || [])
		for (const line of String(d).split('\n').slice(0, 25))
			console.log('    ' + line);
}

// rebind.test resolves to 127.0.0.1 in this browser: a DNS-rebinding page's name for the server's address
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium',
	args: ['--no-sandbox', '--disable-dev-shm-usage', '--host-resolver-rules=MAP rebind.test 127.0.0.1'] });
const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
const page = await context.newPage();
page.setDefaultTimeout(60000);
page.on('pageerror', e => pageErrors.push('page error: ' + e.message));
page.on('console', m => {
	// a failed request is logged by chromium too; the checks look at those themselves
	if (m.type() === 'error' && !m.text().startsWith('Failed to load resource'))
		pageErrors.push('console error: ' + m.text());
});

async function shot(name, full = true) {
	try {
		await page.screenshot({ path: path.join(OUT, name + '.png'), fullPage: full });
	} catch (e) {
		console.log('    (screenshot ' + name + ' failed: ' + e.message + ')');
	}
}

// step NAME FN: FN throws (with the details) when the check fails.
async function step(name, fn) {
	try {
		await fn();
		report(true, name);
		return true;
	} catch (e) {
		report(false, name, [e && e.stack ? e.stack : e]);
		await shot('failed-' + name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60));
		return false;
	}
}

function expect(cond, msg) {
	if (!cond)
		throw new Error(msg);
}

async function api(p, opts) {
	const o = Object.assign({}, opts || {});
	o.headers = Object.assign({}, AUTH, o.headers || {});
	const r = await fetch(BASE + '/api/v1' + p, o);
	const t = await r.text();
	if (!r.ok)
		throw new Error(`${p}: HTTP ${r.status} ${t.slice(0, 300)}`);
	return t ? JSON.parse(t) : null;
}

const sleep = ms => new Promise(res => setTimeout(res, ms));

async function sessionIdFromPage() {
	await page.waitForURL(/#\/session\//, { timeout: 30000 });
	return decodeURIComponent(new URL(page.url()).hash.replace(/^#\/session\//, ''));
}

async function waitSession(id, pred, ms) {
	const end = Date.now() + ms;
	let s;
	while (Date.now() < end) {
		s = await api('/sessions/' + encodeURIComponent(id));
		if (pred(s))
			return s;
		if (['done', 'failed', 'cancelled'].includes(s.status))
			break;
		await sleep(250);
	}
	throw new Error('session ' + id + ' never got there: ' + JSON.stringify(s).slice(0, 600));
}

// 1. The UI, and the fixtures in the process list.
await step('the UI loads from the server (index, script, style; no network beyond it)', async () => {
	const outside = [];
	page.on('request', r => {
		if (!r.url().startsWith(BASE) && !r.url().startsWith('data:') && !r.url().startsWith('blob:'))
			outside.push(r.url());
	});
	// the address serve printed: the token leaves the address bar for the tab's sessionStorage
	await page.goto(BASE + '/?token=' + SERVE_TOKEN);
	await page.waitForSelector('table.procs tbody tr');
	expect(!page.url().includes('token='), 'token still in the address: ' + page.url());
	const bg = await page.$eval('.topbar', e => getComputedStyle(e).backgroundColor);
	expect(bg === 'rgb(17, 24, 39)', 'app.css not applied (top bar ' + bg + ')');
	expect(!outside.length, 'requests outside the server: ' + outside.join(' '));
});

await step(`the process list shows the cpu-split fixture (pid ${CPU}) with its command line`, async () => {
	const row = page.locator(`tr[data-pid="${CPU}"]`);
	await row.waitFor({ state: 'visible' });
	const text = await row.innerText();
	expect(text.includes('cpu-split') && text.includes(String(CPU)), 'row: ' + text);
	expect(await page.locator(`tr[data-pid="${WEB}"]`).count() === 1, 'no row of the web fixture ' + WEB);
});

await step(`the namespaced fixture (pid ${NS}) is marked as a container, the host fixture is not`, async () => {
	await page.locator(`tr[data-pid="${NS}"] .badge.container`).waitFor({ state: 'visible', timeout: 15000 });
	expect(await page.locator(`tr[data-pid="${CPU}"] .badge.container`).count() === 0, 'host fixture marked as container');
});
await step(`the namespaced fixture's page shows its pid inside (1) and live counters from it`, async () => {
	await page.goto(BASE + '/#/process/' + NS);
	await page.locator('dl.facts dt', { hasText: 'PID inside' }).waitFor({ timeout: 20000 });
	const inside = await page.locator('dl.facts dt:text("PID inside") + dd').innerText();
	expect(inside === '1', 'pid inside: ' + inside);
	await page.waitForFunction(() => {
		const c = document.querySelector('.chart[data-counter="cpu-usage"]');
		return c && +c.dataset.count >= 1;
	}, null, { timeout: 45000 });
	await page.goto(BASE + '/#/processes');
	await page.locator(`tr[data-pid="${CPU}"]`).waitFor();
});

if (env.HOSTILE_PID) {
	await step('a hostile command line (markup in argv) is shown as text: no element made, no script run', async () => {
		let dialogs = 0;
		page.on('dialog', d => {
			dialogs++;
			d.dismiss().catch(() => {});
		});
		const row = page.locator(`tr[data-pid="${env.HOSTILE_PID}"]`);
		await row.waitFor({ state: 'visible', timeout: 20000 });
		const text = await row.locator('td.cmdline').getAttribute('title');
		expect(text.includes(env.HOSTILE_LABEL), 'command line shown: ' + text);
		expect(await row.locator('img, b, script').count() === 0, 'the label became markup');
		await page.waitForTimeout(500);
		expect(dialogs === 0, 'a dialog opened');
	});
}
await shot('01-processes', false);

// 1b. A page of another origin (another loopback port) in the same browser, the
// real UI open beside it with its token: every attempt to start a session or
// read the API fails, with the status the server answered; a DNS-rebinding
// name for the server's address reads nothing. (t-serve.sh has the same with curl.)
{
	const serveUrl = new URL(BASE);
	const START = JSON.stringify({ kind: 'stacks', pid: Number(CPU) });
	const evil = http.createServer((req, res) => {
		res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
		// a text/plain form makes a body that is JSON: name + '=' + value
		res.end(`<!doctype html><title>another origin</title>
<form id="plain" method="POST" action="${BASE}/api/v1/sessions" enctype="text/plain" target="sink1">
<input name='${START.slice(0, -1)},"x":"' value='"}'></form>
<form id="urlenc" method="POST" action="${BASE}/api/v1/sessions?token=${SERVE_TOKEN}" target="sink2">
<input name="body" value='${START}'></form>
<iframe name="sink1"></iframe><iframe name="sink2"></iframe>`);
	});
	await new Promise(res => evil.listen(0, '127.0.0.1', res));
	const EVIL = `http://127.0.0.1:${evil.address().port}`;
	const before = (await api('/sessions')).sessions.length;
	const ep = await context.newPage();
	const seen = []; // [method, url, status] of every answer of serve that reached this page
	ep.on('response', r => {
		if (r.url().startsWith(BASE) || r.url().startsWith('http://rebind.test:'))
			seen.push([r.request().method(), r.url().replace(SERVE_TOKEN, 'TOKEN'), r.status()]);
	});
	const statusOf = (method, re) => {
		const hit = seen.filter(x => x[0] === method && re.test(x[1]));
		return hit.length ? hit[hit.length - 1][2] : 'no answer seen';
	};
	try {
		await ep.goto(EVIL + '/');
		await step('another origin: fetch POST text/plain (no-cors, no preflight) is refused 403, its answer unreadable', async () => {
			const r = await ep.evaluate(async ([u, b]) => {
				const x = await fetch(u, { method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' }, body: b });
				return [x.type, x.status];
			}, [BASE + '/api/v1/sessions', START]);
			expect(r[0] === 'opaque' && r[1] === 0, 'the page read ' + r);
			await ep.waitForTimeout(300);
			const st = statusOf('POST', /\/api\/v1\/sessions$/);
			expect(st === 403, 'serve answered ' + st + ' ' + JSON.stringify(seen));
		});
		await step('another origin: fetch POST application/json (preflighted) fails in the page, with the token too', async () => {
			const r = await ep.evaluate(async ([u, b, t]) => {
				const out = [];
				for (const h of [{ 'Content-Type': 'application/json' }, { 'Content-Type': 'application/json', Authorization: 'Bearer ' + t }]) {
					try {
						const x = await fetch(u, { method: 'POST', headers: h, body: b });
						out.push('read ' + x.status);
					} catch (e) {
						out.push('failed: ' + e.name);
					}
				}
				return out;
			}, [BASE + '/api/v1/sessions', START, SERVE_TOKEN]);
			expect(r.every(x => x === 'failed: TypeError'), 'fetch: ' + r.join(', '));
		});
		await step('another origin: reading the API with fetch fails (no CORS header), with ?token= too; no-cors reads are refused 403 and opaque', async () => {
			const urls = [BASE + '/api/v1/processes', BASE + '/api/v1/processes?token=' + SERVE_TOKEN];
			const r = await ep.evaluate(async us => {
				const out = [];
				for (const u of us) {
					try {
						const x = await fetch(u);
						out.push('read ' + x.status + ' ' + (await x.text()).slice(0, 80));
					} catch (e) {
						out.push('failed: ' + e.name);
					}
				}
				return out;
			}, urls);
			expect(r.every(x => x === 'failed: TypeError'), 'fetch: ' + r.join(' | '));
			// a CORS failure hides the status from the page and from the browser's
			// events; a no-cors read shows it in the events (and nothing to the page)
			for (const u of urls) {
				seen.length = 0;
				const o = await ep.evaluate(async u => {
					const x = await fetch(u, { mode: 'no-cors' });
					return [x.type, x.status, (await x.text()).length];
				}, u);
				expect(o[0] === 'opaque' && o[1] === 0 && o[2] === 0, 'the page read ' + o);
				await ep.waitForTimeout(300);
				const st = statusOf('GET', /\/api\/v1\/processes(\?token=TOKEN)?$/);
				expect(st === 403, u.replace(SERVE_TOKEN, 'TOKEN') + ': serve answered ' + st + ' ' + JSON.stringify(seen));
			}
		});
		await step('another origin: a text/plain form POST and an urlencoded one (token in its action) are refused 403', async () => {
			await Promise.all([ep.waitForResponse(r => r.request().method() === 'POST' && /\/sessions$/.test(r.url())),
				ep.evaluate(() => document.getElementById('plain').submit())]);
			await Promise.all([ep.waitForResponse(r => r.request().method() === 'POST' && /\/sessions\?token=/.test(r.url())),
				ep.evaluate(() => document.getElementById('urlenc').submit())]);
			const a = statusOf('POST', /\/api\/v1\/sessions$/), b = statusOf('POST', /\/api\/v1\/sessions\?token=TOKEN$/);
			expect(a === 403 && b === 403, `text/plain form: ${a}, urlencoded form: ${b}`);
		});
		await step('DNS rebinding: rebind.test (resolved to 127.0.0.1) gets 403 for the API, /metrics and the UI, token and all, and reads nothing', async () => {
			const host = `http://rebind.test:${serveUrl.port}`;
			for (const p of ['/api/v1/processes?token=' + SERVE_TOKEN, '/metrics?token=' + SERVE_TOKEN, '/?token=' + SERVE_TOKEN]) {
				const r = await ep.goto(host + p);
				const body = await r.text();
				expect(r.status() === 403, p.replace(SERVE_TOKEN, 'TOKEN') + ': HTTP ' + r.status());
				expect(!body.includes('"pid"') && !body.includes('clrtap_dotnet') && !body.includes('<script'), 'read: ' + body.slice(0, 200));
			}
		});
		await step('no attempt of the other origin started a session', async () => {
			const after = (await api('/sessions')).sessions.length;
			expect(after === before, `sessions before ${before}, after ${after}`);
		});
	} finally {
		await ep.close();
		evil.close();
	}
}

// 2. A 3 s profile from the process page; the hot method in the flame graph.
let profileId = null;
await step('a 3 s profile started from the process page shows its progress', async () => {
	await page.goto(BASE + '/#/process/' + CPU);
	// the button says the task table's default duration, and the session runs for it
	const tasks = await api('/tasks');
	const def = Number(tasks.tasks.find(t => t.name === 'profile').params.find(p => p.name === 'duration').default);
	const label = await page.locator('button[data-quick="profile"]').innerText();
	expect(label === `Profile ${def} s`, 'quick button: ' + label);
	await page.locator('button[data-quick="profile"]').click();
	profileId = await sessionIdFromPage();
	const s = await api('/sessions/' + encodeURIComponent(profileId));
	expect(s.kind === 'profile' && s.progress.duration_s === def && s.pid === Number(CPU), 'session: ' + JSON.stringify(s).slice(0, 400));
	// the bar (running) or, if the machine was quick, the finished report
	await page.waitForSelector('.progress, #flame svg text', { timeout: 30000 });
	await shot('02-profile-running', false);
});

await step(`the flame graph names the hot method ${HOT} as visible text`, async () => {
	const label = page.locator('#flame svg text', { hasText: HOT }).first();
	await label.waitFor({ state: 'visible', timeout: SLOW });
	expect((await label.textContent()) === HOT, 'label: ' + await label.textContent());
	const first = await page.locator('table.topself tbody tr').first().innerText();
	expect(first.startsWith(HOT), 'hottest method row: ' + first);
	await shot('03-profile');
	await page.evaluate(() => window.scrollTo(0, 0));
	await shot('readme-profile', false);
});

// 2b. The summary is the profile task's result, shown field by field; HotA heads the top methods.
await step('the profile summary shows the result\'s engine, samples, lost samples, unnamed frames and top methods (HotA among them)', async () => {
	const rep = await api('/sessions/' + encodeURIComponent(profileId) + '/report');
	expect(rep.task === 'profile' && rep.samples > 0, 'result: ' + JSON.stringify(rep).slice(0, 300));
	const shown = async id => (await page.locator(`[data-testid="${id}"]`).innerText()).trim();
	const fmt = v => v === undefined || v === null ? '–' : v.toLocaleString('en-US');
	expect(await shown('profile-engine') === (rep.engine || '–'), 'engine: ' + await shown('profile-engine'));
	expect(await shown('profile-samples') === fmt(rep.samples), `samples: ${await shown('profile-samples')}, result ${rep.samples}`);
	expect(await shown('profile-lost') === fmt(rep.lost_samples), 'lost: ' + await shown('profile-lost'));
	expect(await shown('profile-unnamed') === fmt(rep.unnamed_frames), 'unnamed: ' + await shown('profile-unnamed'));
	expect(rep.top.some(t => t.name === HOT), 'HotA not in the result\'s top: ' + JSON.stringify(rep.top).slice(0, 300));
	const first = await page.locator('table.profiletop tbody tr').first().innerText();
	expect(first.startsWith(rep.top[0].name), 'top row ' + first + ', result ' + rep.top[0].name);
	expect(first.includes(`${rep.top[0].self} · ${rep.top[0].self_pct.toFixed(1)}%`), 'top row: ' + first);
});

await step('clicking the hot frame zooms into it', async () => {
	await page.locator('#flame svg g.fr', { has: page.locator('text', { hasText: HOT }) }).first().click();
	await page.locator('.flame-trail button', { hasText: 'CpuSplit::HotA' }).waitFor({ timeout: 10000 });
	await page.locator('.flame button', { hasText: 'Reset zoom' }).click();
	expect(await page.locator('.flame-trail button').count() === 0, 'zoom trail still there');
});

// 3. Download an artifact and check its bytes.
await step('downloading profile.folded gives the server\'s bytes: folded stacks with HotA, summing to the report\'s total', async () => {
	expect(profileId, 'no profile session');
	const s = await api('/sessions/' + encodeURIComponent(profileId));
	const art = (s.artifacts || []).find(a => a.name === 'profile.folded');
	expect(art, 'no profile.folded in ' + JSON.stringify(s.artifacts));
	const [dl] = await Promise.all([page.waitForEvent('download'), page.locator('a[data-artifact="profile.folded"]').click()]);
	const file = path.join(OUT, 'download-profile.folded');
	await dl.saveAs(file);
	const got = fs.readFileSync(file);
	const r = await fetch(BASE + '/api/v1/sessions/' + encodeURIComponent(profileId) + '/artifacts/profile.folded', { headers: AUTH });
	const want = Buffer.from(await r.arrayBuffer());
	expect(dl.suggestedFilename() === 'profile.folded', 'file name ' + dl.suggestedFilename());
	expect(got.length === art.size && got.length > 0, `size ${got.length}, listed ${art.size}`);
	const h = b => crypto.createHash('sha256').update(b).digest('hex');
	expect(h(got) === h(want), 'bytes differ from the API\'s');
	let hotA = 0, hotB = 0, sum = 0;
	for (const line of got.toString('utf8').split('\n')) {
		const m = /^(.*) (\d+)$/.exec(line);
		if (!line)
			continue;
		expect(m, 'not a folded line: ' + line.slice(0, 200));
		const frames = m[1].split(';');
		sum += +m[2];
		if (frames.includes(HOT))
			hotA += +m[2];
		if (frames.includes('Clrtap.Fixtures.CpuSplit::HotB'))
			hotB += +m[2];
	}
	// the 3:1 split of HotA and HotB is only a tendency (a loaded machine gives the fixture few samples)
	expect(hotA > 0, `no sample in ${HOT}`);
	const rep = await api('/sessions/' + encodeURIComponent(profileId) + '/report');
	if (rep && rep.total !== undefined)
		expect(sum === rep.total, `folded counts sum to ${sum}, the report says ${rep.total}`);
});

// 3b. Cancel from the session page.
await step('Cancel on a running 60 s profile ends it as cancelled; the fixture lives on', async () => {
	await page.goto(BASE + `/#/new?pid=${CPU}&kind=profile`);
	await page.locator('input[name="duration"]').fill('60');
	await page.locator('#start').click();
	const id = await sessionIdFromPage();
	await page.locator('#cancel').waitFor({ state: 'visible', timeout: 30000 });
	await waitSession(id, s => s.status === 'running', 60000);
	await page.locator('#cancel').click();
	await page.locator('h1 .badge[data-status="cancelled"]').waitFor({ timeout: 30000 });
	const s = await api('/sessions/' + encodeURIComponent(id));
	expect(s.status === 'cancelled', 'status ' + s.status);
	process.kill(Number(CPU), 0);
	await shot('04-cancelled', false);
});

// 4. An exceptions analysis (kind analyze, analyzer exceptions) through the form; exactly 13 thrown.
await step('the new-analysis form starts an exceptions analysis and the report counts exactly 13 exceptions', async () => {
	await page.goto(BASE + `/#/new?pid=${WEB}&kind=analyze`);
	await page.locator('select[name="analyzer"]').selectOption('exceptions');
	await page.locator('input[name="duration"]').fill('10');
	await shot('04-new-analysis', false);
	await page.locator('#start').click();
	const id = await sessionIdFromPage();
	// throw only once the target's session has surely started
	await waitSession(id, s => s.status === 'running' && s.progress && s.progress.elapsed_s >= 3, 60000);
	const r = await fetch(`http://127.0.0.1:${WEB_PORT}/api/exception/13`);
	expect(r.ok && (await r.text()) === 'ok', 'fixture did not answer');
	const total = page.locator('[data-testid="exceptions-total"]');
	await total.waitFor({ state: 'visible', timeout: SLOW });
	expect((await total.textContent()) === '13', 'shown: ' + await total.textContent());
	const row = await page.locator('section.card table.grid tbody tr', { hasText: 'Clrtap.Fixtures.FixtureException' }).first().innerText();
	expect(/Clrtap\.Fixtures\.FixtureException\s+13\b/.test(row), 'type row: ' + row);
	await shot('05-exceptions');
});

// 4b. Doctor through the form on the cpu-split fixture: its findings (severity, title, evidence, next command).
await step('the form offers every analyzer of lib/analyze and doctor; a doctor session page shows CPU busy first with HotA and its next command', async () => {
	await page.goto(BASE + `/#/new?pid=${CPU}&kind=analyze`);
	await page.locator('select[name="analyzer"] option[value="threadpool"]').waitFor({ state: 'attached' });
	const opts = await page.locator('select[name="analyzer"] option').evaluateAll(os => os.map(o => o.value).sort().join(','));
	expect(opts === 'allocations,contention,deadlock,exceptions,hotpaths,leaks,memory,pauses,stacks,strings,survivors,threadpool', 'analyzers offered: ' + opts);
	await page.locator('button.kind[data-kind="doctor"]').click();
	await page.locator('input[name="duration"]').fill('3');
	await page.locator('#start').click();
	const id = await sessionIdFromPage();
	const sec = page.locator('[data-testid="doctor-findings"]');
	await sec.waitFor({ state: 'visible', timeout: SLOW });
	const s = await api('/sessions/' + encodeURIComponent(id));
	expect(s.kind === 'doctor' && s.status === 'done', 'session ' + s.kind + ' ' + s.status);
	const first = page.locator('[data-testid="finding"]').first();
	expect((await first.getAttribute('data-severity')) === 'warning', 'severity ' + await first.getAttribute('data-severity'));
	const title = await first.locator('.ftitle').innerText();
	expect(title.startsWith('1. CPU busy'), 'title: ' + title);
	const ev = await first.locator('.evidence').innerText();
	expect(ev.includes(HOT), 'evidence: ' + ev);
	const cmd = await first.locator('.fcmd').innerText();
	expect(cmd.startsWith('clrtap '), 'next: ' + cmd);
	await shot('05b-doctor');
});

// 4c. One source for the defaults: a server whose task table says doctor's duration is 7 s
// (build/tests/clrtap-tdef, built with that one default changed) shows 7 in the form.
await step('the form\'s defaults are the task table\'s: doctor\'s duration is 7 on the clrtap-tdef server, 10 on this one', async () => {
	for (const [base, want] of [[env.BASE_TDEF, '7'], [BASE, '10']]) {
		await page.goto(base + `/?token=${base === BASE ? SERVE_TOKEN : env.TDEF_TOKEN}#/new?pid=${CPU}&kind=doctor`);
		const inp = page.locator('input[name="duration"]');
		await inp.waitFor({ state: 'attached' });
		expect(await inp.inputValue() === want, `${base}: duration ${await inp.inputValue()}, want ${want}`);
	}
	await page.goto(BASE + `/?token=${SERVE_TOKEN}#/`);
});

// 4d. A probe session shows each call as a record of the result: method, tier, arguments, return, latency.
await step('a probe session shows each call as a structured record (method, tier, arguments, return, latency)', async () => {
	const r = await fetch(BASE + '/api/v1/sessions', { method: 'POST', headers: Object.assign({ 'Content-Type': 'application/json' }, AUTH),
		body: JSON.stringify({ kind: 'probe', pid: Number(env.PROBE_PID), params: { method: 'System.Convert::ToString(int,int)', duration: 6 } }) });
	const s0 = await r.json();
	expect(r.status === 201, 'probe session: ' + JSON.stringify(s0));
	// the calls are made once the probe is armed: its session's log says so (the
	// session folder beside serve's database; the log is an artifact only at the end)
	for (let i = 0; i < 150; i++) {
		let log = '';
		try { log = fs.readFileSync(env.SESSIONS_DIR + '/' + s0.id + '/stderr.txt', 'utf8'); } catch { }
		if (/tracing|waiting/.test(log))
			break;
		await new Promise(res => setTimeout(res, 200));
	}
	fs.writeFileSync(env.PROBE_TRIGGER, '');
	await page.goto(BASE + '/#/session/' + encodeURIComponent(s0.id));
	const row = page.locator('table.probecalls tbody tr').first();
	await row.waitFor({ state: 'visible', timeout: SLOW });
	const rep = await api('/sessions/' + encodeURIComponent(s0.id) + '/report');
	const c = rep.calls[0];
	const cells = await row.locator('td').allInnerTexts();
	expect(cells[1] === c.method && cells[2] === (c.tier || '–'), 'method/tier cells: ' + cells.join(' | '));
	expect(cells[3] === c.args.map(a => (a.name ? a.name + ' = ' : '') + (a.type ? a.type + ' ' : '') + a.value).join(', '), 'args cell: ' + cells[3]);
	// the fixture calls Convert.ToString(i, 16) for i = 0..4 (probe-warm --calls 5)
	expect(rep.calls_total === 5 && c.args.map(a => a.name + '=' + a.value).join(',') === 'value=0,toBase=16',
		'first call ' + JSON.stringify(c.args) + ' of ' + rep.calls_total);
	expect(await page.locator('table.probecalls tbody tr').count() === rep.calls.length, 'rows shown vs the result\'s calls');
	await shot('05c-probe');
});

// 5. A live counter changes: exception-count on the process page.
await step('the live exception-count chart goes from 0 to a total of 7 when the fixture throws 7', async () => {
	await page.goto(BASE + '/#/process/' + WEB);
	const chart = page.locator('.chart[data-counter="exception-count"]');
	await chart.waitFor({ state: 'visible', timeout: 60000 });
	await page.waitForFunction(() => {
		const c = document.querySelector('.chart[data-counter="exception-count"]');
		return c && +c.dataset.count >= 2;
	}, null, { timeout: 30000 });
	expect((await chart.getAttribute('data-total')) === '0', 'exceptions before the request: ' + await chart.getAttribute('data-total'));
	await page.evaluate(() => {
		window.seenValues = [];
		const v = document.querySelector('.chart[data-counter="exception-count"] .cval');
		new MutationObserver(() => window.seenValues.push(v.textContent)).observe(v, { childList: true, characterData: true, subtree: true });
	});
	const r = await fetch(`http://127.0.0.1:${WEB_PORT}/api/exception/7`);
	expect(r.ok, 'fixture did not answer');
	await page.waitForFunction(() => document.querySelector('.chart[data-counter="exception-count"]').dataset.total === '7', null, { timeout: 30000 });
	const seen = await page.evaluate(() => window.seenValues);
	expect(seen.some(v => v !== '0'), 'the shown value never changed: ' + seen.join(','));
	await page.waitForTimeout(2500); // one more interval for the charts to draw
	expect((await chart.getAttribute('data-total')) === '7', 'total later: ' + await chart.getAttribute('data-total'));
	await shot('06-live-counters');
});

// 6. Sessions list and the differential flame graph of two profiles.
await step('two profile sessions compared from the session list give a differential flame graph with the hot method', async () => {
	const s2 = await api('/sessions', { method: 'POST', headers: { 'Content-Type': 'application/json' },
		body: JSON.stringify({ kind: 'profile', pid: Number(CPU), params: { duration: 2 } }) });
	await waitSession(s2.id, s => s.status === 'done', SLOW);
	await page.goto(BASE + '/#/sessions');
	await page.locator(`tr[data-id="${profileId}"] input[type=checkbox]`).check();
	await page.locator(`tr[data-id="${s2.id}"] input[type=checkbox]`).check();
	await shot('07-sessions', false);
	await page.locator('#compare').click();
	await page.waitForURL(/#\/diff\//);
	const label = page.locator('#flame svg text', { hasText: HOT }).first();
	await label.waitFor({ state: 'visible', timeout: 60000 });
	const before = decodeURIComponent(new URL(page.url()).hash.split('/')[2]);
	expect(before === profileId, 'the older profile is not "before": ' + page.url());
	await shot('08-diff');
});

// 7. Errors are shown, not swallowed.
await step('a process that does not exist gives the server\'s error on the page', async () => {
	await page.goto(BASE + '/#/process/999999999');
	const box = page.locator('.errorbox');
	await box.waitFor({ state: 'visible', timeout: 20000 });
	const t = await box.innerText();
	expect(/999999999|no (such )?process|not found/i.test(t), 'error box: ' + t);
});

// 8. With a token in force (serve --token-file): the address the server printed (/?token=T) works, without it 401.
if (env.BASE_TOK) {
	await step('with a token: /?token=T opens the UI, the token leaves the address bar, API calls and live counters carry it', async () => {
		const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
		const p2 = await ctx.newPage();
		const errs = [];
		p2.on('pageerror', e => errs.push(e.message));
		try {
			await p2.goto(env.BASE_TOK + '/?token=' + encodeURIComponent(env.TOKEN) + '#/processes');
			await p2.locator(`tr[data-pid="${CPU}"]`).waitFor({ state: 'visible', timeout: 30000 });
			expect(!p2.url().includes('token='), 'token still in the address: ' + p2.url());
			await p2.goto(env.BASE_TOK + '/#/process/' + CPU);
			await p2.waitForFunction(() => {
				const c = document.querySelector('.chart[data-counter]');
				return c && +c.dataset.count >= 1;
			}, null, { timeout: 30000 });
			expect(!errs.length, errs.join('\n'));
		} finally {
			await ctx.close();
		}
	});
	await step('with a token: the UI opened without it says a token is needed (401)', async () => {
		const ctx = await browser.newContext();
		const p2 = await ctx.newPage();
		try {
			const r = await p2.goto(env.BASE_TOK + '/#/processes');
			expect(r.status() === 200, 'the page itself: HTTP ' + r.status());
			const box = p2.locator('.errorbox');
			await box.waitFor({ state: 'visible', timeout: 20000 });
			const t = await box.innerText();
			expect(/token/i.test(t) && /401/.test(t), 'error box: ' + t);
		} finally {
			await ctx.close();
		}
	});
}

report(pageErrors.length === 0, 'no JavaScript errors in any page', pageErrors);
await browser.close();
console.log(`# screenshots in ${OUT}`);
process.exit(failed ? 1 : 0);
