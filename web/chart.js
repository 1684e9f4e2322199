/* SPDX-License-Identifier: MIT */
/*
 * chart.js - small line charts on <canvas> for live counters and for a
 * counters session's recorded values. No library: a chart keeps its points,
 * redraws on every add (at most once per animation frame) and on resize.
 */
'use strict';
(function () {
	const CT = window.CT = window.CT || {};

	/* Human formatting of a value in the counter's unit. */
	function fmtValue(v, unit) {
		if (v === null || v === undefined || Number.isNaN(v))
			return '–';
		const u = unit || '';
		if (u === 'B' || u === 'By' || u === 'bytes')
			return CT.fmtBytes(v);
		if (u === 'MB')
			return CT.fmtNum(v) + ' MB';
		if (u === '%')
			return (Math.abs(v) < 10 ? v.toFixed(2) : v.toFixed(1)) + ' %';
		return CT.fmtNum(v) + (u ? ' ' + u : '');
	}

	CT.fmtBytes = function (b) {
		if (b === null || b === undefined)
			return '–';
		const a = Math.abs(b);
		if (a < 1024)
			return Math.round(b) + ' B';
		const units = ['KiB', 'MiB', 'GiB', 'TiB'];
		let v = b / 1024, i = 0;
		while (Math.abs(v) >= 1024 && i < units.length - 1) {
			v /= 1024;
			i++;
		}
		return (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(1)) + ' ' + units[i];
	};
	CT.fmtValue = fmtValue;

	/* axis range and a "nice" step (1, 2, 2.5 or 5 times a power of ten) */
	function niceRange(min, max, integers) {
		if (min >= 0 && (min === max || min < (max - min) * 0.6))
			min = 0;
		if (min === max) {
			const d = Math.abs(min) || 1;
			min -= d * 0.5;
			max += d * 0.5;
			if (min < 0 && max > 0 && min > -d)
				min = 0;
		}
		const raw = (max - min) / 3;
		const p = Math.pow(10, Math.floor(Math.log10(raw)));
		let step = [1, 2, 2.5, 5, 10].map(m => m * p).find(s => s >= raw);
		if (integers)
			step = Math.max(1, Math.round(step));
		const lo = Math.floor(min / step) * step, hi = Math.ceil(max / step) * step;
		return [lo, hi, step];
	}

	class LineChart {
		/* opts: {unit, windowSec (null: all points), color, height} */
		constructor(canvas, opts) {
			this.canvas = canvas;
			this.opts = Object.assign({ windowSec: 120, color: '#2563eb', height: 110 }, opts || {});
			this.points = [];
			this.pending = false;
			this.ro = new ResizeObserver(() => this.schedule());
			this.ro.observe(canvas);
		}
		add(t, v) {
			this.points.push([t, v]);
			if (this.opts.windowSec) {
				const from = t - this.opts.windowSec;
				let i = 0;
				while (i < this.points.length && this.points[i][0] < from)
					i++;
				if (i)
					this.points.splice(0, i);
			} else if (this.points.length > 20000) {
				this.points.splice(0, this.points.length - 20000);
			}
			this.schedule();
		}
		schedule() {
			if (this.pending)
				return;
			this.pending = true;
			requestAnimationFrame(() => {
				this.pending = false;
				this.draw();
			});
		}
		destroy() {
			this.ro.disconnect();
		}
		draw() {
			const c = this.canvas;
			const dpr = window.devicePixelRatio || 1;
			const w = c.clientWidth, h = this.opts.height;
			if (!w)
				return;
			c.style.height = h + 'px';
			if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
				c.width = Math.round(w * dpr);
				c.height = Math.round(h * dpr);
			}
			const g = c.getContext('2d');
			g.setTransform(dpr, 0, 0, dpr, 0, 0);
			g.clearRect(0, 0, w, h);
			const padL = 58, padR = 8, padT = 8, padB = 18;
			const pw = w - padL - padR, ph = h - padT - padB;
			g.font = '11px system-ui, sans-serif';
			g.fillStyle = '#6b7280';
			g.strokeStyle = '#e5e7eb';
			g.lineWidth = 1;
			const pts = this.points.filter(p => p[1] !== null && Number.isFinite(p[1]));
			if (!pts.length) {
				g.textAlign = 'center';
				g.fillText('waiting for values…', w / 2, h / 2);
				return;
			}
			let vmin = Infinity, vmax = -Infinity, ints = true;
			for (const p of pts) {
				vmin = Math.min(vmin, p[1]);
				vmax = Math.max(vmax, p[1]);
				ints = ints && Number.isInteger(p[1]);
			}
			const [y0, y1, ystep] = niceRange(vmin, vmax, ints);
			const tEnd = pts[pts.length - 1][0];
			const tStart = this.opts.windowSec ? Math.max(pts[0][0], tEnd - this.opts.windowSec) : pts[0][0];
			const tspan = Math.max(tEnd - tStart, 1e-9);
			const X = t => padL + (t - tStart) / tspan * pw;
			const Y = v => padT + ph - (v - y0) / (y1 - y0) * ph;
			/* grid: 3 horizontal lines with labels */
			g.textAlign = 'right';
			g.textBaseline = 'middle';
			for (let v = y0; v <= y1 + ystep / 2; v += ystep) {
				const y = Y(v);
				g.beginPath();
				g.moveTo(padL, Math.round(y) + 0.5);
				g.lineTo(w - padR, Math.round(y) + 0.5);
				g.stroke();
				g.fillText(fmtValue(v, this.opts.unit), padL - 6, y);
			}
			g.textAlign = 'left';
			g.textBaseline = 'alphabetic';
			g.fillText(this.opts.windowSec ? '−' + Math.round(tspan) + ' s' : '0 s', padL, h - 4);
			g.textAlign = 'right';
			g.fillText(this.opts.windowSec ? 'now' : Math.round(tspan) + ' s', w - padR, h - 4);
			/* area + line */
			const col = this.opts.color;
			g.beginPath();
			pts.forEach((p, i) => i ? g.lineTo(X(p[0]), Y(p[1])) : g.moveTo(X(p[0]), Y(p[1])));
			g.lineTo(X(pts[pts.length - 1][0]), padT + ph);
			g.lineTo(X(pts[0][0]), padT + ph);
			g.closePath();
			g.globalAlpha = 0.12;
			g.fillStyle = col;
			g.fill();
			g.globalAlpha = 1;
			g.beginPath();
			pts.forEach((p, i) => i ? g.lineTo(X(p[0]), Y(p[1])) : g.moveTo(X(p[0]), Y(p[1])));
			g.strokeStyle = col;
			g.lineWidth = 1.8;
			g.stroke();
			const last = pts[pts.length - 1];
			g.beginPath();
			g.arc(X(last[0]), Y(last[1]), 2.8, 0, Math.PI * 2);
			g.fillStyle = col;
			g.fill();
		}
	}
	CT.LineChart = LineChart;
})();
