#!/usr/bin/env python3
"""tls_proxy - terminates TLS on loopback and forwards the plain bytes to a
loopback port: the HTTPS face of fake_k8s for cc-allocator's in-cluster test
(a pod talks HTTPS to the API server, verified with the service account's
CA). Tests only, never in a deployment; python3's ssl module, nothing else.

    tls_proxy.py --cert=PEM --key=PEM --target-port=N

Prints "listening <port>" (an ephemeral 127.0.0.1 port) once it serves, then
runs until SIGTERM/SIGINT. Each accepted connection gets its own thread: the
TLS handshake (a client that refuses the certificate ends it here, and the
target never sees a byte), then a plain connection to the target and bytes
pumped both ways until either side closes. The fake behind it keeps serving
exactly its documented shapes: this proxy only adds TLS.
"""
import argparse
import signal
import socket
import ssl
import sys
import threading


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        # Half-close so the other direction can finish its answer.
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def serve(conn, ctx, target_port):
    try:
        tls = ctx.wrap_socket(conn, server_side=True)
    except (ssl.SSLError, OSError) as e:
        print(f"tls_proxy: handshake refused: {e}", file=sys.stderr, flush=True)
        conn.close()
        return
    try:
        plain = socket.create_connection(("127.0.0.1", target_port), timeout=10)
        plain.settimeout(None)
    except OSError as e:
        print(f"tls_proxy: target 127.0.0.1:{target_port}: {e}", file=sys.stderr, flush=True)
        tls.close()
        return
    back = threading.Thread(target=pump, args=(plain, tls), daemon=True)
    back.start()
    pump(tls, plain)
    back.join(timeout=30)
    tls.close()
    plain.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--target-port", type=int, required=True)
    args = ap.parse_args()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(64)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"listening {lsock.getsockname()[1]}", flush=True)
    try:
        while True:
            conn, _ = lsock.accept()
            threading.Thread(target=serve, args=(conn, ctx, args.target_port), daemon=True).start()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
