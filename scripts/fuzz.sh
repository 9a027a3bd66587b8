#!/usr/bin/env bash
# fuzz.sh [NAME...]
#
# Runs the libFuzzer targets build/fuzz/fuzz_<name> (make fuzz-build) one
# after another, never two at once (the machine is shared), each for
# FUZZ_SECONDS of wall time (default 60), and prints one line per target:
# CPU seconds used, inputs executed, corpus size and crashes. NAMEs keep
# only those targets (default: all).
#
# Corpus: the seeds in tests/fuzz/corpus/<name>/ are read, never written;
# what the fuzzer learns goes to $FUZZ_CORPUS_DIR/<name> (default
# build/fuzz-corpus, kept between campaigns; make test uses a temporary
# one). A crash writes its input to $FUZZ_ARTIFACTS_DIR/<name>/ (default
# build/fuzz-artifacts) and the script exits 1 after printing the
# sanitizer report and the input in base64. To keep a fixed crash as a
# regression input, copy it into tests/fuzz/corpus/<name>/: every run
# replays the seeds first.
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
seconds=${FUZZ_SECONDS:-60}
corpus_root=${FUZZ_CORPUS_DIR:-$top/build/fuzz-corpus}
artifacts_root=${FUZZ_ARTIFACTS_DIR:-$top/build/fuzz-artifacts}
[[ $seconds =~ ^[0-9]+$ && $seconds -ge 1 ]] || { echo "fuzz.sh: FUZZ_SECONDS must be a whole number >= 1, got '$seconds'" >&2; exit 2; }

targets=()
if [[ $# -gt 0 ]]; then
	for n in "$@"; do targets+=("build/fuzz/fuzz_${n#fuzz_}"); done
else
	for t in build/fuzz/fuzz_*; do [[ -x $t ]] && targets+=("$t"); done
fi
[[ ${#targets[@]} -gt 0 ]] || { echo "fuzz.sh: no targets in build/fuzz (run make fuzz-build)" >&2; exit 2; }

# Files the targets write live on tmpfs under one directory we remove.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/cc-fuzz-run.XXXXXX")
export FUZZ_TMPDIR=$scratch
if [[ -w /dev/shm ]]; then
	FUZZ_TMPDIR=$(mktemp -d /dev/shm/cc-fuzz-run.XXXXXX)
fi
trap 'rm -rf "$scratch" "$FUZZ_TMPDIR"' EXIT

failed=0
total_cpu=0
printf '%-18s %8s %9s %12s %9s %7s %s\n' target wall_s cpu_s execs exec/s corpus crashes
for t in "${targets[@]}"; do
	name=${t##*/fuzz_}
	seeds=tests/fuzz/corpus/$name
	[[ -x $t ]] || { echo "fuzz.sh: $t is not built (make fuzz-build)"; failed=1; continue; }
	[[ -d $seeds ]] || { echo "fuzz.sh: $t has no seed corpus $seeds"; failed=1; continue; }
	corpus=$corpus_root/$name
	artifacts=$artifacts_root/$name
	mkdir -p "$corpus" "$artifacts"
	log=$scratch/$name.log
	touch "$scratch/$name.start"
	start=$SECONDS
	# -timeout: one input over 10 s is a hang worth a report; -rss_limit_mb
	# stays at libFuzzer's 2 GB. The CPU time is what the child used.
	/usr/bin/time -f '%U %S' -o "$scratch/$name.time" \
		"$t" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
		-artifact_prefix="$artifacts/" "$corpus" "$seeds" >"$log" 2>&1
	rc=$?
	wall=$((SECONDS - start))
	cpu=$(tail -n 1 "$scratch/$name.time" 2>/dev/null | awk '{printf "%.1f", $1 + $2}')
	[[ -n $cpu ]] || cpu=0
	total_cpu=$(awk -v a="$total_cpu" -v b="$cpu" 'BEGIN {printf "%.1f", a + b}')
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	execs=${execs:-0}
	new_inputs=$(find "$artifacts" -type f -newer "$scratch/$name.start")
	crashes=$(grep -c . <<<"$new_inputs")
	printf '%-18s %8d %9s %12s %9d %7d %d\n' "$name" "$wall" "$cpu" "$execs" \
		$((execs / (wall > 0 ? wall : 1))) "$(find "$corpus" -type f | wc -l)" "$crashes"
	if [[ $rc -ne 0 || $crashes -gt 0 ]]; then
		failed=1
		echo "---- fuzz_$name failed (exit $rc): $t -max_total_time=$seconds $corpus $seeds"
		grep -E -A40 '^==[0-9]+==ERROR|runtime error|invariant failed|ALARM|deadly signal|out-of-memory' "$log" | head -n 80 | sed 's/^/    | /'
		[[ -s $log ]] && ! grep -qE 'ERROR|runtime error|invariant|ALARM|deadly' "$log" && tail -n 30 "$log" | sed 's/^/    | /'
		while IFS= read -r f; do
			[[ -n $f ]] || continue
			echo "    input $f (base64, first 2 KiB): $(head -c 2048 "$f" | base64 -w0)"
			echo "    reproduce: $t $f"
		done <<<"$new_inputs"
	fi
done
echo "total cpu_s: $total_cpu ($(awk -v c="$total_cpu" 'BEGIN {printf "%.1f", c / 60}') CPU-minutes)"
exit $failed
