#!/usr/bin/env python3
"""fleetcheck.py: reads what clrtap fleet pushed through THIRD-PARTY decoders
only (go tool pprof for pprof, protoc --decode over tests/tools/otlp-proto for
OTLP) and prints JSON for tests/integration/t-fleet.sh.

  fleetcheck.py pprof FILE...   -> [{"file", "ok", "flat": {function: samples}, "cum": {...}}]
  fleetcheck.py otlp FILE...    -> [{"file", "ok", "attrs": {key: value}, "attr_keys": [...],
                                     "self"/"cum": {function: value}, "strings_ok": bool}]
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
    leaves, locs, part, stacks = {}, {}, None, []
    for ln in r.stdout.split("\n"):
        if ln in ("Samples:", "Locations", "Mappings"):
            part = ln
            continue
        if part == "Samples:":
            m = re.match(r"^\s*(\d+)\s+\d+:\s+(\d+)", ln)
            if m:
                leaves[m.group(2)] = leaves.get(m.group(2), 0) + int(m.group(1))
                stacks.append((int(m.group(1)), ln.split(":", 1)[1].split()))
        elif part == "Locations":
            m = re.match(r"^\s*(\d+): 0x[0-9a-f]+ M=\d+ (.*) :\d+ s=\d+", ln)
            if m:
                locs[m.group(1)] = m.group(2)
    flat = {}
    for k, v in leaves.items():
        name = locs.get(k, "?" + k)
        flat[name] = flat.get(name, 0) + v
    cum = {}  # samples whose stack holds the function (once per sample)
    for n, ids in stacks:
        for name in set(locs.get(i, "?" + i) for i in ids):
            cum[name] = cum.get(name, 0) + n
    return {"file": path, "ok": True, "flat": flat, "cum": cum}


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
    prof = rp["scope_profiles"][0]["profiles"][0]
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
    return {"file": path, "ok": True, "attrs": attrs, "attr_keys": keys, "self": self_, "cum": cum,
            "strings_ok": strings_ok, "unknown_fields": len(unknown),
            "zero_entries": all(tbl and tbl[0] in ({}, b"") for tbl in
                                (dic.get("mapping_table"), dic.get("location_table"),
                                 dic.get("function_table"), dic.get("stack_table"), strings)),
            "time_unix_nano": prof.get("time_unix_nano", [0])[0],
            "sample_type": [strings[prof["sample_type"][0]["type_strindex"][0]].decode(),
                            strings[prof["sample_type"][0]["unit_strindex"][0]].decode()]}


mode, files = sys.argv[1], sys.argv[2:]
print(json.dumps([pprof(f) if mode == "pprof" else otlp(f) for f in files]))
