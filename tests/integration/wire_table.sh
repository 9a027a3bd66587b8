#!/usr/bin/env bash
# The game wire protocol as an independent client sees it (issue 11): a
# Python decoder/encoder built from contracts/gameserver-messages.json alone
# (tests/integration/wire_table_check.py) reads and writes the C codec's
# bytes for every message and dequantises its bodies to the C codec's
# floats, and contracts/gameserver-protocol.md's tables say what the JSON
# says. test_wire (unit) proves the JSON equal to the codec's own table;
# together the three cannot drift apart. The document's worked rot examples
# are decoded and re-encoded from its rules alone, and the numbers it
# states for cc-gameserver's limits are the binary's --help defaults.
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
