#!/usr/bin/python3
"""Independent implementation of contracts/join-token.md, for golden vectors.

Reads one JSON file (argv[1]) of inputs and prints one JSON object of
outputs, computed with nothing but Python's standard library (hmac,
hashlib, base64, struct, uuid), never with our C code:

  input:  {"keys": {"<key id>": "<standard base64 key>", ...},
           "join": [{"key_id", "match_id", "server_id", "slot",
                     "generation", "player_id", "expires_at"}, ...],
           "workload": [{"key_id", "allocation_id", "expires_at"}, ...],
           "roster": [{"match_id", "allocation_id", "server_id", "key_id",
                       "players": [{"slot", "team", "player_id",
                                    "generation", "expires_at"}, ...]}, ...]}
  output: {"join": [{"bytes": "<hex>", "token": "..."}, ...],
           "workload": [{"bytes": "<hex>", "token": "..."}, ...],
           "roster": [{"bytes": "<hex>", "digest": "<hex>"}, ...]}

tests/unit/test_token_golden.c writes the input, runs this with Debian's
/usr/bin/python3 and compares every value with the C implementation.
"""
import base64
import hashlib
import hmac
import json
import struct
import sys
import uuid


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def lp(text: str) -> bytes:
    """One length byte, then the UTF-8 (here: ASCII) bytes."""
    raw = text.encode("ascii")
    if len(raw) > 255:
        raise ValueError("string over 255 bytes")
    return bytes([len(raw)]) + raw


def uuid_bytes(text: str) -> bytes:
    return uuid.UUID(text).bytes  # 16 bytes, network (big-endian) order


def join_bytes(c) -> bytes:
    return (b"CCJT" + bytes([1]) + lp(c["key_id"]) + uuid_bytes(c["match_id"]) +
            lp(c["server_id"]) + struct.pack(">BI", c["slot"], c["generation"]) +
            uuid_bytes(c["player_id"]) + struct.pack(">q", c["expires_at"]))


def workload_bytes(c) -> bytes:
    return (b"CCWT" + bytes([1]) + lp(c["key_id"]) + uuid_bytes(c["allocation_id"]) +
            struct.pack(">q", c["expires_at"]))


def roster_bytes(r) -> bytes:
    out = (b"CCRM" + bytes([1]) + uuid_bytes(r["match_id"]) + uuid_bytes(r["allocation_id"]) +
           lp(r["server_id"]) + lp(r["key_id"]) + bytes([len(r["players"])]))
    for p in sorted(r["players"], key=lambda p: p["slot"]):
        out += struct.pack(">BB", p["slot"], p["team"]) + uuid_bytes(p["player_id"])
        out += struct.pack(">Iq", p["generation"], p["expires_at"])
    return out


def seal(keys, key_id: str, claims: bytes) -> str:
    tag = hmac.new(keys[key_id], claims, hashlib.sha256).digest()
    return b64url(claims) + "." + b64url(tag)


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    keys = {k: base64.b64decode(v, validate=True) for k, v in spec["keys"].items()}
    out = {"join": [], "workload": [], "roster": []}
    for c in spec.get("join", []):
        raw = join_bytes(c)
        out["join"].append({"bytes": raw.hex(), "token": seal(keys, c["key_id"], raw)})
    for c in spec.get("workload", []):
        raw = workload_bytes(c)
        out["workload"].append({"bytes": raw.hex(), "token": seal(keys, c["key_id"], raw)})
    for r in spec.get("roster", []):
        raw = roster_bytes(r)
        out["roster"].append({"bytes": raw.hex(), "digest": hashlib.sha256(raw).hexdigest()})
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
