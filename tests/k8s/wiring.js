#!/usr/bin/env node
// wiring.js --overlay=dev|prod --dockerfile=PATH --bin=DIR RENDERED.yaml
//
// Proves SPEC 12's wiring rules on the output of `kubectl kustomize`
// (tests/integration/k8s_manifests.sh runs it on each overlay, and on
// copies with one planted violation each, which must fail):
//
//   secrets   each Secret is mounted by exactly the workloads EXPECTED_SECRETS
//             lists (no more, no fewer), and a rendered Secret object holds
//             only DEV-ONLY placeholder values (prod renders none);
//   fakes     no manifest names the testkit or a fake (cc-testkit-*,
//             fake_*, fake-steam, ...);
//   images    every image is <registry/>cosmic-clash/<target>[:tag|@digest]
//             and <target> is a `FROM ... AS <target>` of the Dockerfile;
//   network   the flows the NetworkPolicies allow equal EXPECTED_FLOWS, both
//             ways (a flow between two pods of the namespace needs the
//             egress and the ingress side; one side alone is reported);
//   security  every container (init containers and the Fleet's template
//             too) runs non-root with a read-only root filesystem, no
//             privilege escalation, and HOME and /tmp on writable volumes;
//   flags     every --option and COSMIC_CLASH_* variable a container is
//             given is one its binary's --help lists (no guessed flag);
//   rbac      the only Role is cc-allocator's: create gameserverallocations;
//   probes    each Deployment's container has /readyz and /healthz probes on
//             the admin port it passes as --admin-port;
//   files     every --*-file option names a path inside a volume the
//             container mounts;
//   namespace Pod Security enforce privileged (Agones host ports), audit and
//             warn restricted;
//   playlists one cc-matcher Deployment per playlist (casual, ranked), named
//             cc-matcher-<playlist>, passing --playlist=<playlist>, 1 replica;
//   budgets   every Deployment has a PodDisruptionBudget with maxUnavailable,
//             cc-api a HorizontalPodAutoscaler, and every container CPU and
//             memory requests and limits.
//
// Each failure is one line "wiring: FAIL [rule] object: what"; exit 1.
"use strict";
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");

const top = path.resolve(__dirname, "../..");
const nm = process.env.CC_NODE_MODULES || path.join(top, "build/node/node_modules");
const YAML = require(path.join(nm, "yaml"));

// ---- the rules, stated once -------------------------------------------------

// Secret -> the workloads that mount it (SPEC 12 and the binaries' --help:
// the Steam key is cc-api's only; join keys sign (allocator) and verify
// (game servers) join tokens; the workload secret signs (allocator) and
// verifies (cc-api) workload tokens; the database URL goes to every
// process that takes --database-url).
const EXPECTED_SECRETS = {
	"cc-database": ["Deployment/cc-api", "Deployment/cc-matcher-casual", "Deployment/cc-matcher-ranked",
		"Deployment/cc-allocator", "Deployment/cc-maintenance", "Job/cc-migrate"],
	"cc-steam": ["Deployment/cc-api"],
	"cc-workload-secret": ["Deployment/cc-api", "Deployment/cc-allocator"],
	"cc-join-keys": ["Deployment/cc-allocator", "Fleet/cosmic-clash"],
	"cc-operator-token": ["Deployment/cc-api"],
};

// Peers outside the namespace. ipBlock peers are named by their address,
// which differs per overlay (the prod values are the examples the prod
// overlay carries: change both together).
const STEAM = "0.0.0.0/0 except 10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,169.254.0.0/16,100.64.0.0/10";
const EXTERNAL_ADDRESSES = {
	dev: { "0.0.0.0/0": "internet", [STEAM]: "steam", "10.0.0.10/32": "postgresql", "10.0.0.11/32": "redis",
		"172.18.0.0/16": "kube-apiserver" },
	prod: { "0.0.0.0/0": "internet", [STEAM]: "steam", "10.20.0.10/32": "postgresql", "10.20.0.11/32": "redis",
		"10.20.0.2/32": "kube-apiserver" },
};
const EXTERNAL_SELECTORS = [
	{ name: "dns", ns: { "kubernetes.io/metadata.name": "kube-system" }, pods: { "k8s-app": "kube-dns" } },
	{ name: "prometheus", ns: { "kubernetes.io/metadata.name": "monitoring" }, pods: { "app.kubernetes.io/name": "prometheus" } },
];

