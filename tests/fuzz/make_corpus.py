#!/usr/bin/env python3
"""Writes the seed inputs of the transport's fuzz target (tests/fuzz/corpus/): well-formed
HTTP/2 conversations of a gRPC client after the preface, which the target adds (each opens
with SETTINGS, as a client must, or nghttp2 stops at its first frame). The fuzzer starts from these and mutates them. Run it again after changing it:
  tests/fuzz/make_corpus.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

DATA, HEADERS, PRIORITY, RST, SETTINGS, PING, GOAWAY, WINDOW, CONT = 0, 1, 2, 3, 4, 6, 7, 8, 9
END_STREAM, END_HEADERS, PADDED, PRIO = 0x1, 0x4, 0x8, 0x20


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def string(s):
    s = s.encode() if isinstance(s, str) else s
    assert len(s) < 127
    return bytes([len(s)]) + s


def literal(name, value, indexing=False):
    return bytes([0x40 if indexing else 0x00]) + string(name) + string(value)


def request(path, timeout=None, indexing=False):
    block = bytes([0x83, 0x86])  # :method POST, :scheme http (static 3 and 6)
    block += bytes([0x04]) + string(path)  # :path, name from static index 4
    block += literal(":authority", "localhost", indexing)
    block += literal("content-type", "application/grpc", indexing)
    block += literal("te", "trailers", indexing)
    if timeout:
        block += literal("grpc-timeout", timeout)
    return block


def message(body):
    return b"\x00" + struct.pack(">I", len(body)) + body


def settings(**values):
    ids = {"table": 1, "push": 2, "streams": 3, "window": 4, "frame": 5, "list": 6}
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", ids[k], v) for k, v in values.items()))


UNARY = "/fuzz.Echo/Unary"
STREAM = "/fuzz.Echo/Stream"
hello = message(b"\x0a\x05hello")

rpc = {
    "unary": settings() + frame(HEADERS, END_HEADERS, 1, request(UNARY))
    + frame(DATA, END_STREAM, 1, hello),
    "unary_timeout": settings(window=1 << 20, frame=1 << 15)
    + frame(HEADERS, END_HEADERS, 1, request(UNARY, "100m")) + frame(DATA, END_STREAM, 1, hello),
    "stream_two_messages": settings() + frame(HEADERS, END_HEADERS, 1, request(STREAM))
    + frame(DATA, 0, 1, hello) + frame(DATA, 0, 1, message(b"x" * 300))
    + frame(WINDOW, 0, 1, struct.pack(">I", 1 << 16)) + frame(DATA, END_STREAM, 1, b""),
    "indexed_headers": settings(table=256)
    + frame(HEADERS, END_HEADERS, 1, request(UNARY, indexing=True)) + frame(DATA, END_STREAM, 1, hello)
    # the second request refers to the first's dynamic entries (62, 63, 64)
    + frame(HEADERS, END_HEADERS, 3, bytes([0x83, 0x86, 0x04]) + string(UNARY) + bytes([0xbe, 0xbf, 0xc0]))
    + frame(DATA, END_STREAM, 3, hello),
    "continuation": settings() + frame(HEADERS, 0, 1, request(STREAM)[:9]) + frame(CONT, 0, 1, request(STREAM)[9:20])
    + frame(CONT, END_HEADERS, 1, request(STREAM)[20:]) + frame(DATA, END_STREAM, 1, message(b"")),
    "padded_priority": settings() + frame(HEADERS, END_HEADERS | PADDED | PRIO, 1, b"\x03" + b"\x00\x00\x00\x00\x10" + request(UNARY) + b"\x00" * 3)
    + frame(DATA, END_STREAM | PADDED, 1, b"\x02" + hello + b"\x00\x00"),
    "split_message": settings() + frame(HEADERS, END_HEADERS, 1, request(UNARY)) + frame(DATA, 0, 1, hello[:3])
    + frame(DATA, 0, 1, hello[3:8]) + frame(DATA, END_STREAM, 1, hello[8:]),
    "control": settings() + frame(PING, 0, 0, b"12345678") + frame(PING, 1, 0, b"87654321")
    + frame(WINDOW, 0, 0, struct.pack(">I", 1000)) + frame(PRIORITY, 0, 5, b"\x00\x00\x00\x01\x10")
    + frame(SETTINGS, 1, 0) + frame(HEADERS, END_HEADERS, 1, request(STREAM))
    + frame(RST, 0, 1, struct.pack(">I", 8)) + frame(GOAWAY, 0, 0, struct.pack(">II", 0, 0)),
    "many_streams": settings() + b"".join(frame(HEADERS, END_HEADERS, 2 * i + 1, request(UNARY)) for i in range(20))
    + b"".join(frame(DATA, END_STREAM, 2 * i + 1, hello) for i in range(20)),
}

for name, cases in (("rpc", rpc),):
    folder = os.path.join(HERE, "corpus", name)
    os.makedirs(folder, exist_ok=True)
    for case, data in cases.items():
        with open(os.path.join(folder, case), "wb") as f:
            f.write(data)
