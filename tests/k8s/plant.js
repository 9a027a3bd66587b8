#!/usr/bin/env node
// plant.js VIOLATION IN.yaml OUT.yaml - writes a copy of rendered manifests
// with one violation planted (tests/integration/k8s_manifests.sh runs
// wiring.js or validate.js on it and expects the failure PLANTS names).
// `plant.js --list` prints "VIOLATION<TAB>checker<TAB>expected message".
"use strict";
const fs = require("fs");
const path = require("path");
const nm = process.env.CC_NODE_MODULES || path.resolve(__dirname, "../../build/node/node_modules");
const YAML = require(path.join(nm, "yaml"));

const find = (objs, kind, name) => {
	const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
	if (!o) throw new Error(`no ${kind}/${name} to plant into`);
	return o;
};
const pod = (o) => (o.kind === "Fleet" ? o.spec.template.spec.template.spec : o.spec.template.spec);
const ctr = (o, name) => pod(o).containers.find((c) => c.name === name);

// name: [checker, expected message (a fixed string of the failure line), plant]
const PLANTS = {
	// secrets: the Steam key reaches a matcher.
	"secret-mounted-elsewhere": ["wiring", "[secrets] Secret cc-steam: is mounted by Deployment/cc-matcher-casual (volume steam); only Deployment/cc-api may", (objs) => {
		const m = find(objs, "Deployment", "cc-matcher-casual");
		pod(m).volumes.push({ name: "steam", secret: { secretName: "cc-steam" } });
		ctr(m, "cc-matcher").volumeMounts.push({ name: "steam", mountPath: "/var/run/secrets/cosmic-clash/steam", readOnly: true });
	}],
	// secrets: the game servers lose their join keys.
	"secret-missing": ["wiring", "[secrets] Secret cc-join-keys: Fleet/cosmic-clash needs it but does not mount it", (objs) => {
		const f = find(objs, "Fleet", "cosmic-clash");
		const c = ctr(f, "cc-gameserver");
		c.volumeMounts = c.volumeMounts.filter((v) => v.name !== "join-keys");
		pod(f).volumes = pod(f).volumes.filter((v) => v.name !== "join-keys");
	}],
	// fakes: the allocator's image becomes the testkit's.
	"names-testkit": ["wiring", "[fakes] Deployment/cc-allocator: names a test-only thing at spec.template.spec.containers[0].image: \"localhost/cosmic-clash/cc-testkit-allocator:latest\"", (objs) => {
		ctr(find(objs, "Deployment", "cc-allocator"), "cc-allocator").image = "localhost/cosmic-clash/cc-testkit-allocator:latest";
	}],
	// fakes: cc-api is pointed at the fake Steam.
	"names-fake-steam": ["wiring", "[fakes] Deployment/cc-api: names a test-only thing at spec.template.spec.containers[0].args[8]: \"--steam-api-url=http://fake-steam:8080\"", (objs) => {
		ctr(find(objs, "Deployment", "cc-api"), "cc-api").args.push("--steam-api-url=http://fake-steam:8080");
	}],
	// images: an image no Dockerfile target builds.
	"image-without-target": ["wiring", "[images] Deployment/cc-maintenance container cc-maintenance: image \"localhost/cosmic-clash/cc-janitor:latest\": no Dockerfile target \"cc-janitor\"", (objs) => {
		ctr(find(objs, "Deployment", "cc-maintenance"), "cc-maintenance").image = "localhost/cosmic-clash/cc-janitor:latest";
	}],
	// images: a public image, not one of ours.
	"image-foreign": ["wiring", "[images] Deployment/cc-api container cc-api: image \"docker.io/library/nginx:1.27\" is not <registry/>cosmic-clash/<Dockerfile target>", (objs) => {
		ctr(find(objs, "Deployment", "cc-api"), "cc-api").image = "docker.io/library/nginx:1.27";
	}],
	// network: an extra opening (game servers straight to PostgreSQL).
	"network-extra-flow": ["wiring", "[network] Fleet/cosmic-clash -> postgresql TCP/5432: is allowed but is not an expected flow", (objs) => {
		find(objs, "NetworkPolicy", "egress-postgresql").spec.podSelector.matchExpressions[0].values.push("cc-gameserver");
	}],
	// network: a missing opening (no DNS).
	"network-missing-flow": ["wiring", "[network] Job/cc-migrate -> dns UDP/53: is an expected flow that no NetworkPolicy allows", (objs) => {
		objs.splice(objs.indexOf(find(objs, "NetworkPolicy", "egress-dns")), 1);
	}],
	// network: no default deny.
	"network-no-default-deny": ["wiring", "[network] Job/cc-migrate: no NetworkPolicy isolates it for Egress (default deny is missing)", (objs) => {
		objs.splice(objs.indexOf(find(objs, "NetworkPolicy", "default-deny")), 1);
		objs.splice(objs.indexOf(find(objs, "NetworkPolicy", "egress-dns")), 1);
		objs.splice(objs.indexOf(find(objs, "NetworkPolicy", "egress-postgresql")), 1);
	}],
	// security: the Fleet's container writes its root filesystem.
	"security-writable-root": ["wiring", "[security] Fleet/cosmic-clash container cc-gameserver: readOnlyRootFilesystem is not true", (objs) => {
		ctr(find(objs, "Fleet", "cosmic-clash"), "cc-gameserver").securityContext.readOnlyRootFilesystem = false;
	}],
	// security: an init container running as root.
	"security-root-init": ["wiring", "[security] Deployment/cc-api init container wait: runAsUser is 0: a numeric non-root user is required", (objs) => {
		const c = JSON.parse(JSON.stringify(ctr(find(objs, "Deployment", "cc-api"), "cc-api")));
		Object.assign(c, { name: "wait", args: [], env: c.env.filter((e) => e.name === "HOME") });
		delete c.readinessProbe; delete c.livenessProbe; delete c.ports;
		c.securityContext = Object.assign({}, c.securityContext, { runAsUser: 0 });
		pod(find(objs, "Deployment", "cc-api")).initContainers = [c];
	}],
	// security: HOME on the read-only root filesystem.
	"security-home-readonly": ["wiring", "[security] Deployment/cc-allocator container cc-allocator: HOME /home/cc is not on a writable volume (emptyDir)", (objs) => {
		const c = ctr(find(objs, "Deployment", "cc-allocator"), "cc-allocator");
		c.volumeMounts = c.volumeMounts.filter((v) => v.name !== "home");
	}],
	// flags: an option the binary does not have.
	"flag-guessed": ["wiring", "[flags] Deployment/cc-matcher-ranked container cc-matcher: --queue=ranked is not an option of cc-matcher (its --help)".replace("--queue=ranked", "--queue"), (objs) => {
		ctr(find(objs, "Deployment", "cc-matcher-ranked"), "cc-matcher").args.push("--queue=ranked");
	}],
	// flags: a matcher left without the cluster's Redis (no candidate index).
	"redis-missing": ["wiring", "[flags] Deployment/cc-matcher-casual container cc-matcher: cc-matcher keeps the Redis candidate index (--redis-host in its --help) but is given neither --redis-host nor COSMIC_CLASH_REDIS_HOST", (objs) => {
		const c = ctr(find(objs, "Deployment", "cc-matcher-casual"), "cc-matcher");
		c.env = c.env.filter((e) => e.name !== "COSMIC_CLASH_REDIS_HOST");
	}],
	// rbac: the allocator may also delete game servers.
	"rbac-extra-verb": ["wiring", "[rbac] Role/cc-allocator: rules", (objs) => {
		find(objs, "Role", "cc-allocator").rules[0].verbs.push("delete");
	}],
	// rbac: the Fleet's pods pinned to a service account.
	"fleet-pins-service-account": ["wiring", "[rbac] Fleet/cosmic-clash: pins serviceAccountName cc-allocator: Agones gives game-server pods their SDK account", (objs) => {
		pod(find(objs, "Fleet", "cosmic-clash")).serviceAccountName = "cc-allocator";
	}],
	// files: a secret file option pointing outside every mount.
	"file-not-mounted": ["wiring", "[files] Deployment/cc-api container cc-api: --operator-token-file=/etc/cosmic-clash/operator-token is not inside any volume it mounts", (objs) => {
		const c = ctr(find(objs, "Deployment", "cc-api"), "cc-api");
		c.args = c.args.map((a) => (a.startsWith("--operator-token-file=") ? "--operator-token-file=/etc/cosmic-clash/operator-token" : a));
	}],
	// budgets: a PodDisruptionBudget with minAvailable.
	"pdb-min-available": ["wiring", "[budgets] PodDisruptionBudget/cc-matcher-ranked: must use maxUnavailable (not minAvailable)", (objs) => {
		const b = find(objs, "PodDisruptionBudget", "cc-matcher-ranked");
		delete b.spec.maxUnavailable;
		b.spec.minAvailable = 1;
	}],
	// budgets: a container without limits.
	"no-limits": ["wiring", "[budgets] Job/cc-migrate container cc-migrate: no memory limits", (objs) => {
		delete ctr(find(objs, "Job", "cc-migrate"), "cc-migrate").resources.limits.memory;
	}],
	// namespace: restricted enforced (Agones' host ports would be refused).
	"psa-enforce-restricted": ["wiring", "[namespace] Namespace/cosmic-clash: pod-security.kubernetes.io/enforce is \"restricted\", want \"privileged\"", (objs) => {
		find(objs, "Namespace", "cosmic-clash").metadata.labels["pod-security.kubernetes.io/enforce"] = "restricted";
	}],
	// playlists: the ranked matcher told to match casual (two casual, no ranked).
	"playlist-twice": ["wiring", "[playlists] ranked: 0 workloads match it (want one Deployment)", (objs) => {
		const c = ctr(find(objs, "Deployment", "cc-matcher-ranked"), "cc-matcher");
		c.args = c.args.map((a) => (a === "--playlist=ranked" ? "--playlist=casual" : a));
	}],
	// schema: a misspelt field in the Fleet (Agones CRD schema, strict).
	"schema-fleet-field": ["validate", "Fleet/cosmic-clash: agones.dev/v1/Fleet against the Agones CRD schema: /spec must NOT have additional properties (replica)", (objs) => {
		find(objs, "Fleet", "cosmic-clash").spec.replica = 3;
	}],
	// schema: a FleetAutoscaler policy Agones does not have.
	"schema-autoscaler-policy": ["validate", "FleetAutoscaler/cosmic-clash: autoscaling.agones.dev/v1/FleetAutoscaler against the Agones CRD schema: /spec/policy/type must be equal to one of the allowed values", (objs) => {
		find(objs, "FleetAutoscaler", "cosmic-clash").spec.policy.type = "Bufer";
	}],
	// schema: a core object of the wrong shape.
	"schema-core": ["validate", "PodDisruptionBudget/cc-api: policy/v1/PodDisruptionBudget: data/spec/selector must be object", (objs) => {
		find(objs, "PodDisruptionBudget", "cc-api").spec.selector = "app=cc-api";
	}],
};

if (process.argv[2] === "--list") {
	for (const [k, [checker, msg]] of Object.entries(PLANTS)) console.log(`${k}\t${checker}\t${msg}`);
	process.exit(0);
}
const [name, input, output] = process.argv.slice(2);
if (!PLANTS[name] || !input || !output) {
	console.error(`usage: plant.js --list | plant.js VIOLATION IN.yaml OUT.yaml (violations: ${Object.keys(PLANTS).join(", ")})`);
	process.exit(2);
}
const objs = YAML.parseAllDocuments(fs.readFileSync(input, "utf8")).map((d) => d.toJSON()).filter(Boolean);
PLANTS[name][2](objs);
fs.writeFileSync(output, objs.map((o) => YAML.stringify(o)).join("---\n"));