// The flows (k8s/base/networkpolicies.yaml draws the same table).
const API = "Deployment/cc-api", CASUAL = "Deployment/cc-matcher-casual", RANKED = "Deployment/cc-matcher-ranked";
const ALLOC = "Deployment/cc-allocator", MAINT = "Deployment/cc-maintenance", MIGRATE = "Job/cc-migrate";
const FLEET = "Fleet/cosmic-clash";
const ALL = [API, CASUAL, RANKED, ALLOC, MAINT, MIGRATE, FLEET];
const EXPECTED_FLOWS = [
	["internet", API, "TCP/8080"],
	["internet", FLEET, "UDP/7777"],
	[FLEET, API, "TCP/8080"],
	[FLEET, "kube-apiserver", "TCP/443"], [FLEET, "kube-apiserver", "TCP/6443"],
	[ALLOC, "kube-apiserver", "TCP/443"], [ALLOC, "kube-apiserver", "TCP/6443"],
	...[API, CASUAL, RANKED, ALLOC, MAINT, MIGRATE].map((w) => [w, "postgresql", "TCP/5432"]),
	...[API, CASUAL, RANKED, MAINT].map((w) => [w, "redis", "TCP/6379"]),
	[API, "steam", "TCP/443"],
	["prometheus", API, "TCP/9180"], ["prometheus", CASUAL, "TCP/9181"], ["prometheus", RANKED, "TCP/9181"],
	["prometheus", ALLOC, "TCP/9183"], ["prometheus", MAINT, "TCP/9184"],
	...ALL.flatMap((w) => [[w, "dns", "UDP/53"], [w, "dns", "TCP/53"]]),
].map(([a, b, p]) => `${a} -> ${b} ${p}`);

// Image target -> the binary its entrypoint runs (SEAM21).
const ENTRYPOINT = { "cc-gameserver": "cc-supervisor" };
// Anything test-only, by name.
const TEST_ONLY = /testkit|fake[_-]|\bfakes?\b|gsclient|cc-player/i;

// ---- input -----------------------------------------------------------------

const argv = { overlay: "", dockerfile: "", bin: "" };
const files = [];
for (const a of process.argv.slice(2)) {
	const m = /^--(overlay|dockerfile|bin)=(.*)$/.exec(a);
	if (m) argv[m[1]] = m[2];
	else files.push(a);
}
const failures = [];
const fail = (rule, where, what) => failures.push(`wiring: FAIL [${rule}] ${where}: ${what}`);
if (!EXTERNAL_ADDRESSES[argv.overlay] || files.length !== 1) {
	console.error("usage: wiring.js --overlay=dev|prod --dockerfile=PATH --bin=DIR RENDERED.yaml");
	process.exit(2);
}
const objects = YAML.parseAllDocuments(fs.readFileSync(files[0], "utf8")).map((d) => d.toJSON()).filter(Boolean);
const id = (o) => `${o.kind}/${o.metadata && o.metadata.name}`;

// Workloads: every object with a pod template.
function podTemplate(o) {
	switch (o.kind) {
	case "Deployment": case "StatefulSet": case "DaemonSet": case "ReplicaSet": case "Job":
		return o.spec && o.spec.template;
	case "CronJob":
		return o.spec && o.spec.jobTemplate && o.spec.jobTemplate.spec && o.spec.jobTemplate.spec.template;
	case "Pod":
		return o;
	case "Fleet": case "GameServerSet": {
		const gs = o.spec && o.spec.template;
		if (!gs || !gs.spec || !gs.spec.template) return null;
		// Agones puts the GameServer's labels on its pod, beside the pod template's.
		const t = gs.spec.template;
		return Object.assign({}, t, { metadata: Object.assign({}, t.metadata, {
			labels: Object.assign({}, (gs.metadata || {}).labels, (t.metadata || {}).labels) }) });
	}
	case "GameServer":
		return o.spec && o.spec.template;
	}
	return null;
}
const workloads = [];
for (const o of objects) {
	const t = podTemplate(o);
	if (t) workloads.push({ id: id(o), obj: o, ns: o.metadata.namespace || "default", labels: (t.metadata || {}).labels || {}, spec: t.spec || {} });
	else if (/^(Deployment|StatefulSet|DaemonSet|Job|CronJob|Pod|Fleet|GameServer|GameServerSet|ReplicaSet)$/.test(o.kind))
		fail("security", id(o), "has no pod template to check");
}
const containersOf = (spec) => [
	...(spec.initContainers || []).map((c) => ({ c, init: true })),
	...(spec.containers || []).map((c) => ({ c, init: false })),
	...(spec.ephemeralContainers || []).map((c) => ({ c, init: false })),
];

