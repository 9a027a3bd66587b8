#!/usr/bin/env python3
"""An independent client's view of the game wire protocol.

wire_table_check.py TABLE.json PROTOCOL.md VECTORS.jsonl

Knows nothing of the C codec: it reads contracts/gameserver-messages.json and
implements the encoding rules of contracts/gameserver-protocol.md section 2
(and the quantisation of its body section) from them alone. VECTORS holds
what the C codec produced (build/asan/tests/unit/test_wire --vectors): each
line a packet in hex and either the message the C side encoded (as
cc_wire_format prints it) or a kickoff packet with the ball's dequantised
floats. For every line this script decodes the bytes and must get the C
side's message, encodes the message and must get the C side's bytes, and
dequantises bodies to the C side's floats. It also checks the protocol
document's message and reason tables against the JSON table, and decodes
the document's example packets.

Exits 0 when everything agrees; otherwise prints each disagreement and
exits 1.
"""
import json
import fractions
import math
import re
import struct
import sys

SCALAR = {"u8": "<B", "u16": "<H", "u32": "<I", "i8": "<b", "i16": "<h"}
RANGE = {"u8": (0, 255), "u16": (0, 65535), "u32": (0, 2**32 - 1), "i8": (-128, 127), "i16": (-32768, 32767)}


class Refused(Exception):
    """The packet is not a valid message (kind: truncated, oversized, malformed, unknown)."""

    def __init__(self, kind, what):
        super().__init__(f"{kind}: {what}")
        self.kind = kind


def charset_ok(cs, raw):
    if cs == "token":
        return all(0x21 <= b <= 0x7E for b in raw)
    if cs == "text":
        return all(0x20 <= b <= 0x7E for b in raw)
    if cs == "slug":
        return all(chr(b) in "abcdefghijklmnopqrstuvwxyz0123456789_" for b in raw)
    if cs in ("name", "credential"):
        try:
            s = raw.decode("utf-8", "strict")
        except UnicodeDecodeError:
            return False
        if cs == "credential":
            return "\0" not in s
        return not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or 0xD800 <= ord(c) <= 0xDFFF for c in s)
    raise ValueError(f"unknown charset {cs}")


