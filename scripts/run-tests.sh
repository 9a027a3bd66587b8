#!/usr/bin/env bash
# run-tests.sh [unit|integration|all] [FILTER]
#
# Runs the built test binaries and scripts and prints one closing line,
# "N passed, N failed". Unit tests are the ASan/UBSan Check suites in
# build/asan/tests/unit. Integration tests (Check suites in
# build/asan/tests/integration and scripts tests/integration/*.sh) run inside
# tests/harness/with-services.sh against a disposable PostgreSQL and Redis.
# FILTER keeps only tests whose name contains it (README: one suite).
# A failing test's whole output is printed; a passing one prints its summary.
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
what=${1:-all}
filter=${2:-}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export CC_TOP="$top"

# Everything a run creates lives under one fresh TMPDIR, so the end of the
# run can prove nothing was left behind: no directory, no process using it,
# no port held by such a process.
if [[ "$what" == all || "$what" == integration || "$what" == unit ]] && [[ -z "${CC_RUN_TMP:-}" ]]; then
	CC_RUN_TMP=$(mktemp -d "${TMPDIR:-/tmp}/cc-run.XXXXXX")
	chmod 0755 "$CC_RUN_TMP"
	export CC_RUN_TMP TMPDIR="$CC_RUN_TMP"
	own_run_tmp=1
fi

results=${CC_TEST_RESULTS:-}
own_results=0
if [[ -z "$results" ]]; then
	results=$(mktemp "${TMPDIR:-/tmp}/cc-results.XXXXXX")
	own_results=1
	export CC_TEST_RESULTS="$results"
fi

# run_one NAME CMD...: runs one test, records "checks failures name".
run_one() {
	local name=$1; shift
	local out; out=$(mktemp "${TMPDIR:-/tmp}/cc-test-out.XXXXXX")
	local start=$SECONDS
	"$@" >"$out" 2>&1
	local rc=$?
	local summary checks=0 fails=0
	# Check closes with "100%: Checks: 7, Failures: 0, Errors: 0".
	summary=$(grep -E '^[0-9]+%: Checks: [0-9]+' "$out" | tail -n 1)
	if [[ -n "$summary" ]]; then
		checks=$(sed -E 's/.*Checks: ([0-9]+).*/\1/' <<<"$summary")
		fails=$(sed -E 's/.*Failures: ([0-9]+), Errors: ([0-9]+).*/\1+\2/' <<<"$summary")
		fails=$((fails))
	else
		checks=1
		fails=$([[ $rc -eq 0 ]] && echo 0 || echo 1)
	fi
	if [[ $rc -ne 0 && $fails -eq 0 ]]; then fails=1; fi # crashed after its summary (leak report)
	if [[ $fails -ne 0 ]]; then
		echo "FAIL $name (exit $rc, $((SECONDS - start))s): $*"
		sed 's/^/    | /' "$out"
	else
		echo "ok   $name ($checks checks, $((SECONDS - start))s)"
	fi
	echo "$((checks - fails)) $fails $name" >>"$results"
	rm -f "$out"
}

run_unit() {
	local t
	for t in build/asan/tests/unit/test_*; do
		[[ -x "$t" ]] || continue
		[[ -z "$filter" || "$t" == *"$filter"* ]] || continue
		run_one "unit/$(basename "$t")" "$t"
	done
}

# Scripts whose header carries the line "# run-tests: early-background" (the
# image build and the container stack: minutes of mostly waiting on podman)
# start first, one after another in one background chain, while the rest of
# the suite runs as before; their verdicts are printed once the rest is done.
run_integration_inside() {
	local t bg=() bg_out="" bg_pid=""
	for t in tests/integration/*.sh; do
		[[ -x "$t" ]] || continue
		[[ -z "$filter" || "$t" == *"$filter"* ]] || continue
		grep -qx '# run-tests: early-background' "$t" && bg+=("$t")
	done
	if ((${#bg[@]})); then
		bg_out=$(mktemp "${TMPDIR:-/tmp}/cc-test-bg.XXXXXX")
		(for t in "${bg[@]}"; do run_one "integration/$(basename "$t")" "$t"; done) >"$bg_out" 2>&1 &
		bg_pid=$!
	fi
	for t in build/asan/tests/integration/test_* tests/integration/*.sh; do
		[[ -x "$t" ]] || continue
		[[ -z "$filter" || "$t" == *"$filter"* ]] || continue
		[[ " ${bg[*]:-} " == *" $t "* ]] && continue
		if [[ "$t" == build/* ]]; then # a Check suite: must leave the shared database clean
			run_one "integration/$(basename "$t")" tests/harness/then-audit.sh "$t"
		else
			run_one "integration/$(basename "$t")" "$t"
		fi
	done
	if [[ -n "$bg_pid" ]]; then
		wait "$bg_pid"
		cat "$bg_out"
		rm -f "$bg_out"
	fi
}

case "$what" in
unit) run_unit ;;
integration) tests/harness/with-services.sh "$0" --inside-integration "$filter" ||
	echo "0 1 integration-harness" >>"$results" ;;
--inside-integration) run_integration_inside; exit 0 ;;
all)
	run_unit
	tests/harness/with-services.sh "$0" --inside-integration "$filter" ||
		echo "0 1 integration-harness" >>"$results"
	;;
*) echo "usage: run-tests.sh [unit|integration|all] [FILTER]" >&2; exit 2 ;;
esac

# leftovers: directories or processes of this run that outlived it.
if [[ "${own_run_tmp:-0}" == 1 ]]; then
	left_dirs=$(find "$CC_RUN_TMP" -mindepth 1 -maxdepth 1 ! -name 'cc-results.*' 2>/dev/null)
	left_procs=$(pgrep -af -- "$CC_RUN_TMP" | grep -v -e pgrep -e "run-tests.sh" || true)
	if [[ -n "$left_dirs" || -n "$left_procs" ]]; then
		echo "FAIL leftovers: this run left behind:"
		[[ -n "$left_dirs" ]] && sed 's/^/    dir  /' <<<"$left_dirs"
		[[ -n "$left_procs" ]] && sed 's/^/    proc /' <<<"$left_procs"
		echo "0 1 leftovers" >>"$results"
	else
		echo "ok   leftovers (no directory or process of this run outlived it)"
		echo "1 0 leftovers" >>"$results"
	fi
fi

passed=$(awk '{s+=$1} END {print s+0}' "$results")
failed=$(awk '{s+=$2} END {print s+0}' "$results")
if [[ $failed -ne 0 ]]; then
	echo "failed tests:"
	awk '$2 != 0 {print "  " $3}' "$results"
fi
[[ $own_results -eq 1 ]] && rm -f "$results"
[[ "${own_run_tmp:-0}" == 1 ]] && rm -rf "$CC_RUN_TMP"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 && $passed -gt 0 ]]