// ---- fakes: no test-only name anywhere -------------------------------------
function walk(v, p, fn) {
	if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${p}[${i}]`, fn));
	else if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) { fn(k, `${p}.${k} (key)`); walk(x, `${p}.${k}`, fn); }
	else if (typeof v === "string") fn(v, p);
}
for (const o of objects)
	walk(o, "", (s, p) => {
		if (TEST_ONLY.test(s)) fail("fakes", id(o), `names a test-only thing at ${p.slice(1)}: "${s}"`);
	});

// ---- images ----------------------------------------------------------------
let targets = null;
if (!argv.dockerfile || !fs.existsSync(argv.dockerfile))
	fail("images", "Dockerfile", `${argv.dockerfile || "(none given)"} is missing: every image a manifest names needs its target there (the images branch writes the top-level Dockerfile)`);
else {
	targets = new Set();
	for (const line of fs.readFileSync(argv.dockerfile, "utf8").split("\n")) {
		const m = /^\s*FROM\s+(?:--\S+\s+)*\S+\s+AS\s+([A-Za-z0-9._-]+)\s*$/i.exec(line);
		if (m) targets.add(m[1].toLowerCase());
	}
}
function imageTarget(image) {
	// [registry/]cosmic-clash/<target>[:tag][@digest]
	const noDigest = image.split("@")[0];
	const lastSlash = noDigest.lastIndexOf("/");
	const repo = noDigest.slice(0, lastSlash + 1) + noDigest.slice(lastSlash + 1).split(":")[0];
	const parts = repo.split("/");
	if (parts.length < 2 || parts[parts.length - 2] !== "cosmic-clash") return null;
	return parts[parts.length - 1];
}
for (const w of workloads)
	for (const { c } of containersOf(w.spec)) {
		const where = `${w.id} container ${c.name}`;
		const t = imageTarget(c.image || "");
		if (!t) fail("images", where, `image "${c.image}" is not <registry/>cosmic-clash/<Dockerfile target>`);
		else if (targets && !targets.has(t)) fail("images", where, `image "${c.image}": no Dockerfile target "${t}" (${argv.dockerfile} has: ${[...targets].join(", ") || "none"})`);
	}

// ---- secrets ---------------------------------------------------------------
const baseSecret = (name) => {
	for (const s of Object.keys(EXPECTED_SECRETS)) if (name === s || new RegExp(`^${s}-[a-z0-9]{10}$`).test(name)) return s;
	return name;
};
const mounted = {}; // secret -> Set(workload)
for (const w of workloads) {
	const vols = Object.fromEntries((w.spec.volumes || []).map((v) => [v.name, v]));
	const used = new Set();
	const add = (secret, how) => {
		const s = baseSecret(secret);
		(mounted[s] = mounted[s] || new Map()).set(w.id, how);
		used.add(s);
	};
	for (const { c } of containersOf(w.spec)) {
		for (const vm of c.volumeMounts || []) {
			const v = vols[vm.name];
			if (!v) continue;
			if (v.secret) add(v.secret.secretName, `volume ${v.name}`);
			for (const src of (v.projected && v.projected.sources) || []) if (src.secret) add(src.secret.name, `volume ${v.name}`);
		}
		for (const e of c.env || []) if (e.valueFrom && e.valueFrom.secretKeyRef) add(e.valueFrom.secretKeyRef.name, `env ${e.name} (secrets go in files)`);
		for (const e of c.envFrom || []) if (e.secretRef) add(e.secretRef.name, "envFrom (secrets go in files)");
	}
	for (const v of w.spec.volumes || []) {
		const names = [v.secret && v.secret.secretName, ...((v.projected && v.projected.sources) || []).map((s) => s.secret && s.secret.name)].filter(Boolean);
		for (const n of names) if (!used.has(baseSecret(n))) fail("secrets", w.id, `volume ${v.name} holds Secret ${n} but no container mounts it`);
	}
	for (const { c } of containersOf(w.spec))
		for (const e of c.env || []) if (e.valueFrom && e.valueFrom.secretKeyRef) fail("secrets", `${w.id} container ${c.name}`, `Secret ${e.valueFrom.secretKeyRef.name} in env ${e.name}: secrets are files (--*-file options)`);
}
for (const [s, m] of Object.entries(mounted)) {
	if (!EXPECTED_SECRETS[s]) { fail("secrets", `Secret ${s}`, `is not one SPEC 12 lists (${Object.keys(EXPECTED_SECRETS).join(", ")}); mounted by ${[...m.keys()].join(", ")}`); continue; }
	for (const [w, how] of m) if (!EXPECTED_SECRETS[s].includes(w)) fail("secrets", `Secret ${s}`, `is mounted by ${w} (${how}); only ${EXPECTED_SECRETS[s].join(", ")} may`);
}
for (const [s, ws] of Object.entries(EXPECTED_SECRETS))
	for (const w of ws) if (!(mounted[s] && mounted[s].has(w))) fail("secrets", `Secret ${s}`, `${w} needs it but does not mount it`);
for (const o of objects.filter((o) => o.kind === "Secret")) {
	const values = [...Object.values(o.data || {}).map((v) => Buffer.from(String(v).replace(/\s/g, ""), "base64").toString("utf8")), ...Object.values(o.stringData || {})];
	if (!EXPECTED_SECRETS[baseSecret(o.metadata.name)]) fail("secrets", id(o), "is not one SPEC 12 lists");
	for (const v of values) if (!/DEV-ONLY/.test(v)) fail("secrets", id(o), "holds a value that is not a DEV-ONLY placeholder: real secrets are created in the cluster, never rendered from the repository");
}

// ---- security --------------------------------------------------------------
const under = (p, dir) => p === dir || p.startsWith(dir.replace(/\/$/, "") + "/");
for (const w of workloads) {
	const psc = w.spec.securityContext || {};
	const vols = Object.fromEntries((w.spec.volumes || []).map((v) => [v.name, v]));
	for (const { c, init } of containersOf(w.spec)) {
		const where = `${w.id} ${init ? "init container" : "container"} ${c.name}`;
		const sc = c.securityContext || {};
		const nonRoot = sc.runAsNonRoot !== undefined ? sc.runAsNonRoot : psc.runAsNonRoot;
		const uid = sc.runAsUser !== undefined ? sc.runAsUser : psc.runAsUser;
		if (nonRoot !== true) fail("security", where, "runAsNonRoot is not true");
		if (uid === undefined || uid === 0) fail("security", where, `runAsUser is ${uid === undefined ? "unset" : 0}: a numeric non-root user is required`);
		if (sc.readOnlyRootFilesystem !== true) fail("security", where, "readOnlyRootFilesystem is not true");
		if (sc.allowPrivilegeEscalation !== false) fail("security", where, "allowPrivilegeEscalation is not false");
		if (sc.privileged) fail("security", where, "privileged");
		const writable = (dir) => (c.volumeMounts || []).some((vm) => under(dir, vm.mountPath) && !vm.readOnly && vols[vm.name] && (vols[vm.name].emptyDir || vols[vm.name].ephemeral));
		const home = (c.env || []).find((e) => e.name === "HOME");
		if (!home || !home.value) fail("security", where, "HOME is not set");
		else if (!writable(home.value)) fail("security", where, `HOME ${home.value} is not on a writable volume (emptyDir)`);
		if (!writable("/tmp")) fail("security", where, "/tmp is not on a writable volume (emptyDir)");
	}
}

// ---- flags -----------------------------------------------------------------
const helps = {};
function help(binary) {
	if (helps[binary] !== undefined) return helps[binary];
	const exe = path.join(argv.bin, binary);
	try {
		helps[binary] = execFileSync(exe, ["--help"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
	} catch (e) {
		helps[binary] = e.stdout && /usage:/.test(e.stdout) ? e.stdout : null;
	}
	return helps[binary];
}
for (const w of workloads)
	for (const { c, init } of containersOf(w.spec)) {
		const t = imageTarget(c.image || "");
		if (!t) continue;
		const where = `${w.id} container ${c.name}`;
		const binary = ENTRYPOINT[t] || t;
		const h = help(binary);
		if (h === null) { fail("flags", where, `cannot run ${path.join(argv.bin, binary)} --help (make all builds it)`); continue; }
		const options = new Set(h.match(/--[a-z0-9][a-z0-9-]*/g) || []);
		const envs = new Set(h.match(/COSMIC_CLASH_[A-Z0-9_]+/g) || []);
		const usage = (/^usage: \S+ (.*)$/m.exec(h) || [, ""])[1];
		if (c.command) fail("flags", where, "sets command: the image's entrypoint is the binary; pass args");
		for (const a of c.args || []) {
			if (a.startsWith("--")) {
				const name = a.split("=")[0];
				if (!options.has(name)) fail("flags", where, `${name} is not an option of ${binary} (its --help)`);
			} else if (!usage.split(/[\s|]+/).includes(a)) fail("flags", where, `argument "${a}" is not in ${binary}'s usage: ${usage}`);
		}
		for (const e of c.env || [])
			if (e.name.startsWith("COSMIC_CLASH_") && !envs.has(e.name)) fail("flags", where, `${e.name} is not a variable ${binary} reads (its --help)`);
		// Every binary that keeps the Redis candidate index (its --help lists
		// --redis-host: cc-api, cc-matcher, cc-maintenance) is given the
		// cluster's Redis: one left without it runs without the index
		// (candidate_index_disabled) and nothing else would say so.
		if (options.has("--redis-host") && !init && !(c.args || []).some((a) => a.startsWith("--redis-host=")) &&
		    !(c.env || []).some((e) => e.name === "COSMIC_CLASH_REDIS_HOST"))
			fail("flags", where, `${binary} keeps the Redis candidate index (--redis-host in its --help) but is given neither --redis-host nor COSMIC_CLASH_REDIS_HOST`);
	}

