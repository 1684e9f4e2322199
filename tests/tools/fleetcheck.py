#!/usr/bin/env python3
"""fleetcheck.py: reads what clrtap fleet pushed through THIRD-PARTY decoders
only (go tool pprof for pprof, protoc --decode over tests/tools/otlp-proto for
OTLP) and prints JSON for tests/integration/t-fleet.sh.

  fleetcheck.py pprof FILE...   -> [{"file", "ok", "flat": {function: samples}, "cum": {...},
                                     "types": ["type/unit", ...], "vcum": {"type/unit": {function: value}},
                                     "vflat": {...}}]
  fleetcheck.py otlp FILE...    -> [{"file", "ok", "attrs": {key: value}, "attr_keys": [...],
                                     "self"/"cum": {function: value}, "strings_ok": bool,
                                     "profiles": [{"sample_type", "self", "cum"}, ...]}]
  fleetcheck.py events pprof|otlp PID FILE... -> the profile types besides CPU of PID summed
                                     over the files (see event_totals)
cum counts a sample once for every function its stack holds.
A file a decoder refuses has ok false and its error."""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, "otlp-proto")
REQ = "opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest"
REQ_FILE = "opentelemetry/proto/collector/profiles/v1development/profiles_service.proto"


def pprof(path):
    # -raw: every sample (values, then location ids leaf first) and every location,
    # as Go's own profile package decoded them
    r = subprocess.run(["go", "tool", "pprof", "-raw", path], capture_output=True, text=True,
                       errors="surrogateescape")
    if r.returncode != 0 or "\nSamples:\n" not in r.stdout:
        return {"file": path, "ok": False, "error": (r.stderr or r.stdout)[-800:]}
    leaves, locs, part, stacks, types = {}, {}, None, [], []
    for ln in r.stdout.split("\n"):
        if ln in ("Samples:", "Locations", "Mappings"):
            part = ln
            continue
        if part == "Samples:" and not types:
            types = ln.split()  # the sample types' line: "type/unit ..."
            continue
        if part == "Samples:":
            m = re.match(r"^\s*(\d+(?:\s+\d+)*):\s+(\d+)", ln)
            if m:
                vals = [int(x) for x in m.group(1).split()]
                leaves[m.group(2)] = leaves.get(m.group(2), 0) + vals[0]
                stacks.append((vals, ln.split(":", 1)[1].split()))
        elif part == "Locations":
            m = re.match(r"^\s*(\d+): 0x[0-9a-f]+ M=\d+ (.*) :\d+ s=\d+", ln)
            if m:
                locs[m.group(1)] = m.group(2)
    flat = {}
    for k, v in leaves.items():
        name = locs.get(k, "?" + k)
        flat[name] = flat.get(name, 0) + v
    cum = {}  # samples whose stack holds the function (once per sample)
    vcum = {t: {} for t in types}
    vflat = {t: {} for t in types}
    for vals, ids in stacks:
        names = set(locs.get(i, "?" + i) for i in ids)
        for name in names:
            cum[name] = cum.get(name, 0) + vals[0]
        for t, v in zip(types, vals):
            for name in names:
                vcum[t][name] = vcum[t].get(name, 0) + v
            leaf = locs.get(ids[0], "?" + ids[0])
            vflat[t][leaf] = vflat[t].get(leaf, 0) + v
    return {"file": path, "ok": True, "flat": flat, "cum": cum, "types": types, "vcum": vcum,
            "vflat": vflat}


def unescape(s):
    """protoc's text-format string body -> bytes."""
    b = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            b += c.encode("utf-8", "surrogateescape")
            i += 1
            continue
        n = s[i + 1]
        if n in "01234567":
            j = i + 1
            while j < len(s) and j < i + 4 and s[j] in "01234567":
                j += 1
            b.append(int(s[i + 1:j], 8))
            i = j
        elif n == "x":
            j = i + 2
            while j < len(s) and j < i + 4 and s[j] in "0123456789abcdefABCDEF":
                j += 1
            b.append(int(s[i + 2:j], 16))
            i = j
        else:
            b += {"n": b"\n", "r": b"\r", "t": b"\t", '"': b'"', "'": b"'", "\\": b"\\",
                  "a": b"\a", "b": b"\b", "f": b"\f", "v": b"\v"}.get(n, n.encode())
            i += 2
    return bytes(b)


def parse_text(text):
    """protoc text format -> nested dicts of lists."""
    root = {}
    stack = [root]
    for ln in text.split("\n"):
        ln = ln.strip()
        if not ln:
            continue
        if ln == "}":
            stack.pop()
            continue
        if ln.endswith("{"):
            name = ln[:-1].strip()
            d = {}
            stack[-1].setdefault(name, []).append(d)
            stack.append(d)
            continue
        k, _, v = ln.partition(": ")
        if v.startswith('"'):
            v = unescape(v[1:-1])
        else:
            v = int(v) if re.match(r"^-?\d+$", v) else v
        stack[-1].setdefault(k, []).append(v)
    return root


