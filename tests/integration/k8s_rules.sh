#!/usr/bin/env bash
# The control-plane alerts (k8s/prometheus/cosmic-clash.rules.yml, SPEC 12:
# queue wait, matcher pass lag, allocation failures and latency, server
# conflicts; the outbox dead-letter alerts are cc-maintenance's, tested by
# maintenance_rules.sh) pass `promtool check rules`, and `promtool test
# rules` proves each fires on the series it is for and stays quiet on a
# healthy one. Then, alert by alert, in this file and in cc-maintenance's
# (with the outbox dead-letter alerts), a copy of the rules whose
# expression for that alert can never be true must fail the unit tests by
# that alert's name: every alert has a test that fires it. Every metric the
# rules read is one a binary declares (cc_counter/cc_histogram/cc_gauge in
# services/ and gameserver/).
source "$(dirname "$0")/lib.sh"
command -v promtool >/dev/null || fail "promtool missing (Debian package prometheus; scripts/ensure-deps.sh installs it)"
"$TOP/scripts/npm-tools.sh" || fail "could not install the pinned Node tools (yaml) into build/node"

dir="$TOP/k8s/prometheus"
rules=cosmic-clash.rules.yml
tests=cosmic-clash.rules.test.yml
promtool check rules "$dir/$rules" >"$T_DIR/check.out" 2>&1 || fail "promtool check rules: $(cat "$T_DIR/check.out")"
(cd "$dir" && promtool test rules "$tests") >"$T_DIR/test.out" 2>&1 || fail "promtool test rules: $(cat "$T_DIR/test.out")"

# The metrics read are ones the binaries export (recording rules'
# cosmic_clash: names aside).
declared=$(grep -rhoE 'cc_(counter|histogram|gauge)\("cosmic_clash_[a-z0-9_]+"' "$TOP/services" "$TOP/gameserver" "$TOP/libcommon" |
	sed -E 's/.*"(.*)"/\1/' | sort -u)
for m in $(grep -oE 'cosmic_clash_[a-z0-9_]+' "$dir/$rules" | sort -u); do
	base=$(sed -E 's/_(bucket|sum|count)$//' <<<"$m")
	grep -qx "$base" <<<"$declared" || fail "$rules reads $m, which no binary declares"
done

n=0
for pair in cosmic-clash.rules.yml:cosmic-clash.rules.test.yml \
	cosmic-clash-maintenance.rules.yml:cosmic-clash-maintenance.rules.test.yml; do
	rules=${pair%%:*} tests=${pair#*:}
	alerts=$(grep -oE '^ *- alert: [A-Za-z]+' "$dir/$rules" | awk '{print $3}')
	for a in $alerts; do
		rm -f "$T_DIR"/*.yml
		cp "$dir/$tests" "$T_DIR/$tests"
		node -e '
			const fs = require("fs"), path = require("path");
			const YAML = require(path.join(process.argv[1], "yaml"));
			const doc = YAML.parse(fs.readFileSync(process.argv[2], "utf8"));
			let hit = 0;
			for (const g of doc.groups) for (const r of g.rules) if (r.alert === process.argv[3]) { r.expr = "vector(1) < 0"; hit++; }
			if (hit !== 1) { console.error("alert " + process.argv[3] + " found " + hit + " times"); process.exit(1); }
			fs.writeFileSync(process.argv[4], YAML.stringify(doc));
		' "$TOP/build/node/node_modules" "$dir/$rules" "$a" "$T_DIR/$rules" || fail "could not disable $a"
		if (cd "$T_DIR" && promtool test rules "$tests") >"$T_DIR/mut.out" 2>&1; then
			fail "with $a's expression never true, promtool test rules $tests still passed: no test fires $a"
		fi
		grep -q "alertname: $a," "$T_DIR/mut.out" || fail "with $a disabled the tests failed, but not on $a: $(cat "$T_DIR/mut.out")"
		n=$((n + 1))
	done
done
((n >= 15)) || fail "only $n alerts found in the two rule files"
pass "cosmic-clash.rules.yml checked and unit-tested; $n alerts (with cc-maintenance's) each have a test that fails when the alert can never fire"