// ---- network ---------------------------------------------------------------
function matches(sel, labels) {
	if (!sel) return true;
	for (const [k, v] of Object.entries(sel.matchLabels || {})) if (labels[k] !== v) return false;
	for (const e of sel.matchExpressions || []) {
		const has = Object.prototype.hasOwnProperty.call(labels, e.key);
		if (e.operator === "In" && !(has && e.values.includes(labels[e.key]))) return false;
		if (e.operator === "NotIn" && has && e.values.includes(labels[e.key])) return false;
		if (e.operator === "Exists" && !has) return false;
		if (e.operator === "DoesNotExist" && has) return false;
	}
	return true;
}
const sameMap = (a, b) => JSON.stringify(Object.entries(a || {}).sort()) === JSON.stringify(Object.entries(b || {}).sort());
function peers(policy, rulePeers) {
	if (!rulePeers || rulePeers.length === 0) return ["anyone"];
	const out = [];
	for (const p of rulePeers) {
		if (p.ipBlock) {
			const key = p.ipBlock.cidr + (p.ipBlock.except && p.ipBlock.except.length ? ` except ${p.ipBlock.except.join(",")}` : "");
			out.push(EXTERNAL_ADDRESSES[argv.overlay][key] || `ipBlock ${key}`);
		} else if (p.namespaceSelector) {
			const ext = EXTERNAL_SELECTORS.find((e) => sameMap(e.ns, p.namespaceSelector.matchLabels) && !p.namespaceSelector.matchExpressions &&
				p.podSelector && sameMap(e.pods, p.podSelector.matchLabels) && !p.podSelector.matchExpressions);
			out.push(ext ? ext.name : `namespaces ${JSON.stringify(p.namespaceSelector)} pods ${JSON.stringify(p.podSelector || {})}`);
		} else if (p.podSelector) {
			const ws = workloads.filter((w) => w.ns === (policy.metadata.namespace || "default") && matches(p.podSelector, w.labels));
			if (ws.length === 0) out.push(`pods ${JSON.stringify(p.podSelector)} (none here)`);
			out.push(...ws.map((w) => w.id));
		}
	}
	return out;
}
const portsOf = (rule) => (!rule.ports || rule.ports.length === 0 ? ["any/*"] :
	rule.ports.map((p) => `${p.protocol || "TCP"}/${p.port === undefined ? "*" : p.port}${p.endPort ? `-${p.endPort}` : ""}`));
