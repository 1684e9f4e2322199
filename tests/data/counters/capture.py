#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Record an EventPipe session of a running .NET process into a file.

usage: capture.py PID OUT SECONDS PROVIDER...

Each PROVIDER is NAME|KEYWORDS|LEVEL|ARGUMENTS (ARGUMENTS may hold commas,
which clrtap's --providers syntax cannot). Sends CollectTracing2 (0x0203):
16 MB buffer, format 1, no rundown; copies the stream to OUT until the
runtime closes it, sending StopTracing on a second connection after SECONDS.
"""
import glob
import socket
import struct
import sys
import threading
import time


def ipc_str(s):
    if s is None:
        return struct.pack('<I', 0)
    b = (s + '\0').encode('utf-16-le')
    return struct.pack('<I', len(b) // 2) + b


def msg(cset, cid, payload):
    return b'DOTNET_IPC_V1\0' + struct.pack('<HBBH', 20 + len(payload), cset, cid, 0) + payload


def connect(pid):
    path = sorted(glob.glob('/tmp/dotnet-diagnostic-%d-*-socket' % pid))[-1]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def read_reply(s):
    hdr = b''
    while len(hdr) < 20:
        hdr += s.recv(20 - len(hdr))
    size, cset, cid, _ = struct.unpack('<HBBH', hdr[14:20])
    body = b''
    while len(body) < size - 20:
        body += s.recv(size - 20 - len(body))
    if cid != 0:
        raise SystemExit('runtime refused: %r' % body)
    return body


def main():
    pid, out, secs = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    provs = b''
    specs = sys.argv[4:]
    for spec in specs:
        name, kw, level, args = spec.split('|', 3)
        provs += struct.pack('<QI', int(kw, 0), int(level)) + ipc_str(name) + ipc_str(args or None)
    payload = struct.pack('<IIB', 16, 1, 0) + struct.pack('<I', len(specs)) + provs
    s = connect(pid)
    s.sendall(msg(2, 3, payload))
    session = struct.unpack('<Q', read_reply(s))[0]

    def stop():
        time.sleep(secs)
        c = connect(pid)
        c.sendall(msg(2, 1, struct.pack('<Q', session)))
        read_reply(c)
        c.close()

    threading.Thread(target=stop, daemon=True).start()
    with open(out, 'wb') as f:
        while True:
            b = s.recv(65536)
            if not b:
                break
            f.write(b)


main()
