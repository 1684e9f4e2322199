#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Re-encode a NetTrace V5 stream (what the runtime writes) as NetTrace V6.

No V6 writer is available on the capture machine (dotnet-trace collect-linux
needs the kernel's user_events), so the V6 sample is this script's output on a
real V5 capture. It follows microsoft/perfview NetTraceFormat.md (V6):
threads become Thread-block indexes, activity ids become label lists,
metadata rows are re-encoded (UTF-8 strings, u8 type codes, optional
metadata for opcode/keywords/level/version). Event payloads are unchanged.

usage: make-v6.py in.nettrace out.nettrace
       make-v6.py --synthetic out.nettrace   (a small hand-built V6 stream that
           also has label lists, RemoveThread, sequence-point flags and the
           V6-only field types; a fuzz seed)
"""
import struct
import sys


def varuint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def vstr(s):
    b = s.encode('utf-8')
    return varuint(len(b)) + b


class Cur:
    def __init__(self, b, off=0):
        self.b = b
        self.o = off

    def u8(self):
        v = self.b[self.o]
        self.o += 1
        return v

    def u16(self):
        v = struct.unpack_from('<H', self.b, self.o)[0]
        self.o += 2
        return v

    def u32(self):
        v = struct.unpack_from('<I', self.b, self.o)[0]
        self.o += 4
        return v

    def u64(self):
        v = struct.unpack_from('<Q', self.b, self.o)[0]
        self.o += 8
        return v

    def take(self, n):
        v = self.b[self.o:self.o + n]
        self.o += n
        return v

    def var(self):
        r = s = 0
        while True:
            b = self.u8()
            r |= (b & 0x7F) << s
            s += 7
            if not b & 0x80:
                return r

    def str16(self):
        e = self.o
        while self.b[e:e + 2] != b'\0\0':
            e += 2
        s = self.b[self.o:e].decode('utf-16-le')
        self.o = e + 2
        return s


def read_v5(data):
    assert data[:8] == b'Nettrace'
    c = Cur(data, 12 + 20)
    c.o += 3 + 8 + 4 + 5 + 1
    trace = c.take(48)
    c.o += 1
    blocks = []
    while data[c.o] != 1:
        c.o += 3 + 4
        c.u32()
        n = c.u32()
        name = c.take(n).decode()
        c.o += 1
        size = c.u32()
        c.o += (4 - c.o % 4) % 4
        blocks.append((name, data[c.o:c.o + size]))
        c.o += size + 1
    return trace, blocks


def blob_headers(content):
    """Yields absolute headers and payloads of a V5 compressed event/metadata block."""
    c = Cur(content)
    hs = c.u16()
    flags = c.u16()
    assert flags & 1
    c.o = hs
    h = dict(meta=0, seq=0, ctid=0, proc=0, tid=0, stack=0, ts=0, act=b'\0' * 16,
             rel=b'\0' * 16, size=0)
    while c.o < len(content):
        f = c.u8()
        if f & 1:
            h['meta'] = c.var()
        if f & 2:
            h['seq'] = (h['seq'] + c.var() + 1) & 0xFFFFFFFF
            h['ctid'] = c.var()
            h['proc'] = c.var()
        elif h['meta']:
            h['seq'] = (h['seq'] + 1) & 0xFFFFFFFF
        if f & 4:
            h['tid'] = c.var()
        if f & 8:
            h['stack'] = c.var()
        h['ts'] = (h['ts'] + c.var()) & 0xFFFFFFFFFFFFFFFF
        if f & 0x10:
            h['act'] = c.take(16)
        if f & 0x20:
            h['rel'] = c.take(16)
        h['sorted'] = bool(f & 0x40)
        if f & 0x80:
            h['size'] = c.var()
        yield dict(h), c.take(h['size'])


def v5_fields(c, n):
    out = []
    for _ in range(n):
        t = c.u32()
        sub = None
        if t == 1:
            sub = v5_fields(c, c.u32())
        out.append((c.str16(), t, sub, None))
    return out


def v2_type(c):
    t = c.u32()
    if t == 1:
        return (t, v2_fields(c, c.u32()), None)
    if t == 19:
        return (t, None, v2_type(c))
    return (t, None, None)


def v2_fields(c, n):
    out = []
    for _ in range(n):
        size = c.u32()
        end = c.o + size - 4
        name = c.str16()
        t, sub, elem = v2_type(c)
        c.o = end
        out.append((name, t, sub, elem))
    return out


def parse_meta(p):
    c = Cur(p)
    m = dict(id=c.u32(), provider=c.str16(), event_id=c.u32(), name=c.str16(),
             keywords=c.u64(), version=c.u32(), level=c.u32(), opcode=None, fields=[])
    if c.o < len(p):
        m['fields'] = v5_fields(c, c.u32())
    while c.o < len(p):
        n = c.u32()
        kind = c.u8()
        t = Cur(c.take(n))
        if kind == 1:
            m['opcode'] = t.u8()
        elif kind == 2:
            m['fields'] = v2_fields(t, t.u32())
    return m


def v6_type(t, sub, elem):
    out = bytes([t])
    if t == 1:
        out += v6_fields(sub)
    elif t == 19:
        out += v6_type(*elem)
    return out


def v6_fields(fields):
    out = struct.pack('<H', len(fields))
    for name, t, sub, elem in fields:
        body = vstr(name) + v6_type(t, sub, elem)
        out += struct.pack('<H', len(body)) + body
    return out


def v6_meta_row(m):
    opt = b''
    if m['opcode'] is not None:
        opt += bytes([1, m['opcode']])
    opt += bytes([3]) + struct.pack('<Q', m['keywords'])
    opt += bytes([8, m['level'] & 0xFF, 9, m['version'] & 0xFF])
    row = (varuint(m['id']) + vstr(m['provider']) + varuint(m['event_id']) + vstr(m['name']) +
           v6_fields(m['fields']) + struct.pack('<H', len(opt)) + opt)
    return struct.pack('<H', len(row)) + row


def block(kind, content):
    assert len(content) < 1 << 24
    return struct.pack('<I', (kind << 24) | len(content)) + content


def synthetic():
    out = bytearray(b'Nettrace' + struct.pack('<III', 0, 6, 0))
    tb = struct.pack('<8H', 2026, 1, 0, 2, 3, 4, 5, 6) + struct.pack('<qqii', 5, 10**9, 8, 2)
    tb += vstr('ProcessId') + vstr('4242') + vstr('HardwareThreadCount') + vstr('2')
    out += block(1, tb)
    rows = b''
    for idx, tid in ((1, 100), (2, 200)):
        row = varuint(idx) + bytes([1]) + vstr('worker') + bytes([2]) + varuint(4242) + \
            bytes([3]) + varuint(tid) + bytes([4]) + vstr('k') + vstr('v')
        rows += struct.pack('<H', len(row)) + row
    out += block(6, rows)
    fields = [('v', 20, None, None), ('u', 21, None, None), ('c', 23, None, None),
              ('b', 26, None, None), ('s', 18, None, None)]

    def t6(code, extra=b''):
        return bytes([code]) + extra
    body = struct.pack('<H', len(fields) + 3)
    for name, code, _, _ in fields:
        f = vstr(name) + t6(code)
        body += struct.pack('<H', len(f)) + f
    f = vstr('fa') + t6(22, t6(8) + struct.pack('<H', 2))
    body += struct.pack('<H', len(f)) + f
    f = vstr('rl') + t6(24, t6(10))
    body += struct.pack('<H', len(f)) + f
    f = vstr('o') + t6(1, struct.pack('<H', 1) + struct.pack('<H', 3) + vstr('x') + t6(9))
    body += struct.pack('<H', len(f)) + f
    opt = bytes([1, 1, 3]) + struct.pack('<Q', 0x10) + bytes([4]) + vstr('tmpl {v}') + \
        bytes([5]) + vstr('desc') + bytes([6]) + vstr('a') + vstr('b') + bytes([7]) + \
        bytes(range(16)) + bytes([8, 4, 9, 1])
    row = varuint(1) + vstr('Synthetic-V6') + varuint(3) + vstr('Ev') + body + \
        struct.pack('<H', len(opt)) + opt
    out += block(3, struct.pack('<H', 0) + struct.pack('<H', len(row)) + row)
    out += block(5, struct.pack('<IIII', 1, 2, 0, 8) + struct.pack('<Q', 0x7f0000001000))
    lab = struct.pack('<II', 1, 2) + bytes([0x01]) + bytes([0xaa] * 16) + bytes([0x82]) + \
        bytes([0xbb] * 16) + bytes([0x03]) + bytes(16) + bytes([0x04]) + struct.pack('<Q', 7) + \
        bytes([0x06]) + vstr('n') + varuint(9) + bytes([0x07, 1, 0x08]) + struct.pack('<Q', 1) + \
        bytes([0x09, 4, 0x8a, 2])
    out += block(8, lab)
    payload = varuint(5) + varuint(300) + b'Z' + b'\x01' + 'hi\0'.encode('utf-16-le') + \
        struct.pack('<HH', 1, 2) + struct.pack('<I', (8 << 16) | 4) + struct.pack('<i', -1) + \
        struct.pack('<II', 11, 12)
    ev = bytearray(struct.pack('<HHqq', 20, 1, 1, 3))
    for i in range(3):
        f = 0xFF if i == 0 else 0x1C
        hdr = bytes([f])
        if i == 0:
            hdr += varuint(1) + varuint(0) + varuint(2) + varuint(0) + varuint(1) + varuint(2)
            hdr += varuint(1) + varuint(1) + varuint(len(payload))
        else:
            hdr += varuint(1) + varuint(1 if i == 1 else 0) + varuint(1) + varuint(i % 3)
        ev += hdr + payload
    out += block(2, bytes(ev))
    out += block(7, varuint(2) + varuint(7))
    out += block(4, struct.pack('<QII', 9, 3, 1) + varuint(1) + varuint(0))
    out += block(99, b'future')
    out += block(0, b'')
    return bytes(out)


def main():
    if sys.argv[1] == '--synthetic':
        open(sys.argv[2], 'wb').write(synthetic())
        return
    data = open(sys.argv[1], 'rb').read()
    trace, blocks = read_v5(data)
    out = bytearray(b'Nettrace' + struct.pack('<III', 0, 6, 0))
    st = trace[:16]
    sync, freq, ptr, pid, ncpu, rate = struct.unpack_from('<qqIIII', trace, 16)
    kv = [('HardwareThreadCount', str(ncpu)), ('ProcessId', str(pid)),
          ('ExpectedCPUSamplingRate', str(rate))]
    tb = st + struct.pack('<qqii', sync, freq, ptr, len(kv))
    for k, v in kv:
        tb += vstr(k) + vstr(v)
    out += block(1, tb)

    threads = {}  # OS tid -> index
    labels = {}   # (act, rel) -> label list id, per sequence-point region

    def thread_index(tid, pending):
        if tid not in threads:
            threads[tid] = len(threads) + 1
            row = varuint(threads[tid]) + bytes([3]) + varuint(tid) + bytes([2]) + varuint(pid)
            pending.append(struct.pack('<H', len(row)) + row)
        return threads[tid]

    for name, content in blocks:
        if name == 'MetadataBlock':
            rows = b''.join(v6_meta_row(parse_meta(p)) for h, p in blob_headers(content))
            out += block(3, struct.pack('<H', 0) + rows)
        elif name == 'StackBlock':
            out += block(5, content)
        elif name == 'SPBlock':
            c = Cur(content)
            ts = c.u64()
            n = c.u32()
            pending = []
            body = b''
            for _ in range(n):
                tid = c.u64()
                seq = c.u32()
                body += varuint(thread_index(tid, pending)) + varuint(seq)
            if pending:
                out += block(6, b''.join(pending))
            out += block(4, struct.pack('<QII', ts, 0, n) + body)
            labels.clear()
        elif name == 'EventBlock':
            pending = []
            new_labels = []
            rows = bytearray()
            prev = dict(meta=0, seq=0, ctid=0, proc=0, tid=0, stack=0, ts=0, label=0, size=0)
            tsmin = tsmax = None
            for h, p in blob_headers(content):
                tid = thread_index(h['tid'], pending)
                ctid = thread_index(h['ctid'], pending)
                label = 0
                if h['act'] != b'\0' * 16 or h['rel'] != b'\0' * 16:
                    key = (h['act'], h['rel'])
                    if key not in labels:
                        labels[key] = len(labels) + 1
                        lst = b''
                        if h['act'] != b'\0' * 16:
                            lst += bytes([1]) + h['act']
                        if h['rel'] != b'\0' * 16:
                            lst += bytes([2]) + h['rel']
                        lst = bytearray(lst)
                        lst[0] |= 0x80 if len(lst) == 17 else 0
                        if len(lst) == 34:
                            lst[17] |= 0x80
                        new_labels.append((labels[key], bytes(lst)))
                    label = labels[key]
                f = 0
                hdr = bytearray()
                if h['meta'] != prev['meta']:
                    f |= 1
                    hdr += varuint(h['meta'])
                if h['seq'] != (prev['seq'] + 1) & 0xFFFFFFFF or ctid != prev['ctid'] or \
                        h['proc'] != prev['proc']:
                    f |= 2
                    hdr += varuint((h['seq'] - prev['seq'] - 1) & 0xFFFFFFFF)
                    hdr += varuint(ctid) + varuint(h['proc'])
                if tid != prev['tid']:
                    f |= 4
                    hdr += varuint(tid)
                if h['stack'] != prev['stack']:
                    f |= 8
                    hdr += varuint(h['stack'])
                hdr += varuint((h['ts'] - prev['ts']) & 0xFFFFFFFFFFFFFFFF)
                if label != prev['label']:
                    f |= 0x10
                    hdr += varuint(label)
                if h['sorted']:
                    f |= 0x40
                if len(p) != prev['size']:
                    f |= 0x80
                    hdr += varuint(len(p))
                rows += bytes([f]) + hdr + p
                prev = dict(meta=h['meta'], seq=h['seq'], ctid=ctid, proc=h['proc'], tid=tid,
                            stack=h['stack'], ts=h['ts'], label=label, size=len(p))
                tsmin = h['ts'] if tsmin is None else min(tsmin, h['ts'])
                tsmax = h['ts'] if tsmax is None else max(tsmax, h['ts'])
            if pending:
                out += block(6, b''.join(pending))
            if new_labels:
                first = new_labels[0][0]
                out += block(8, struct.pack('<II', first, len(new_labels)) +
                             b''.join(x for _, x in new_labels))
            out += block(2, struct.pack('<HHqq', 20, 1, tsmin or 0, tsmax or 0) + rows)
    out += block(0, b'')
    open(sys.argv[2], 'wb').write(out)


if __name__ == '__main__':
    main()