const policies = objects.filter((o) => o.kind === "NetworkPolicy");
const isolated = { Ingress: new Set(), Egress: new Set() };
const ingress = new Set(), egress = new Set();
for (const pol of policies) {
	const types = pol.spec.policyTypes || ["Ingress", ...(pol.spec.egress ? ["Egress"] : [])];
	const selected = workloads.filter((w) => w.ns === (pol.metadata.namespace || "default") && matches(pol.spec.podSelector, w.labels));
	for (const w of selected) for (const t of types) isolated[t].add(w.id);
	if (types.includes("Ingress"))
		for (const r of pol.spec.ingress || []) for (const src of peers(pol, r.from)) for (const p of portsOf(r)) for (const w of selected) ingress.add(`${src} -> ${w.id} ${p}`);
	if (types.includes("Egress"))
		for (const r of pol.spec.egress || []) for (const dst of peers(pol, r.to)) for (const p of portsOf(r)) for (const w of selected) egress.add(`${w.id} -> ${dst} ${p}`);
}
for (const w of workloads) for (const t of ["Ingress", "Egress"]) if (!isolated[t].has(w.id)) fail("network", w.id, `no NetworkPolicy isolates it for ${t} (default deny is missing)`);
const internal = (x) => workloads.some((w) => w.id === x);
const allowed = new Set();
for (const f of ingress) {
	const src = f.split(" -> ")[0];
	if (!internal(src)) allowed.add(f);
	else if (egress.has(f)) allowed.add(f);
	else fail("network", f, "ingress is allowed but the source's egress is not (half-open)");
}
for (const f of egress) {
	const dst = f.split(" -> ")[1].split(" ")[0];
	if (!internal(dst)) allowed.add(f);
	else if (!ingress.has(f)) fail("network", f, "egress is allowed but the destination's ingress is not (half-open)");
}
const expected = new Set(EXPECTED_FLOWS);
for (const f of allowed) if (!expected.has(f)) fail("network", f, "is allowed but is not an expected flow");
for (const f of expected) if (!allowed.has(f)) fail("network", f, "is an expected flow that no NetworkPolicy allows");

