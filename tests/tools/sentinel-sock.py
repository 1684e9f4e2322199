#!/usr/bin/env python3
"""sentinel-sock.py PATH LOG: a host Unix socket that a hostile container must
not get clrtap to reach (issue 19, cases 1-3). Listens on PATH and appends one
line per connection to LOG ("CONNECT" and the first bytes sent, hex), then
closes it without answering. Prints "READY" when listening; removes PATH on
SIGTERM."""
import os
import signal
import socket
import sys

path, log = sys.argv[1], sys.argv[2]


def stop(*_):
    try:
        os.unlink(path)
    finally:
        os._exit(0)


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(16)
print("READY", flush=True)
while True:
    c, _ = s.accept()
    c.settimeout(0.5)
    try:
        data = c.recv(64)
    except OSError:
        data = b""
    with open(log, "a") as f:
        f.write("CONNECT %s\n" % data.hex())
    c.close()
