#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""flamecheck.py - independent checks of lib/flame output files.

  flamecheck.py speedscope FILE   strict JSON parse + speedscope structure;
                                  prints the stacks as folded lines
  flamecheck.py svg FILE          XML well-formedness; prints the <title>s
  flamecheck.py pprof FILE        gunzip + protobuf decode (no protoc needed);
                                  prints sample types, then folded lines
                                  (root first) with all values

Exit 0 when the file is well-formed, 1 with a message otherwise. Used by
lib/flame/flame_test.c and usable from integration tests.
"""
import gzip
import json
import signal
import sys
import xml.dom.minidom


def fail(msg):
    print("flamecheck: " + msg, file=sys.stderr)
    sys.exit(1)


def no_nan(s):
    fail("non-standard JSON constant %s" % s)


def speedscope(path):
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        d = json.loads(raw.decode("utf-8", errors="strict"), parse_constant=no_nan)
    except (ValueError, UnicodeDecodeError) as e:
        fail("bad JSON: %s" % e)
    if d.get("$schema") != "https://www.speedscope.app/file-format-schema.json":
        fail("missing $schema")
    frames = d["shared"]["frames"]
    if d.get("activeProfileIndex") != 0 or d.get("exporter") != "clrtap":
        fail("activeProfileIndex/exporter")
    for p in d["profiles"]:
        if p["type"] != "sampled" or p["unit"] not in ("none", "nanoseconds"):
            fail("profile type/unit")
        if len(p["samples"]) != len(p["weights"]):
            fail("samples and weights differ in length")
        if p["startValue"] != 0 or p["endValue"] != sum(p["weights"]):
            fail("endValue is not the sum of weights")
        for s, w in zip(p["samples"], p["weights"]):
            if not s or any(not (0 <= i < len(frames)) for i in s):
                fail("frame index out of range")
            print("%s %d" % (";".join(frames[i]["name"] for i in s), w))


def svg(path):
    try:
        doc = xml.dom.minidom.parse(path)
    except Exception as e:  # expat raises several types
        fail("bad XML: %s" % e)
    if doc.documentElement.tagName != "svg":
        fail("root element is not svg")
    for t in doc.getElementsByTagName("title"):
        print("".join(n.data for n in t.childNodes if n.nodeType == n.TEXT_NODE))


def varint(b, i):
    v = shift = 0
    while True:
        if i >= len(b):
            fail("truncated varint")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i
        if shift > 63:
            fail("varint too long")


def fields(b):
    """Yields (field, wiretype, value) of one message."""
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            if i + n > len(b):
                fail("truncated field %d" % f)
            v, i = b[i:i + n], i + n
        else:
            fail("unexpected wire type %d" % wt)
        yield f, wt, v


def packed(wt, v):
    if wt == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def pprof(path):
    with open(path, "rb") as fh:
        raw = fh.read()
    if raw[:2] != b"\x1f\x8b":
        fail("not gzip")
    b = gzip.decompress(raw)
    strings, types, samples, locs, funcs, other = [], [], [], {}, {}, {}
    for f, wt, v in fields(b):
        if f == 1:
            vt = dict((k, x) for k, _, x in fields(v))
            types.append((vt.get(1, 0), vt.get(2, 0)))
        elif f == 2:
            ids, vals = [], []
            for k, w, x in fields(v):
                if k == 1:
                    ids += packed(w, x)
                elif k == 2:
                    vals += packed(w, x)
            samples.append((ids, vals))
        elif f == 4:
            lid, fids = 0, []
            for k, _, x in fields(v):
                if k == 1:
                    lid = x
                elif k == 4:
                    fids += [y for kk, _, y in fields(x) if kk == 1]
            locs[lid] = fids
        elif f == 5:
            fn = dict((k, x) for k, _, x in fields(v))
            funcs[fn.get(1, 0)] = fn
        elif f == 6:
            strings.append(v.decode("utf-8", errors="strict"))
        else:
            other[f] = v
    if not strings or strings[0] != "":
        fail("string_table[0] is not empty")
    s = lambda i: strings[i] if i < len(strings) else fail("string index %d" % i)
    print("types " + ",".join("%s/%s" % (s(t), s(u)) for t, u in types))
    if 11 in other:
        pt = dict((k, x) for k, _, x in fields(other[11]))
        print("period_type %s/%s period %d" % (s(pt.get(1, 0)), s(pt.get(2, 0)), other.get(12, 0)))
    for k in (9, 10):
        if k in other:
            print("%s %d" % ("time_nanos" if k == 9 else "duration_nanos", other[k]))
    for ids, vals in samples:
        if len(vals) != len(types):
            fail("sample has %d values for %d types" % (len(vals), len(types)))
        names = []
        for lid in reversed(ids):  # stored leaf first
            if lid not in locs:
                fail("unknown location %d" % lid)
            for fid in locs[lid]:
                if fid not in funcs:
                    fail("unknown function %d" % fid)
                names.append(s(funcs[fid].get(2, 0)))
        print("%s %s" % (";".join(names), " ".join(str(x) for x in vals)))


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if len(sys.argv) != 3 or sys.argv[1] not in ("speedscope", "svg", "pprof"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    {"speedscope": speedscope, "svg": svg, "pprof": pprof}[sys.argv[1]](sys.argv[2])


main()