// ---- rbac ------------------------------------------------------------------
for (const o of objects.filter((o) => o.kind === "ClusterRole" || o.kind === "ClusterRoleBinding")) fail("rbac", id(o), "no cluster-wide RBAC is needed");
for (const o of objects.filter((o) => o.kind === "Role")) {
	const want = [{ apiGroups: ["allocation.agones.dev"], resources: ["gameserverallocations"], verbs: ["create"] }];
	if (o.metadata.name !== "cc-allocator" || JSON.stringify(o.rules) !== JSON.stringify(want))
		fail("rbac", id(o), `rules ${JSON.stringify(o.rules)}: the only Role is cc-allocator's, ${JSON.stringify(want)}`);
}
for (const w of workloads) {
	const sa = w.spec.serviceAccountName;
	const token = w.spec.automountServiceAccountToken;
	if (w.obj.kind === "Fleet") { if (sa) fail("rbac", w.id, `pins serviceAccountName ${sa}: Agones gives game-server pods their SDK account`); continue; }
	if (w.id === ALLOC) { if (sa !== "cc-allocator" || token !== true) fail("rbac", w.id, "must run as ServiceAccount cc-allocator with its token mounted"); continue; }
	if (token !== false) fail("rbac", w.id, "mounts a service account token it never uses (automountServiceAccountToken: false)");
}

// ---- probes ----------------------------------------------------------------
for (const w of workloads.filter((w) => w.obj.kind === "Deployment"))
	for (const { c, init } of containersOf(w.spec)) {
		if (init) continue;
		const where = `${w.id} container ${c.name}`;
		const adminArg = (c.args || []).find((a) => a.startsWith("--admin-port="));
		const admin = adminArg ? Number(adminArg.split("=")[1]) : null;
		const named = Object.fromEntries((c.ports || []).map((p) => [p.name, p.containerPort]));
		if (!(c.args || []).includes("--admin-listen=0.0.0.0")) fail("probes", where, "the admin server must listen beyond loopback (--admin-listen=0.0.0.0) for probes and scraping");
		for (const [probe, p] of [["readinessProbe", "/readyz"], ["livenessProbe", "/healthz"]]) {
			const g = c[probe] && c[probe].httpGet;
			const port = g && (typeof g.port === "number" ? g.port : named[g.port]);
			if (!g || g.path !== p || admin === null || port !== admin) fail("probes", where, `${probe} must GET ${p} on the admin port (--admin-port ${admin})`);
		}
	}