class Table:
    def __init__(self, doc):
        self.doc = doc
        self.types = {t["name"]: t for t in doc["types"]}
        self.by_id = {m["id"]: m for m in doc["messages"]}
        self.by_name = {m["name"]: m for m in doc["messages"]}
        assert doc["byte_order"] == "little-endian"

    # ---- decoding --------------------------------------------------------
    def decode(self, data):
        if len(data) < 2:
            raise Refused("truncated", "no id")
        (mid,) = struct.unpack_from("<H", data, 0)
        m = self.by_id.get(mid)
        if m is None:
            raise Refused("unknown", f"id {mid:#06x}")
        if len(data) > self.doc["max_packet"]:
            raise Refused("oversized", "over max_packet")
        fields = {}
        off = self.decode_fields(m["fields"], data, 2, fields)
        if off != len(data):
            raise Refused("oversized", f"{len(data) - off} bytes after the message")
        self.check_rules(m["name"], fields)
        return {"id": mid, "name": m["name"], "fields": fields}

    def decode_fields(self, fields, data, off, out):
        for f in fields:
            off, out[f["name"]] = self.decode_field(f, data, off)
        return off

    def take(self, data, off, n, f):
        if len(data) - off < n:
            raise Refused("truncated", f"{f['name']} needs {n} bytes")
        return data[off:off + n], off + n

    def decode_field(self, f, data, off):
        t = f["type"]
        if t in SCALAR:
            raw, off = self.take(data, off, struct.calcsize(SCALAR[t]), f)
            (v,) = struct.unpack(SCALAR[t], raw)
            lo, hi = f.get("min", RANGE[t][0]), f.get("max", RANGE[t][1])
            if not lo <= v <= hi or v & f.get("reserved_mask", 0):
                raise Refused("malformed", f"{f['name']} = {v}")
            return off, v
        if t == "bytes":
            raw, off = self.take(data, off, f["length"], f)
            return off, raw.hex()
        if t == "string":
            fmt = SCALAR[f["length_prefix"]]
            raw, off = self.take(data, off, struct.calcsize(fmt), f)
            (n,) = struct.unpack(fmt, raw)
            if n > f["max_length"]:
                raise Refused("oversized", f"{f['name']} length {n}")
            if n < f["min_length"]:
                raise Refused("malformed", f"{f['name']} length {n}")
            raw, off = self.take(data, off, n, f)
            if not charset_ok(f["charset"], raw):
                raise Refused("malformed", f"{f['name']} charset")
            return off, raw.decode("utf-8")
        if t == "blob":
            raw, off = self.take(data, off, 2, f)
            (n,) = struct.unpack("<H", raw)
            if n > f["max_length"]:
                raise Refused("oversized", f"{f['name']} length {n}")
            if n < f["min_length"]:
                raise Refused("malformed", f"{f['name']} length {n}")
            raw, off = self.take(data, off, n, f)
            return off, raw.hex()
        if t == "array":
            raw, off = self.take(data, off, 1, f)
            n = raw[0]
            if n > f["max_count"]:
                raise Refused("oversized", f"{f['name']} count {n}")
            if n < f["min_count"]:
                raise Refused("malformed", f"{f['name']} count {n}")
            items = []
            for _ in range(n):
                item = {}
                off = self.decode_fields(self.types[f["of"]]["fields"], data, off, item)
                items.append(item)
            return off, items
        if t == "struct":
            item = {}
            off = self.decode_fields(self.types[f["of"]]["fields"], data, off, item)
            return off, item
        raise ValueError(f"unknown field type {t}")

    def check_rules(self, name, m):
        """The cross-field rules, as the table's "rules" state them in prose."""
        if name in ("hello", "spectate", "resume"):
            raw = m["credential"].encode("utf-8")
            ok = charset_ok("token", raw) if m["auth"] == 1 else (len(raw) <= 32 and charset_ok("name", raw))
            if not ok:
                raise Refused("malformed", "credential")
        if name == "welcome":
            if m["snapshot_rate"] > m["tick_rate"] or m["team"] not in (0, 1, 255):
                raise Refused("malformed", "welcome rules")
            if m["slot"] != 255 and not (m["slot"] < 16 and m["slot"] < m["max_players"]):
                raise Refused("malformed", "slot")
        for key in ("players", "ships"):
            if key in m and len({p["slot"] for p in m[key]}) != len(m[key]):
                raise Refused("malformed", "duplicate slot")
        if name == "lobby_updated":
            if len(m["members"]) > m["max_players"] or len({x["member_id"] for x in m["members"]}) != len(m["members"]):
                raise Refused("malformed", "members")
        if name == "lobby_list" and any(x["members"] > x["max_players"] for x in m["lobbies"]):
            raise Refused("malformed", "lobby members")
        if name == "goal" and not (m["scorer"] < 16 or m["scorer"] == 255):
            raise Refused("malformed", "scorer")
        if name == "match_end" and m["winner"] not in (0, 1, 255):
            raise Refused("malformed", "winner")

    # ---- encoding --------------------------------------------------------
    def encode(self, msg):
        m = self.by_name[msg["name"]]
        assert m["id"] == msg["id"]
        return struct.pack("<H", m["id"]) + self.encode_fields(m["fields"], msg["fields"])

    def encode_fields(self, fields, value):
        out = b""
        for f in fields:
            v = value[f["name"]]
            t = f["type"]
            if t in SCALAR:
                out += struct.pack(SCALAR[t], v)
            elif t == "bytes":
                raw = bytes.fromhex(v)
                assert len(raw) == f["length"]
                out += raw
            elif t == "blob":
                raw = bytes.fromhex(v)
                out += struct.pack("<H", len(raw)) + raw
            elif t == "string":
                raw = v.encode("utf-8")
                out += struct.pack(SCALAR[f["length_prefix"]], len(raw)) + raw
            elif t == "array":
                out += struct.pack("<B", len(v))
                for item in v:
                    out += self.encode_fields(self.types[f["of"]]["fields"], item)
            elif t == "struct":
                out += self.encode_fields(self.types[f["of"]]["fields"], v)
        return out

    # ---- quantisation ----------------------------------------------------
    def dequantise(self, body):
        """A body's floats from the "scale" and "encoding" of the body type's fields."""
        fields = {f["name"]: f for f in self.types["body"]["fields"]}
        pos = [body[a] * fields[a]["scale"] for a in ("pos_x", "pos_y", "pos_z")]
        vel = [body[a] * fields[a]["scale"] for a in ("vel_x", "vel_y", "vel_z")]
        assert fields["rot"]["encoding"] == "smallest_three_10"
        assert fields["angvel"]["encoding"] == "packed_10x3"

        def s10(v):
            return v - 1024 if v >= 512 else v

        packed = body["rot"]
        largest = packed >> 30
        small = [s10((packed >> shift) & 0x3FF) / (511 * math.sqrt(2)) for shift in (20, 10, 0)]
        q = small[:largest] + [math.sqrt(max(0.0, 1 - sum(c * c for c in small)))] + small[largest:]
        norm = math.sqrt(sum(c * c for c in q))
        rot = [c / norm for c in q]
        w = body["angvel"]
        ang = [s10((w >> (10 * i)) & 0x3FF) * fields["angvel"]["scale"] for i in range(3)]
        return pos + rot + vel + ang


