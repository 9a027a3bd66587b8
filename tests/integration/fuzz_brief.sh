#!/usr/bin/env bash
# The libFuzzer targets of tests/fuzz (issue 13), briefly: each replays its
# seed corpus (which holds every crash input fixed so far) and fuzzes for
# FUZZ_BRIEF_SECONDS (default 4) with a throw-away corpus. Any crash, leak,
# sanitizer report or broken invariant fails, printing the report and the
# input. `make fuzz` is the long campaign.
source "$(dirname "$0")/lib.sh"

n_targets=$(ls "$TOP"/tests/fuzz/fuzz_*.c | wc -l)
n_built=$(ls "$TOP"/build/fuzz/fuzz_* 2>/dev/null | wc -l)
expect_eq "fuzz targets built (make tests-build builds build/fuzz/fuzz_* for every tests/fuzz/fuzz_*.c)" "$n_targets" "$n_built"
for src in "$TOP"/tests/fuzz/fuzz_*.c; do
	name=$(basename "$src" .c)
	[[ -d $TOP/tests/fuzz/corpus/${name#fuzz_} ]] || fail "$name has no seed corpus tests/fuzz/corpus/${name#fuzz_}/"
done

out=$(FUZZ_SECONDS=${FUZZ_BRIEF_SECONDS:-4} FUZZ_CORPUS_DIR="$T_DIR/corpus" FUZZ_ARTIFACTS_DIR="$T_DIR/artifacts" \
	"$TOP/scripts/fuzz.sh" 2>&1) || fail "scripts/fuzz.sh found a problem:
$out"
echo "$out"
pass "$n_targets fuzz targets ran without a crash"
