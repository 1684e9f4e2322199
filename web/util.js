/* SPDX-License-Identifier: MIT */
/*
 * util.js - what every script of clrtap's UI shares, and the self-contained
 * HTML flame graph pages too (lib/flame embeds util.js, flame.js and
 * flame.css): number formatting and making target-chosen text visible.
 */
'use strict';
(function () {
	const CT = window.CT = window.CT || {};

	/* A number for a person: integers grouped, others to 2 significant places. */
	CT.fmtNum = function (v) {
		if (v === null || v === undefined)
			return '–';
		if (typeof v !== 'number')
			return String(v);
		if (Number.isInteger(v))
			return v.toLocaleString('en-US');
		const a = Math.abs(v);
		if (a >= 1000)
			return Math.round(v).toLocaleString('en-US');
		if (a >= 10)
			return v.toFixed(1);
		if (a >= 0.01)
			return v.toFixed(2);
		if (a === 0)
			return '0';
		return v.toPrecision(2);
	};

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
})();
