#!/usr/bin/python3
"""review22: N upgrades at once against GET /v1/events; prints a JSON count
of outcomes: "503" (refused before the upgrade), "101-open" (a stream that
sent its stream.ready), "101-dropped" (a 101, then the socket closed with no
close frame: the client sees 1006)."""
import json
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from events_client import handshake  # noqa: E402


def one(url, token, out, lock, keep):
    try:
        s, status, rest = handshake(url, token)
    except OSError as e:
        status, s = "connect:" + type(e).__name__, None
    kind = status
    if status == "101":
        s.settimeout(3)
        buf = rest
        try:
            while len(buf) < 2:
                b = s.recv(4096)
                if not b:
                    break
                buf += b
        except socket.timeout:
            pass
        kind = "101-open" if len(buf) >= 2 and (buf[0] & 0x0F) == 1 else "101-dropped"
        keep.append(s)
    elif s:
        s.close()
    with lock:
        out[kind] = out.get(kind, 0) + 1


def main():
    url, token, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    out, lock, keep = {}, threading.Lock(), []
    ts = [threading.Thread(target=one, args=(url, token, out, lock, keep)) for _ in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(json.dumps(out, sort_keys=True), flush=True)
    for s in keep:
        s.close()


main()