# ---- delta snapshots (protocol section 5, "The delta's bits"), from the document's prose alone ----
GROUP_BITS = (2, 3, 4, 5, 6, 8, 12, 33)


class Bits:
    """The delta's bit stream: least significant bit first, bit i is bit i % 8 of byte i // 8."""

    def __init__(self, data):
        self.data, self.n, self.i = data, len(data) * 8, 0

    def u(self, n):
        if self.n - self.i < n:
            raise Refused("truncated", "the delta ends")
        v = 0
        for k in range(n):
            v |= ((self.data[self.i // 8] >> (self.i % 8)) & 1) << k
            self.i += 1
        return v

    def group(self, k):
        w = GROUP_BITS[self.u(3)]
        out = []
        for _ in range(k):
            x = self.u(w)
            out.append(x - (1 << w) if x >> (w - 1) else x)
        return out


def s10(v):
    return v - 1024 if v >= 512 else v


def in_range(v, lo, hi, what):
    if not lo <= v <= hi:
        raise Refused("malformed", f"{what} = {v}")
    return v


def delta_body(bits, mask, b, n):
    if mask & 4 and mask & 8:
        raise Refused("malformed", "rot raw and delta")
    axes = ("x", "y", "z")
    bv = [b["vel_" + a] for a in axes]
    vel = list(bv)
    if mask & 1:
        vel = [in_range(v + d, -32768, 32767, "vel") for v, d in zip(bv, bits.group(3))]
    pred = [b["pos_" + a] + ((bv[k] + vel[k]) * n + vel[k] - bv[k] + 15) // 30 for k, a in enumerate(axes)]
    if mask & 2:
        pred = [p + d for p, d in zip(pred, bits.group(3))]
    pos = [in_range(p, -32768, 32767, "pos") for p in pred]
    rot = b["rot"]
    if mask & 4:
        rot = bits.u(32)
    if mask & 8:
        comps = [in_range(s10((rot >> sh) & 0x3FF) + d, -512, 511, "rot") for sh, d in zip((20, 10, 0), bits.group(3))]
        rot = (rot & 0xC0000000) | sum((c & 0x3FF) << sh for c, sh in zip(comps, (20, 10, 0)))
    ang = b["angvel"]
    if mask & 16:
        comps = [in_range(s10((ang >> sh) & 0x3FF) + d, -512, 511, "angvel") for sh, d in zip((0, 10, 20), bits.group(3))]
        ang = sum((c & 0x3FF) << sh for c, sh in zip(comps, (0, 10, 20)))
    return {"pos_x": pos[0], "pos_y": pos[1], "pos_z": pos[2], "rot": rot, "vel_x": vel[0], "vel_y": vel[1],
            "vel_z": vel[2], "angvel": ang}


def apply_delta(base, tick, age, data):
    """The snapshot (fields as the table names them) a delta rebuilds against base."""
    if base["tick"] != tick - age:
        raise Refused("malformed", "unknown base")
    bits = Bits(data)
    changes = bits.u(3)
    out = {"tick": tick, "match_state": base["match_state"], "score_0": base["score_0"], "score_1": base["score_1"]}
    if changes & 1:
        out["match_state"] = bits.u(8)
    if changes & 2:
        out["score_0"], out["score_1"] = bits.u(8), bits.u(8)
    out["clock_ticks"] = in_range(base["clock_ticks"] + bits.group(1)[0], 0, 2**32 - 1, "clock_ticks")
    if changes & 4:
        count = bits.u(5)
        if count > 16:
            raise Refused("oversized", "player count")
        slots = [bits.u(4) for _ in range(count)]
        if len(set(slots)) != len(slots):
            raise Refused("malformed", "duplicate slot")
    else:
        slots = [p["slot"] for p in base["players"]]
    out["ball"] = delta_body(bits, bits.u(5), base["ball"], age)
    zero_body = {k: 0 for k in ("pos_x", "pos_y", "pos_z", "rot", "vel_x", "vel_y", "vel_z", "angvel")}
    by_slot = {p["slot"]: p for p in base["players"]}
    players = []
    for slot in slots:
        pb = by_slot.get(slot, {"flags": 0, "last_input_seq": 0, "boost": 0, "body": zero_body})
        mask = bits.u(8)
        flags = bits.u(8) if mask & 1 else pb["flags"]
        seq = pb["last_input_seq"] + age
        if mask & 2:
            seq += in_range(bits.group(1)[0], -32768, 32767, "last_input_seq")
        boost = bits.u(8) if mask & 4 else pb["boost"]
        players.append({"slot": slot, "flags": flags, "last_input_seq": seq % 65536, "boost": boost,
                        "body": delta_body(bits, mask >> 3, pb["body"], age)})
    out["players"] = players
    left = bits.n - bits.i
    if left >= 8:
        raise Refused("oversized", "bytes after the delta")
    if bits.u(left):
        raise Refused("malformed", "padding bits set")
    return out


def check_document(table, md, problems):
    """The protocol document's message table and reason table say what the JSON says."""
    rows = re.findall(r"^\| (0x[0-9a-f]{4}) \| `(\w+)`\s*\| (\d) \| (client|server) → (?:server|client) \| (\d+)(?:-(\d+))? \|$",
                      md, re.M)
    seen = set()
    for hexid, name, ch, frm, lo, hi in rows:
        m = table.by_name.get(name)
        if m is None:
            problems.append(f"protocol.md lists {name}, the table does not")
            continue
        seen.add(name)
        want = (m["id_hex"], m["channel"], "client_to_server" if frm == "client" else "server_to_client",
                m["min_size"], m["max_size"])
        got = (hexid, int(ch), "client_to_server" if frm == "client" else "server_to_client", int(lo), int(hi or lo))
        if got != want:
            problems.append(f"protocol.md row for {name}: {got}, table {want}")
    for name in table.by_name:
        if name not in seen:
            problems.append(f"protocol.md's message table lacks {name}")
    reasons = re.findall(r"^\| (\d+) \| ([a-z_]+) \| (?:refused|kicked)", md, re.M)
    want = [(str(r["value"]), r["name"]) for r in table.doc["enums"]["reason"]]
    if reasons != want:
        problems.append(f"protocol.md's reason table {reasons} differs from the table's {want}")


def check_examples(table, md, problems):
    """The document's example packets decode, from the table alone, to what their captions say."""
    inline = re.findall(r"^Example \(([^)]*)\):\s*`([0-9a-f |]+)`", md, re.M | re.S)
    block = re.search(r"^Example snapshot \(.*?```\n(.*?)```", md, re.M | re.S)
    packets = [(caption, bytes.fromhex(h.replace("|", " "))) for caption, h in inline]
    if block:
        text = re.sub(r"[a-z]+:", " ", block.group(1))
        packets.append(("snapshot", bytes.fromhex(text)))
    want = {
        'name "Ann"': ("hello", lambda f: f["credential"] == "Ann" and f["tick_rate"] == 60),
        "seq 0x1234, last snapshot 0x01020304, two inputs":
            ("input", lambda f: f["newest_seq"] == 0x1234 and f["last_snapshot_tick"] == 0x01020304 and len(f["inputs"]) == 2),
        "snapshot": ("snapshot", lambda f: f["tick"] == 0x00010203 and table.dequantise(f["ball"])[:3] == [0, 9, -1 / 1024]
                     and table.dequantise(f["ball"])[7:] == [1, 0, -1, 1, 0, 0] and f["players"][0]["last_input_seq"] == 0xFFFE),
    }
    if len(packets) != len(want):
        problems.append(f"protocol.md: found {len(packets)} example packets, expected {len(want)}")
    for caption, data in packets:
        try:
            got = table.decode(data)
        except Refused as e:
            problems.append(f"protocol.md example ({caption}) does not decode: {e}")
            continue
        name, ok = want.get(caption, (None, None))
        if got["name"] != name or not ok(got["fields"]):
            problems.append(f"protocol.md example ({caption}) decodes to {got}")


def rot_of(table, packed):
    """A packed rot alone, dequantised from the table's rules (the quaternion of a body)."""
    body = {"pos_x": 0, "pos_y": 0, "pos_z": 0, "rot": packed, "vel_x": 0, "vel_y": 0, "vel_z": 0, "angvel": 0}
    return table.dequantise(body)[3:7]


def pack_rot(q):
    """The document's encoding rule (section 5, body), written from its prose: smallest three, 10 bits each."""
    norm = math.sqrt(sum(c * c for c in q))
    q = [c / norm for c in q]
    largest = max(range(4), key=lambda i: (abs(q[i]), -i))
    if q[largest] < 0:
        q = [-c for c in q]
    packed = largest << 30
    for shift, c in zip((20, 10, 0), [c for i, c in enumerate(q) if i != largest]):
        v = max(-511, min(511, round(c * 511 * math.sqrt(2))))
        packed |= (v & 0x3FF) << shift
    return packed


def check_rot_examples(table, md, problems):
    """The worked rot examples: bytes, number and quaternion agree, decoded and encoded from the rules alone."""
    rows = re.findall(r"^\| \(([-0-9/, .]+)\) \| `0x([0-9a-f]{8})` \| `([0-9a-f ]{11})` \|", md, re.M)
    if len(rows) < 3:
        problems.append(f"protocol.md: {len(rows)} worked rot examples, expected at least 3")
    distinct = 0
    for quat, hexval, wire in rows:
        q = [float(fractions.Fraction(c.strip())) for c in quat.split(",")]  # "2/9": the document's fractions
        packed = int(hexval, 16)
        data = bytes.fromhex(wire)
        if int.from_bytes(data, "little") != packed:
            problems.append(f"protocol.md rot example 0x{hexval}: its bytes {wire} are not that u32 little-endian")
        if pack_rot(q) != packed:
            problems.append(f"protocol.md rot example {quat}: packs to 0x{pack_rot(q):08x}, the document says 0x{hexval}")
        got = rot_of(table, int.from_bytes(data, "little"))
        dot = abs(sum(a * b for a, b in zip(got, [c / math.sqrt(sum(x * x for x in q)) for c in q])))
        angle = 2 * math.acos(min(1.0, dot))
        if angle > 0.005:
            problems.append(f"protocol.md rot example {wire}: decodes to {got}, {angle:.4f} rad from {quat}")
        fields = [(packed >> shift) & 0x3FF for shift in (20, 10, 0)]
        if len(set(fields)) == 3 and 0 not in fields:
            distinct += 1
    if rows and distinct == 0:
        problems.append("protocol.md: no rot example has three distinct non-zero packed components")
    return len(rows)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    table = Table(json.load(open(sys.argv[1], encoding="utf-8")))
    md = open(sys.argv[2], encoding="utf-8").read()
    problems = []
    check_document(table, md, problems)
    check_examples(table, md, problems)
    rots = check_rot_examples(table, md, problems)
    messages = bodies = deltas = 0
    names = set()
    for lineno, line in enumerate(open(sys.argv[3], encoding="utf-8"), 1):
        v = json.loads(line)
        data = bytes.fromhex(v["hex"])
        try:
            got = table.decode(data)
        except Refused as e:
            problems.append(f"vector {lineno}: the table refuses the C codec's bytes: {e}")
            continue
        if "delta_base" in v:
            deltas += 1
            f = got["fields"]
            try:
                mine = apply_delta(v["delta_base"]["fields"], f["tick"], f["base_age"], bytes.fromhex(f["delta"]))
            except Refused as e:
                problems.append(f"vector {lineno}: the document's rules refuse the C codec's delta: {e}")
                continue
            if mine != v["delta_result"]["fields"]:
                problems.append(f"vector {lineno}: the delta rebuilds to {mine}\n    C says {v['delta_result']['fields']}")
        elif "message" in v:
            messages += 1
            names.add(got["name"])
            if got != v["message"]:
                problems.append(f"vector {lineno}: decoded {got}\n    C says {v['message']}")
            again = table.encode(v["message"])
            if again != data:
                problems.append(f"vector {lineno} ({got['name']}): encoded {again.hex()}\n    C says {v['hex']}")
            # Every strict prefix is truncated for this decoder too.
            for cut in range(len(data)):
                try:
                    table.decode(data[:cut])
                    problems.append(f"vector {lineno}: a {cut}-byte prefix decodes")
                except Refused as e:
                    if e.kind != "truncated":
                        problems.append(f"vector {lineno}: a {cut}-byte prefix is {e.kind}, not truncated")
        else:
            bodies += 1
            mine = table.dequantise(got["fields"]["ball"])
            theirs = v["ball_pose"]
            for i, (a, b) in enumerate(zip(mine, theirs)):
                # Positions, velocities and angular velocities are exact (power-of-two
                # steps); the quaternion is computed in float on the C side.
                tol = 2e-7 if 3 <= i < 7 else 0.0
                if abs(a - b) > tol:
                    problems.append(f"vector {lineno}: component {i} dequantises to {a!r}, C says {b!r}")
    missing = set(table.by_name) - names
    if missing:
        problems.append(f"no vector for {sorted(missing)}")
    for p in problems:
        print("wire_table_check:", p)
    if deltas < 100:
        problems.append(f"only {deltas} delta vectors")
    print(f"wire_table_check: {messages} messages, {bodies} bodies and {deltas} deltas (rebuilt from section 5's "
          f"rules) checked against the C codec, {rots} rot examples from the document, {len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
