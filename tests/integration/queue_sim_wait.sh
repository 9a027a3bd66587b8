#!/usr/bin/env bash
# queue_sim's estimated-wait section (issue 26): tests/bench/queue_sim.c
# runs game/wait_estimate.h over its simulated history and prints, per
# playlist and rate, the players measured, the share that got a number, the
# real median wait and the estimate's median absolute error. Checked here:
# all ten rows are printed, nearly everyone gets a number once the warm-up
# built a history, every error is finite, and the estimate tracks the wait
# closer where the queue is busy (20/s) than where it is quiet (0.2/s).
# Numbers are not judged beyond that: they are the simulation's.
source "$(dirname "$0")/lib.sh"

make -C "$TOP" -s --no-print-directory build/bench/queue_sim || fail "could not build queue_sim"
out=$("$TOP/build/bench/queue_sim" --wait-estimate) || fail "queue_sim --wait-estimate failed: $out"
rows=$(grep -E '^  (ranked|casual) +[0-9.]+ \|' <<<"$out") || fail "no rows in: $out"
expect_eq "rows (2 playlists x 5 rates)" 10 "$(wc -l <<<"$rows")"
while read -r playlist rate _ players covered real mae; do
	covered=${covered%\%}; mae=${mae%s}
	[[ $mae =~ ^[0-9]+\.[0-9]$ ]] || fail "$playlist at $rate/s: MAE '$mae' is not a number"
	awk -v c="$covered" 'BEGIN { exit !(c >= 90) }' || fail "$playlist at $rate/s: only $covered% got an estimate"
done <<<"$rows"
for pl in ranked casual; do
	quiet=$(awk -v p="$pl" '$1 == p && $2 == "0.20" { sub("s", "", $7); print $7 }' <<<"$rows")
	busy=$(awk -v p="$pl" '$1 == p && $2 == "20.00" { sub("s", "", $7); print $7 }' <<<"$rows")
	awk -v q="$quiet" -v b="$busy" 'BEGIN { exit !(b < q) }' ||
		fail "$pl: MAE at 20/s ($busy s) is not below MAE at 0.2/s ($quiet s)"
done
pass "queue_sim --wait-estimate: 10 rows, >= 90% estimated, MAE falls with the rate"
