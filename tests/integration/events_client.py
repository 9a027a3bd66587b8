#!/usr/bin/python3
"""Clients of cc-api's GET /v1/events for tests/integration/events_stream.sh.

  listen URL TOKEN OUT [--after N] [--subprotocol] [--local ADDR]
      A real WebSocket client (Debian's python3-websockets, not our frames):
      writes "<epoch ms>\t<message>" per received message to OUT, flushed at
      once, and "<code>\t<reason>" to OUT.close when the stream ends. Runs
      until the server closes or SIGTERM (then closes 1000).
  hostile URL TOKEN CASE
      Raw frames a client must not send, one case per connection; prints the
      close code the server sent ("eof" when it sent none).
  idle URL TOKEN N ADDR HOLD
      Opens N upgrades from source address ADDR, one after another, and
      prints {"101": k, "429": m, ...}; keeps the upgraded ones open until
      the file HOLD disappears.
"""
import asyncio
import base64
import json
import os
import signal
import socket
import struct
import sys
import time
import urllib.parse

import websockets


def ws_uri(url, after=None):
    u = urllib.parse.urlsplit(url)
    q = f"?after={after}" if after is not None else ""
    return f"ws://{u.netloc}/v1/events{q}"


async def listen(url, token, out, after, subprotocol, local):
    kw = {"open_timeout": 10, "ping_interval": None, "max_size": 1 << 20}
    if subprotocol:
        kw["subprotocols"] = ["cc.v1", "cc.v1.bearer." + token]
    else:
        kw["extra_headers"] = {"Authorization": "Bearer " + token}
    if local:
        kw["local_addr"] = (local, 0)
    code, reason = "none", ""
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    with open(out, "a", buffering=1) as f:
        try:
            async with websockets.connect(ws_uri(url, after), **kw) as ws:
                if subprotocol and ws.subprotocol != "cc.v1":
                    raise SystemExit(f"subprotocol {ws.subprotocol!r}, wanted cc.v1")
                stopper = asyncio.ensure_future(stop.wait())
                while True:
                    recv = asyncio.ensure_future(ws.recv())
                    done, _ = await asyncio.wait({recv, stopper}, return_when=asyncio.FIRST_COMPLETED)
                    if stopper in done:
                        recv.cancel()
                        await ws.close(1000)
                        code, reason = str(ws.close_code), ws.close_reason or ""
                        break
                    try:
                        msg = recv.result()
                    except websockets.exceptions.ConnectionClosed as e:
                        code = str(e.rcvd.code) if e.rcvd else "1006"
                        reason = e.rcvd.reason if e.rcvd else ""
                        break
                    f.write(f"{int(time.time() * 1000)}\t{msg}\n")
        except websockets.exceptions.InvalidStatusCode as e:
            code, reason = f"http{e.status_code}", ""
    with open(out + ".close", "w") as f:
        f.write(f"{code}\t{reason}\n")


def handshake(url, token, src=None, extra=""):
    u = urllib.parse.urlsplit(url)
    s = socket.create_connection((u.hostname, u.port), timeout=10,
                                 source_address=(src, 0) if src else None)
    key = base64.b64encode(os.urandom(16)).decode()
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    s.sendall((f"GET /v1/events HTTP/1.1\r\nHost: {u.netloc}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
               f"{auth}{extra}\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(4096)
        if not b:
            break
        head += b
    status = head.split(b" ", 2)[1].decode() if head.startswith(b"HTTP/1.1 ") else "none"
    return s, status, head.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in head else b""


def frame(opcode, payload, fin=True, masked=True):
    b0 = (0x80 if fin else 0) | opcode
    n = len(payload)
    if n < 126:
        hdr = struct.pack("!BB", b0, (0x80 if masked else 0) | n)
    elif n < 65536:
        hdr = struct.pack("!BBH", b0, (0x80 if masked else 0) | 126, n)
    else:
        hdr = struct.pack("!BBQ", b0, (0x80 if masked else 0) | 127, n)
    if not masked:
        return hdr + payload
    mask = os.urandom(4)
    return hdr + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload))


def close_code(s, rest):
    """Reads server frames until a close; returns its code, or 'eof'."""
    buf = rest
    s.settimeout(10)
    while True:
        while len(buf) >= 2:
            op, ln = buf[0] & 0x0F, buf[1] & 0x7F
            off = 2
            if ln == 126:
                if len(buf) < 4:
                    break
                ln, off = struct.unpack("!H", buf[2:4])[0], 4
            elif ln == 127:
                if len(buf) < 10:
                    break
                ln, off = struct.unpack("!Q", buf[2:10])[0], 10
            if len(buf) < off + ln:
                break
            payload, buf = buf[off:off + ln], buf[off + ln:]
            if op == 0x8:
                return str(struct.unpack("!H", payload[:2])[0]) if len(payload) >= 2 else "1005"
        try:
            b = s.recv(65536)
        except (socket.timeout, ConnectionResetError):
            return "eof"
        if not b:
            return "eof"
        buf += b


CASES = {
    "oversized": lambda: frame(0x1, b"x" * 2000),
    "unmasked": lambda: frame(0x1, b"hello", masked=False),
    "bad_utf8": lambda: frame(0x1, b"\xc3\x28 not utf-8"),
    "fragmented_ping": lambda: frame(0x9, b"p", fin=False),
    "binary": lambda: frame(0x2, b"\x00\x01"),
    "flood": lambda: b"".join(frame(0x1, b"{}") for _ in range(60)),
}


def hostile(url, token, case):
    s, status, rest = handshake(url, token)
    if status != "101":
        print(f"http{status}")
        return
    try:
        s.sendall(CASES[case]())
    except (BrokenPipeError, ConnectionResetError):
        pass
    print(close_code(s, rest))


def idle(url, token, n, src, hold):
    counts, keep = {}, []
    for _ in range(n):
        try:
            s, status, _ = handshake(url, token, src)
        except OSError as e:
            status = "connect:" + type(e).__name__
            s = None
        counts[status] = counts.get(status, 0) + 1
        if status == "101":
            keep.append(s)
        elif s:
            s.close()
    print(json.dumps(counts), flush=True)
    while os.path.exists(hold):
        time.sleep(0.05)
    for s in keep:
        s.close()


def main(argv):
    cmd = argv[1]
    if cmd == "listen":
        url, token, out = argv[2:5]
        after = None
        sub = "--subprotocol" in argv
        local = None
        if "--after" in argv:
            after = argv[argv.index("--after") + 1]
        if "--local" in argv:
            local = argv[argv.index("--local") + 1]
        asyncio.run(listen(url, token, out, after, sub, local))
    elif cmd == "hostile":
        hostile(argv[2], argv[3], argv[4])
    elif cmd == "idle":
        idle(argv[2], argv[3], int(argv[4]), argv[5], argv[6])
    else:
        raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    main(sys.argv)
