#!/usr/bin/env python3
"""Captures real diagnostics-IPC replies from a live .NET process into
tests/data/ipc/ (the unit tests and the fuzz seeds use them).

usage: capture-ipc.py SOCKET_PATH OUTDIR

Each file is one whole reply as the runtime sent it: the 20-byte header plus
payload (and, for ProcessEnvironment, the continuation block after it).
"""
import socket
import struct
import sys
import time


def header(cmd_set, cmd_id, payload_len):
    return b"DOTNET_IPC_V1\0" + struct.pack("<HBBH", 20 + payload_len, cmd_set, cmd_id, 0)


def transact(path, cmd_set, cmd_id, payload=b"", extra_read=False):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    s.sendall(header(cmd_set, cmd_id, len(payload)) + payload)
    data = b""
    deadline = time.time() + 5
    while time.time() < deadline:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        if not chunk:
            break
        data += chunk
        if not extra_read and len(data) >= 20 and len(data) >= struct.unpack_from("<H", data, 14)[0]:
            break
        if extra_read and len(data) >= 26:
            need = 20 + 6 + struct.unpack_from("<I", data, 20)[0]
            if len(data) >= need:
                break
    s.close()
    return data


def main():
    path, out = sys.argv[1], sys.argv[2]
    captures = {
        "process-info3.bin": (0x04, 0x08, b"", False),
        "process-info2.bin": (0x04, 0x04, b"", False),
        "process-info1.bin": (0x04, 0x00, b"", False),
        "process-env.bin": (0x04, 0x02, b"", True),
        "error-unknown-command.bin": (0x04, 0x7F, b"", False),
        "perfmap-disable-ok.bin": (0x04, 0x06, b"", False),
    }
    for name, (cs, ci, payload, extra) in captures.items():
        data = transact(path, cs, ci, payload, extra)
        with open(f"{out}/{name}", "wb") as f:
            f.write(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
