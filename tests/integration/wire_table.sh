#!/usr/bin/env bash
# The game wire protocol as an independent client sees it (issue 11): a
# Python decoder/encoder built from contracts/gameserver-messages.json alone
# (tests/integration/wire_table_check.py) reads and writes the C codec's
# bytes for every message and dequantises its bodies to the C codec's
# floats, and contracts/gameserver-protocol.md's tables say what the JSON
# says. It also rebuilds 300 of the C codec's snapshot_delta packets
# (issue 24) against their bases from section 5's rules alone and must get
# the C side's snapshots. test_wire (unit) proves the JSON equal to the codec's own table;
# together the three cannot drift apart. The document's worked rot examples
# are decoded and re-encoded from its rules alone, and the numbers it
# states for cc-gameserver's limits are the binary's --help defaults, and
# section 6's arena table and goal line are libcommon/game/sim.h's constants.
source "$(dirname "$0")/lib.sh"

vectors="$T_DIR/vectors.jsonl"
"$TOP/build/asan/tests/unit/test_wire" --vectors >"$vectors" ||
	fail "build/asan/tests/unit/test_wire --vectors exited $? (built? make tests-build)"
lines=$(wc -l <"$vectors")
[[ $lines -gt 20 ]] || fail "test_wire --vectors printed $lines lines, expected every sample and the bodies"

out=$(python3 "$TOP/tests/integration/wire_table_check.py" "$TOP/contracts/gameserver-messages.json" \
	"$TOP/contracts/gameserver-protocol.md" "$vectors" 2>&1) ||
	fail "python3 tests/integration/wire_table_check.py disagrees with the C codec:
$out"
pass "$(tail -n 1 <<<"$out")"

# Section 8's faulty-message threshold is cc-gameserver's default, stated twice there: tied to --help.
help=$("$BIN/cc-gameserver" --help 2>&1) || true
default=$(grep -oP -- '--max-bad-messages=INT.*\(default: \K[0-9]+' <<<"$help") ||
	fail "cc-gameserver --help shows no default for --max-bad-messages: $(grep -- --max-bad <<<"$help")"
doc=$(grep -oP 'tolerates \*\*\K[0-9]+(?=\*\* faulty messages)' "$TOP/contracts/gameserver-protocol.md") ||
	fail "contracts/gameserver-protocol.md section 8 states no threshold ('tolerates **N** faulty messages')"
doc_flag=$(grep -oP '`--max-bad-messages`, default \K[0-9]+' "$TOP/contracts/gameserver-protocol.md") ||
	fail "contracts/gameserver-protocol.md section 8 does not name --max-bad-messages with its default"
doc_kick=$(grep -oP 'kicks `malformed` on the \K[0-9]+(?=th)' "$TOP/contracts/gameserver-protocol.md") ||
	fail "contracts/gameserver-protocol.md section 8 does not say on which faulty message the kick comes"
expect_eq "faulty messages tolerated: protocol section 8 vs cc-gameserver --help default" "$default" "$doc"
expect_eq "section 8's --max-bad-messages default vs --help" "$default" "$doc_flag"
expect_eq "section 8: the kick comes on the message after the threshold" "$((default + 1))" "$doc_kick"
pass "section 8's faulty-message threshold ($doc tolerated, kicked on faulty message $doc_kick) is cc-gameserver's default"

# Section 6's arena table and goal rule are sim.h's constants (the document
# says sim.h is the truth): every number a client predicts collisions and
# goals with, read from both and compared, so neither drifts alone.
geo=$(python3 - "$TOP/libcommon/game/sim.h" "$TOP/contracts/gameserver-protocol.md" <<'PY'
import re, sys
sim = dict(re.findall(r"^#define (CC_SIM_[A-Z_]+) ([0-9.]+)f?\b", open(sys.argv[1]).read(), re.M))
md = open(sys.argv[2], encoding="utf-8").read()
def row(what):
    m = re.search(r"^\| " + what + r" \| (.*) \|$", md, re.M)
    if not m:
        print(f"section 6 has no '{what}' row in its arena table"); sys.exit(1)
    return m.group(1)
N = r"(-?[0-9.]+)"
want = [  # (row, regex over the row with one number group each, the constant it states)
    ("arena", r"x in \[-" + N, sim["CC_SIM_ARENA_HALF_X"]), ("arena", r"y in \[0, " + N, sim["CC_SIM_ARENA_HEIGHT"]),
    ("arena", r"z in \[-" + N, sim["CC_SIM_ARENA_HALF_Z"]),
    ("goal mouth", r"x in \[-" + N, sim["CC_SIM_GOAL_HALF_WIDTH"]),
    ("goal mouth", r"y in \[" + N, float(sim["CC_SIM_GOAL_CENTER_Y"]) - float(sim["CC_SIM_GOAL_HALF_HEIGHT"])),
    ("goal mouth", r"y in \[[0-9.]+, " + N, float(sim["CC_SIM_GOAL_CENTER_Y"]) + float(sim["CC_SIM_GOAL_HALF_HEIGHT"])),
    ("goal box", N + r" m deep", sim["CC_SIM_GOAL_DEPTH"]),
    ("ball", r"radius " + N, sim["CC_SIM_BALL_RADIUS"]), ("ball", r"mass " + N, sim["CC_SIM_BALL_MASS"]),
    ("ball", r"drag " + N, sim["CC_SIM_BALL_LIN_DRAG"]), ("ball", r"speed at most " + N, sim["CC_SIM_BALL_MAX_SPEED"]),
    ("ball", r"walls with restitution " + N, sim["CC_SIM_BALL_WALL_RESTITUTION"]),
    ("ship", r"radius " + N, sim["CC_SIM_SHIP_RADIUS"]), ("ship", r"mass " + N, sim["CC_SIM_SHIP_MASS"]),
    ("ship", r"speed at most " + N, sim["CC_SIM_SHIP_MAX_SPEED"]), ("ship", r"\(" + N + r" m/s boosting", sim["CC_SIM_SHIP_MAX_BOOST_SPEED"]),
    ("ship", r"walls with restitution " + N, sim["CC_SIM_SHIP_WALL_RESTITUTION"]),
    ("ship", r"hits .*restitution " + N, sim["CC_SIM_HIT_RESTITUTION"]),
]
bad = 0
for what, rx, value in want:
    m = re.search(rx, row(what))
    if not m or float(m.group(1)) != float(value):
        print(f"section 6 '{what}' ({rx}): the document says {m.group(1) if m else 'nothing'}, sim.h {value}"); bad += 1
line = float(sim["CC_SIM_ARENA_HALF_Z"]) + float(sim["CC_SIM_BALL_RADIUS"])
m = re.search(r"its centre at \\\|z\\\| ≥ [0-9.]+ \+ [0-9.]+ = \*\*([0-9.]+) m\*\*", md)
if not m or float(m.group(1)) != line:
    print(f"section 6's goal rule: the document's line is {m.group(1) if m else 'not stated'}, sim.h's {line}"); bad += 1
print(f"{len(want) + 1} numbers of section 6's arena table and goal rule checked against sim.h, {bad} differ")
sys.exit(1 if bad else 0)
PY
) || fail "contracts/gameserver-protocol.md section 6 disagrees with libcommon/game/sim.h:
$geo"
pass "$geo"
