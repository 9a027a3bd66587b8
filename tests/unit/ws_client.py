#!/usr/bin/env python3
"""A real WebSocket client (Debian's python3-websockets) against test_ws's
server: handshake with a subprotocol, echo, a message too big (1009), and a
clean close. Run by tests/unit/test_ws.c with the server's port."""
import asyncio
import sys

import websockets


async def main(port):
    uri = f"ws://127.0.0.1:{port}/ws"
    async with websockets.connect(uri, subprotocols=["cc.v1"], open_timeout=5) as ws:
        assert ws.subprotocol == "cc.v1", ws.subprotocol
        for text in ["hello", "h\u00e9llo \U0001f680", "x" * 1000]:
            await ws.send(text)
            got = await asyncio.wait_for(ws.recv(), 5)
            assert got == text, (got[:40], text[:40])
        await ws.close(code=1000)
        assert ws.close_code == 1000, ws.close_code
    async with websockets.connect(uri, open_timeout=5) as ws:
        await ws.send("y" * 2000)
        try:
            await asyncio.wait_for(ws.recv(), 5)
            raise AssertionError("an oversized message was answered")
        except websockets.exceptions.ConnectionClosed as e:
            assert e.rcvd is not None and e.rcvd.code == 1009, e
    print("ws_client: ok")


asyncio.run(main(int(sys.argv[1])))