def otlp(path):
    with open(path, "rb") as f:
        r = subprocess.run(["protoc", "-I", PROTO_DIR, "--decode=" + REQ, REQ_FILE], stdin=f,
                           capture_output=True)
    if r.returncode != 0:
        return {"file": path, "ok": False, "error": r.stderr.decode(errors="replace")[-800:]}
    d = parse_text(r.stdout.decode("utf-8", "surrogateescape"))
    unknown = re.findall(rb"^\s*\d+: ", r.stdout, re.M)  # fields the .proto does not know
    rp = d["resource_profiles"][0]
    attrs, keys = {}, []
    strings_ok = True
    for kv in rp["resource"][0].get("attributes", []):
        k = kv["key"][0].decode("utf-8")
        v = kv["value"][0]
        val = v["string_value"][0] if "string_value" in v else v.get("int_value", [None])[0]
        if isinstance(val, bytes):
            try:
                val = val.decode("utf-8")
            except UnicodeDecodeError:
                strings_ok = False
                val = val.decode("utf-8", "replace")
        keys.append(k)
        attrs[k] = val
    dic = d["dictionary"][0]
    strings = [s if isinstance(s, bytes) else b"" for s in dic.get("string_table", [])]
    for s in strings:
        try:
            s.decode("utf-8")
        except UnicodeDecodeError:
            strings_ok = False
    funcs = dic.get("function_table", [])
    locs = dic.get("location_table", [])
    stacks = dic.get("stack_table", [])
    profiles = []
    for prof in rp["scope_profiles"][0]["profiles"]:
        self_, cum = sums(prof, stacks, locs, funcs, strings)
        profiles.append({"self": self_, "cum": cum, "sample_type": [
            strings[prof["sample_type"][0]["type_strindex"][0]].decode(),
            strings[prof["sample_type"][0]["unit_strindex"][0]].decode()]})
    prof = rp["scope_profiles"][0]["profiles"][0]
    self_, cum = sums(prof, stacks, locs, funcs, strings)
    return {"file": path, "ok": True, "attrs": attrs, "attr_keys": keys, "self": self_, "cum": cum,
            "strings_ok": strings_ok, "unknown_fields": len(unknown), "profiles": profiles,
            "zero_entries": all(tbl and tbl[0] in ({}, b"") for tbl in
                                (dic.get("mapping_table"), dic.get("location_table"),
                                 dic.get("function_table"), dic.get("stack_table"), strings)),
            "time_unix_nano": prof.get("time_unix_nano", [0])[0],
            "sample_type": profiles[0]["sample_type"]}


def sums(prof, stacks, locs, funcs, strings):
    """Per function: the values of samples whose leaf it is (self), whose stack holds it (cum)."""
    self_, cum = {}, {}
    for smp in prof.get("samples", []):
        st = stacks[smp["stack_index"][0]]
        names = set()
        for li in st["location_indices"]:
            f = funcs[locs[li]["lines"][0]["function_index"][0]]
            names.add(strings[f["name_strindex"][0]].decode("utf-8", "replace"))
        for name in names:
            cum[name] = cum.get(name, 0) + sum(smp.get("values", [0]))
        leaf = st["location_indices"][0]
        fn = funcs[locs[leaf]["lines"][0]["function_index"][0]]
        name = strings[fn["name_strindex"][0]].decode("utf-8", "replace")
        self_[name] = self_.get(name, 0) + sum(smp.get("values", [0]))
    return self_, cum


def event_totals(fmt, pid, files):
    """The profile types besides CPU of one process, summed over its windows:
    {"type/unit": {"self": {function: v}, "cum": {function: v}}}, and the windows not decoded."""
    tot, bad = {}, []

    def add(t, self_, cum):
        e = tot.setdefault(t, {"self": {}, "cum": {}})
        for k, d in (("self", self_), ("cum", cum)):
            for name, v in d.items():
                e[k][name] = e[k].get(name, 0) + v
    for f in files:
        if fmt == "pprof":
            w = pprof(f)
            if not w["ok"]:
                bad.append(w)
                continue
            for t in w["types"]:
                add(t, w["vflat"][t], w["vcum"][t])
        else:
            r = otlp(f)
            if not r["ok"]:
                bad.append(r)
                continue
            if r["attrs"].get("process.pid") != pid:
                continue
            for p in r["profiles"]:
                if p["sample_type"] != ["samples", "count"]:
                    add("/".join(p["sample_type"]), p["self"], p["cum"])
    return {"totals": tot, "bad": bad}


mode, files = sys.argv[1], sys.argv[2:]
if mode == "events":  # events pprof|otlp PID FILE...
    print(json.dumps(event_totals(files[0], int(files[1]), files[2:])))
else:
    print(json.dumps([pprof(f) if mode == "pprof" else otlp(f) for f in files]))
