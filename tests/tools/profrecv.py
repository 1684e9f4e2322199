#!/usr/bin/env python3
"""profrecv.py PORT DIR: a loopback receiver for clrtap fleet's tests.

Speaks Grafana Pyroscope's ingest API (POST /ingest?name=..&from=..&until=..
&format=pprof, the pprof in a multipart/form-data field "profile", or as the
whole body) and OTLP/HTTP profiles (POST /v1development/profiles,
application/x-protobuf, gzipped when Content-Encoding: gzip says so). Keeps what it
receives: DIR/N-pyro.pb.gz with DIR/N-pyro.json (the query, the headers), DIR/N-otlp.pb
(the protobuf, gunzipped) with DIR/N-otlp.json (the headers, the bytes on the wire). Answers 200
with an empty body. Prints "READY" once listening."""
import gzip
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

port, out = int(sys.argv[1]), sys.argv[2]
lock = threading.Lock()
# numbering goes on after what an earlier run of the receiver kept in DIR
count = [max([int(f.split("-")[0]) for f in os.listdir(out) if f[:5].isdigit()] or [0])]
MAX_BODY = 32 << 20


def next_index():
    with lock:
        count[0] += 1
        return count[0]


def multipart_field(body, ctype, field):
    """The bytes of one form-data field, by the boundary of the Content-Type."""
    b = None
    for part in ctype.split(";"):
        part = part.strip()
        if part.startswith("boundary="):
            b = part[len("boundary="):].strip('"')
    if not b:
        return None
    delim = b"--" + b.encode()
    for chunk in body.split(delim):
        head, sep, data = chunk.partition(b"\r\n\r\n")
        if not sep:
            continue
        if ('name="%s"' % field).encode() in head:
            return data[:-2] if data.endswith(b"\r\n") else data
    return None


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, code):
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        if n > MAX_BODY:
            self.reply(413)
            return
        body = self.rfile.read(n)
        u = urlsplit(self.path)
        i = next_index()
        if u.path == "/ingest":
            ctype = self.headers.get("Content-Type", "")
            prof = multipart_field(body, ctype, "profile") if ctype.startswith("multipart/") else body
            if prof is None:
                self.reply(400)
                return
            with open(os.path.join(out, "%05d-pyro.pb.gz" % i), "wb") as f:
                f.write(prof)
            meta = {"query": parse_qs(u.query, keep_blank_values=True), "raw_query": u.query,
                    "headers": {k: v for k, v in self.headers.items()}}
            with open(os.path.join(out, "%05d-pyro.json" % i), "w") as f:
                json.dump(meta, f)
            self.reply(200)
        elif u.path == "/v1development/profiles":
            if self.headers.get("Content-Type") != "application/x-protobuf":
                self.reply(415)
                return
            wire = len(body)
            if self.headers.get("Content-Encoding", "identity") == "gzip":
                try:
                    body = gzip.decompress(body)
                except (OSError, EOFError):
                    self.reply(400)
                    return
            elif self.headers.get("Content-Encoding", "identity") != "identity":
                self.reply(415)
                return
            with open(os.path.join(out, "%05d-otlp.pb" % i), "wb") as f:
                f.write(body)
            with open(os.path.join(out, "%05d-otlp.json" % i), "w") as f:
                json.dump({"headers": {k: v for k, v in self.headers.items()}, "wire_bytes": wire}, f)
            self.reply(200)
        else:
            self.reply(404)


srv = ThreadingHTTPServer(("127.0.0.1", port), H)
print("READY", flush=True)
srv.serve_forever()
