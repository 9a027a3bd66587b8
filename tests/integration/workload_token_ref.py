#!/usr/bin/env python3
"""workload_token_ref.py SECRET_FILE KEY_ID ALLOCATION_ID EXPIRES_UNIX

Signs a workload token with Python's hmac, independently of our C code,
from the layout in libcommon/game/workload_token.h (contracts/join-token.md):
  claims = "CCWT" | u8 1 | u8 len, key id | 16-byte allocation id | i64 expires (big-endian)
  token  = base64url(claims) "." base64url(HMAC-SHA256(secret, claims)), unpadded
SECRET_FILE is a raw key file (one key under the id "": the file minus one
trailing newline). Prints the token.
"""
import base64
import hashlib
import hmac
import struct
import sys
import uuid


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def main():
    path, key_id, allocation_id, expires = sys.argv[1:5]
    key = open(path, "rb").read()
    if key.endswith(b"\r\n"):
        key = key[:-2]
    elif key.endswith(b"\n"):
        key = key[:-1]
    kid = key_id.encode()
    claims = b"CCWT" + bytes([1, len(kid)]) + kid + uuid.UUID(allocation_id).bytes + struct.pack(">q", int(expires))
    print(b64(claims) + "." + b64(hmac.new(key, claims, hashlib.sha256).digest()))


if __name__ == "__main__":
    main()
