#!/usr/bin/env bash
# The game wire protocol as an independent client sees it (issue 11): a
# Python decoder/encoder built from contracts/gameserver-messages.json alone
# (tests/integration/wire_table_check.py) reads and writes the C codec's
# bytes for every message and dequantises its bodies to the C codec's
# floats, and contracts/gameserver-protocol.md's tables say what the JSON
# says. test_wire (unit) proves the JSON equal to the codec's own table;
# together the three cannot drift apart.
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
