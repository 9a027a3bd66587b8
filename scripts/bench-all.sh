#!/usr/bin/env bash
# bench-all.sh - `make bench`: every part of the bench, one after another,
# then the one summary table (issue 24). Each part records its figures with
# bench_row (scripts/lib/bench-summary.sh) and keeps printing its own
# lines; this script empties the table first (scripts/bench-summary.sh
# reset), runs every part even when one before it failed (a failure is an
# error or a broken invariant, never a missed target), prints the table
# (scripts/bench-summary.sh print) and exits non-zero when a part failed or,
# with BENCH_STRICT=1, when a target was missed or no figure was recorded.
#
# The parts, each in its own disposable PostgreSQL + Redis where it needs
# one (each re-runs itself inside tests/harness/with-services.sh):
#   heartbeat   scripts/bench.sh with BENCH_HEARTBEAT_ONLY=1
#   matcher     scripts/bench-matcher.sh
#   allocator   scripts/bench-allocator.sh
#   events      scripts/bench-events.sh
#   density     scripts/bench-density.sh (before gameserver, which quotes it)
#   gameserver  scripts/bench-gameserver.sh
# BENCH_PARTS (all of them) picks some, in that order ("none": only the
# reset and the print, for tests/integration/bench_summary.sh); BENCH_HEARTBEAT_ONLY=1
# keeps only the heartbeat part, as it did when bench.sh ran the others.
# Expects the binaries built (make bench builds them first).
set -Euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top" || exit 1
all="heartbeat matcher allocator events density gameserver"
parts=${BENCH_PARTS:-$all}
[[ $parts == none ]] && parts=""
[[ ${BENCH_HEARTBEAT_ONLY:-0} == 1 ]] && parts=heartbeat
for p in $parts; do
	[[ " $all " == *" $p "* ]] || { echo "bench-all: unknown part '$p' (BENCH_PARTS: some of: $all)" >&2; exit 2; }
done

say() { echo "bench-all: $*" >&2; }
failed=()

# part NAME CMD...: runs one part; remembers it when it fails.
part() {
	local name=$1 start=$SECONDS rc=0
	shift
	say "part $name: $*"
	"$@" || rc=$?
	if ((rc != 0)); then
		say "part $name FAILED (exit $rc, $((SECONDS - start)) s); the other parts still run"
		failed+=("$name")
	else
		say "part $name done in $((SECONDS - start)) s"
	fi
}

scripts/bench-summary.sh reset || exit 1
for p in $parts; do
	case $p in
	heartbeat) part heartbeat env BENCH_HEARTBEAT_ONLY=1 scripts/bench.sh ;;
	matcher) part matcher scripts/bench-matcher.sh ;;
	allocator) part allocator scripts/bench-allocator.sh ;;
	events) part events scripts/bench-events.sh ;;
	gameserver) part gameserver scripts/bench-gameserver.sh ;;
	density) part density scripts/bench-density.sh ;; # K real 3v3 matches on one pinned core
	esac
done

echo
rc=0
scripts/bench-summary.sh print || rc=$?
if ((${#failed[@]})); then
	say "failed parts: ${failed[*]} (their rows are missing from the table above or partial)"
	exit 1
fi
exit "$rc"