// ---- namespace ---------------------------------------------------------------
const PSA = { enforce: "privileged", audit: "restricted", warn: "restricted" };
const nss = objects.filter((o) => o.kind === "Namespace");
if (nss.length !== 1) fail("namespace", "Namespace", `${nss.length} Namespace objects (want 1)`);
for (const n of nss)
	for (const [mode, level] of Object.entries(PSA)) {
		const got = (n.metadata.labels || {})[`pod-security.kubernetes.io/${mode}`];
		if (got !== level) fail("namespace", id(n), `pod-security.kubernetes.io/${mode} is ${got === undefined ? "unset" : `"${got}"`}, want "${level}"`);
	}
for (const w of workloads) if (!nss.some((n) => n.metadata.name === w.ns)) fail("namespace", w.id, `namespace ${w.ns} is not the rendered Namespace`);

// ---- playlists ---------------------------------------------------------------
const PLAYLISTS = ["casual", "ranked"];
const matchers = workloads.filter((w) => (w.spec.containers || []).some((c) => imageTarget(c.image || "") === "cc-matcher"));
for (const pl of PLAYLISTS) {
	const ws = matchers.filter((w) => (w.spec.containers || []).some((c) => (c.args || []).includes(`--playlist=${pl}`)));
	if (ws.length !== 1) { fail("playlists", pl, `${ws.length} workloads match it (want one Deployment)`); continue; }
	const w = ws[0];
	if (w.id !== `Deployment/cc-matcher-${pl}`) fail("playlists", w.id, `matches ${pl}: name it cc-matcher-${pl}`);
	if (w.obj.spec.replicas !== 1) fail("playlists", w.id, `replicas ${w.obj.spec.replicas} (one process per playlist; more are standbys of its pass lease)`);
}
for (const w of matchers)
	if (!(w.spec.containers || []).some((c) => (c.args || []).some((a) => PLAYLISTS.includes(a.replace(/^--playlist=/, "")) && a.startsWith("--playlist="))))
		fail("playlists", w.id, "runs cc-matcher without --playlist=casual|ranked");

// ---- files ------------------------------------------------------------------
for (const w of workloads)
	for (const { c } of containersOf(w.spec))
		for (const a of c.args || []) {
			const m = /^(--[a-z0-9-]+-file)=(.+)$/.exec(a);
			if (!m) continue;
			if (!(c.volumeMounts || []).some((vm) => under(m[2], vm.mountPath)))
				fail("files", `${w.id} container ${c.name}`, `${m[1]}=${m[2]} is not inside any volume it mounts`);
		}

// ---- budgets -----------------------------------------------------------------
const pdbs = objects.filter((o) => o.kind === "PodDisruptionBudget");
for (const w of workloads.filter((w) => w.obj.kind === "Deployment")) {
	const p = pdbs.filter((b) => (b.metadata.namespace || "default") === w.ns && b.spec.selector && matches(b.spec.selector, w.labels));
	if (p.length !== 1) fail("budgets", w.id, `${p.length} PodDisruptionBudgets select it (want 1)`);
	else if (p[0].spec.maxUnavailable === undefined || p[0].spec.minAvailable !== undefined)
		fail("budgets", id(p[0]), "must use maxUnavailable (not minAvailable): a single replica can then still be drained");
}
const hpa = objects.find((o) => o.kind === "HorizontalPodAutoscaler" && o.spec.scaleTargetRef && o.spec.scaleTargetRef.kind === "Deployment" && o.spec.scaleTargetRef.name === "cc-api");
if (!hpa) fail("budgets", API, "no HorizontalPodAutoscaler scales it");
for (const w of workloads)
	for (const { c } of containersOf(w.spec))
		for (const k of ["requests", "limits"])
			for (const r of ["cpu", "memory"])
				if (!(c.resources && c.resources[k] && c.resources[k][r] !== undefined)) fail("budgets", `${w.id} container ${c.name}`, `no ${r} ${k}`);

for (const f of failures) console.log(f);
console.log(`wiring: ${argv.overlay}: ${objects.length} objects, ${workloads.length} workloads, ${allowed.size} flows, ${failures.length} failures`);
process.exit(failures.length ? 1 : 0);
