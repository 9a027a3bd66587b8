#!/usr/bin/env bash
# The Kubernetes manifests, offline (SPEC 12, issue 21): `kubectl kustomize`
# renders each overlay of k8s/; every object validates against its schema
# (kubernetes-models for core objects, the vendored Agones CRD schemas for
# the Fleet, its GameServer template and the FleetAutoscaler:
# tests/k8s/validate.js); the wiring check (tests/k8s/wiring.js) proves the
# secret mounts, the absence of test-only names, the Dockerfile target of
# every image, the NetworkPolicy flows both ways, non-root read-only
# containers with HOME and /tmp writable, every flag in its binary's
# --help, the RBAC and the probes. Then each planted violation (a copy of
# the rendered dev overlay with one thing changed: tests/k8s/plant.js) must
# fail its checker with the precise message, so the checks can fail.
# Without kubectl this test fails: it never passes unchecked.
source "$(dirname "$0")/lib.sh"

command -v kubectl >/dev/null ||
	fail "kubectl is missing, so the manifests cannot be rendered: install kubectl (its built-in kustomize renders k8s/overlays/*); this test never passes without it"
"$TOP/scripts/npm-tools.sh" || fail "could not install the pinned Node tools (kubernetes-models, ajv, yaml) into build/node"
for b in cc-api cc-matcher cc-allocator cc-maintenance cc-migrate cc-supervisor; do
	[[ -x "$BIN/$b" ]] || fail "$BIN/$b is missing (make all): the flag check runs each binary's --help"
done
k8s="$TOP/tests/k8s"
dockerfile="$TOP/Dockerfile"
fixture="$k8s/fixtures/Dockerfile"

# run_check NAME CMD...: runs a checker, keeps its output in $T_DIR/NAME.out.
run_check() {
	local name=$1; shift
	"$@" >"$T_DIR/$name.out" 2>&1
}

for o in dev prod; do
	kubectl kustomize "$TOP/k8s/overlays/$o" >"$T_DIR/$o.yaml" 2>"$T_DIR/$o.err" ||
		fail "kubectl kustomize k8s/overlays/$o: $(cat "$T_DIR/$o.err")"
	n=$(grep -c '^kind:' "$T_DIR/$o.yaml")
	((n > 20)) || fail "k8s/overlays/$o rendered only $n objects"
	run_check "wiring-$o" node "$k8s/wiring.js" --overlay="$o" --dockerfile="$dockerfile" --bin="$BIN" "$T_DIR/$o.yaml" ||
		fail "wiring check of k8s/overlays/$o: $(cat "$T_DIR/wiring-$o.out")"
	pass "$(tail -n 1 "$T_DIR/wiring-$o.out" | sed 's/^wiring: //')"
done
# One validator run for both (compiling the Agones schemas takes seconds).
run_check validate node "$k8s/validate.js" "$T_DIR/dev.yaml" "$T_DIR/prod.yaml" ||
	fail "schema validation of k8s/overlays/dev and prod: $(cat "$T_DIR/validate.out")"
pass "dev and prod: $(tail -n 1 "$T_DIR/validate.out" | sed 's/^validate: //')"
# The prod overlay renders no Secret: you create them (README "Deployment").
! grep -q '^kind: Secret$' "$T_DIR/prod.yaml" || fail "k8s/overlays/prod renders a Secret object"

# Planted violations. The baseline first: the rendered dev overlay, written
# back by plant.js's YAML code unchanged, passes against the fixture
# Dockerfile, so each failure below is the planted one.
node "$k8s/plant.js" --list >"$T_DIR/plants"
cp "$T_DIR/dev.yaml" "$T_DIR/baseline.yaml"
run_check baseline-wiring node "$k8s/wiring.js" --overlay=dev --dockerfile="$fixture" --bin="$BIN" "$T_DIR/baseline.yaml" ||
	fail "the unplanted dev render fails against the fixture Dockerfile: $(cat "$T_DIR/baseline-wiring.out")"
planted=0
schema_plants=()
while IFS=$'\t' read -r name checker want; do
	node "$k8s/plant.js" "$name" "$T_DIR/dev.yaml" "$T_DIR/plant-$name.yaml" || fail "plant.js $name failed"
	planted=$((planted + 1))
	if [[ $checker == validate ]]; then
		schema_plants+=("$name"$'\t'"$want")
		continue
	fi
	cmd=(node "$k8s/wiring.js" --overlay=dev --dockerfile="$fixture" --bin="$BIN" "$T_DIR/plant-$name.yaml")
	if run_check "plant-$name" "${cmd[@]}"; then
		fail "planted violation $name: ${cmd[*]} passed; expected: $want"
	fi
	grep -qF -- "$want" "$T_DIR/plant-$name.out" ||
		fail "planted violation $name: ${cmd[*]} failed without the expected message '$want'; it said: $(cat "$T_DIR/plant-$name.out")"
done <"$T_DIR/plants"
# The schema plants in one validator run: each file must fail with its message.
files=()
for p in "${schema_plants[@]}"; do files+=("$T_DIR/plant-${p%%$'\t'*}.yaml"); done
if run_check plant-schema node "$k8s/validate.js" "${files[@]}"; then
	fail "planted schema violations: validate.js passed ${files[*]}"
fi
for p in "${schema_plants[@]}"; do
	name=${p%%$'\t'*} want=${p#*$'\t'}
	grep -qF -- "validate: FAIL: plant-$name.yaml $want" "$T_DIR/plant-schema.out" ||
		fail "planted violation $name: validate.js did not say '$want' for it; it said: $(cat "$T_DIR/plant-schema.out")"
done
((planted >= 15)) || fail "only $planted planted violations ran"

# A missing Dockerfile is a failure that names it, never a pass.
if run_check no-dockerfile node "$k8s/wiring.js" --overlay=dev --dockerfile="$T_DIR/no/Dockerfile" --bin="$BIN" "$T_DIR/dev.yaml"; then
	fail "the wiring check passed without a Dockerfile"
fi
grep -qF "[images] Dockerfile: $T_DIR/no/Dockerfile is missing" "$T_DIR/no-dockerfile.out" ||
	fail "a missing Dockerfile was not named: $(cat "$T_DIR/no-dockerfile.out")"
pass "$planted planted violations each failed with their message; a missing Dockerfile fails by name"
