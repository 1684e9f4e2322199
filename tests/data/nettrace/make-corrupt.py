#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Derive the corrupt variants in this directory from runtime-gc-contention.nettrace.

usage: make-corrupt.py   (run from tests/data/nettrace; prints what it cut where)
"""
import struct

SRC = 'runtime-gc-contention.nettrace'


def blocks(data):
    """Yields (name, header offset, content offset, size, end offset) of each V5 block."""
    off = 12 + 20 + 3 + 8 + 4 + 5 + 1 + 48 + 1
    while data[off] != 1:
        hdr = off
        off += 3 + 8
        n = struct.unpack_from('<I', data, off)[0]
        off += 4
        name = data[off:off + n].decode()
        off += n + 1
        size = struct.unpack_from('<i', data, off)[0]
        off += 4
        off += (4 - off % 4) % 4
        yield name, hdr, off, size, off + size + 1
        off += size + 1


def main():
    data = open(SRC, 'rb').read()
    bl = list(blocks(data))
    events = [b for b in bl if b[0] == 'EventBlock']

    # 1. cut exactly where the 4th EventBlock's header starts
    cut = events[3][1]
    open('trunc-at-block.nettrace', 'wb').write(data[:cut])
    print('trunc-at-block: cut at', cut)

    # 2. cut in the middle of the 4th EventBlock's content
    name, hdr, content, size, end = events[3]
    cut = content + size // 2
    open('trunc-in-block.nettrace', 'wb').write(data[:cut])
    print('trunc-in-block: block content at', content, 'size', size, 'cut at', cut)

    # 3. block size of the 2nd EventBlock set to 0x7ffffff0 (over any cap)
    name, hdr, content, size, end = events[1]
    size_off = hdr + 3 + 8 + 4 + len(name) + 1
    b = bytearray(data)
    struct.pack_into('<i', b, size_off, 0x7FFFFFF0)
    open('oversized-block.nettrace', 'wb').write(bytes(b))
    print('oversized-block: block header at', hdr)

    # 4. first event of the 2nd EventBlock: flags 0x01 (metadata id follows)
    #    and a varuint of 6 bytes with the continuation bit on every byte
    b = bytearray(data)
    blob = content + 20
    b[blob:blob + 7] = bytes([0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
    open('oversized-varint.nettrace', 'wb').write(bytes(b))
    print('oversized-varint: blob at', blob)

    # 5. 64 flipped bytes spread over the whole file (fixed positions)
    b = bytearray(data)
    for i in range(64):
        pos = 200 + (i * 7919) % (len(data) - 200)
        b[pos] ^= 0x5A
    open('flipped-bytes.nettrace', 'wb').write(bytes(b))
    print('flipped-bytes: done')


if __name__ == '__main__':
    main()
