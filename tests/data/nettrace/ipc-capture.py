#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Capture a nettrace stream over the diagnostics socket (how ipc-rundown was made).

usage: ipc-capture.py PID OUT SECONDS RUNDOWN_KEYWORD RUNTIME_KEYWORDS

Sends CollectTracing4 (0x0205) with a 16 MB buffer, format 1, the given
rundown keyword and stackwalk on, for the providers
Microsoft-DotNETCore-SampleProfiler (level 5) and
Microsoft-Windows-DotNETRuntime (RUNTIME_KEYWORDS, level 4); reads the stream
until the runtime closes it, sending StopTracing on a second connection after
SECONDS. Example: ipc-capture.py 1234 out.nettrace 0.25 0x118 0x8
"""
import glob
import os
import socket
import struct
import sys
import threading
import time


def ipc_string(s):
    if s is None:
        return struct.pack('<I', 0)
    b = (s + '\0').encode('utf-16-le')
    return struct.pack('<I', len(b) // 2) + b


def message(command_set, command_id, payload):
    return b'DOTNET_IPC_V1\0' + struct.pack('<HBBH', 20 + len(payload), command_set,
                                            command_id, 0) + payload


def main():
    pid = int(sys.argv[1])
    out = sys.argv[2]
    seconds = float(sys.argv[3])
    rundown = int(sys.argv[4], 0)
    providers = [(0, 5, 'Microsoft-DotNETCore-SampleProfiler', None),
                 (int(sys.argv[5], 0), 4, 'Microsoft-Windows-DotNETRuntime', None)]
    path = sorted(glob.glob('/tmp/dotnet-diagnostic-%d-*-socket' % pid), key=os.path.getmtime)[-1]

    payload = struct.pack('<IIQB', 16, 1, rundown, 1) + struct.pack('<I', len(providers))
    for keywords, level, name, args in providers:
        payload += struct.pack('<QI', keywords, level) + ipc_string(name) + ipc_string(args)
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(path)
    conn.sendall(message(2, 5, payload))
    header = conn.recv(20, socket.MSG_WAITALL)
    size = struct.unpack_from('<H', header, 14)[0]
    rest = conn.recv(size - 20, socket.MSG_WAITALL)
    if header[16] != 0xFF or header[17] != 0:
        sys.exit('CollectTracing4 failed: %s' % rest.hex())
    session = struct.unpack('<Q', rest)[0]

    data = bytearray()

    def reader():
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data.extend(chunk)

    t = threading.Thread(target=reader)
    t.start()
    time.sleep(seconds)
    stop = socket.socket(socket.AF_UNIX)
    stop.connect(path)
    stop.sendall(message(2, 1, struct.pack('<Q', session)))
    stop.recv(28, socket.MSG_WAITALL)
    stop.close()
    t.join()
    open(out, 'wb').write(data)
    print('wrote', len(data), 'bytes')


if __name__ == '__main__':
    main()
