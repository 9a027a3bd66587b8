#!/usr/bin/env node
// validate.js RENDERED.yaml... - schema validation of kustomize output,
// offline (tests/integration/k8s_manifests.sh runs it on each overlay).
//
//  - Every core object against its Kubernetes schema: the compiled
//    validators of npm kubernetes-models 4 (pinned in
//    scripts/openapi-lint/package.json, installed by scripts/npm-tools.sh).
//  - The Agones objects against the CRD schemas vendored in
//    tests/k8s/agones/ (from ../shared/agones/): Fleet and FleetAutoscaler
//    as they are, the Fleet's template as a GameServer, and the
//    GameServer's pod template once more as a core PodTemplateSpec. Unknown
//    fields are refused (additionalProperties false on every object schema
//    that lists its properties), as kubectl's strict field validation
//    would refuse them where the API server only prunes.
//  - A kind with no schema here fails: nothing passes unchecked.
//
// Prints one line per object and exits 1 naming each object and field that
// failed.
"use strict";
const fs = require("fs");
const path = require("path");

const top = path.resolve(__dirname, "../..");
const nm = process.env.CC_NODE_MODULES || path.join(top, "build/node/node_modules");
const need = (m) => require(path.join(nm, m));
const YAML = need("yaml");
const Ajv = need("ajv");

// Agones CRD schemas, made strict.
function strict(schema) {
	if (Array.isArray(schema)) return schema.map(strict);
	if (!schema || typeof schema !== "object") return schema;
	const out = {};
	for (const [k, v] of Object.entries(schema)) out[k] = k === "enum" || k === "required" ? v : strict(v);
	// OpenAPI 3.0's boolean exclusiveMinimum/Maximum (draft 4) in draft 7 terms.
	for (const [ex, lim] of [["exclusiveMinimum", "minimum"], ["exclusiveMaximum", "maximum"]]) {
		if (out[ex] === true && typeof out[lim] === "number") {
			out[ex] = out[lim];
			delete out[lim];
		} else if (typeof out[ex] === "boolean") delete out[ex];
	}
	if (out.properties && out.additionalProperties === undefined && !out["x-kubernetes-preserve-unknown-fields"])
		out.additionalProperties = false;
	return out;
}
function crd(file) {
	const s = strict(JSON.parse(fs.readFileSync(path.join(__dirname, "agones", file), "utf8")));
	// The CRD schema leaves the type meta to the API server.
	s.properties = Object.assign(
		{ apiVersion: { type: "string" }, kind: { type: "string" }, metadata: { type: "object" } },
		s.properties
	);
	return s;
}
const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false });
need("ajv-formats")(ajv); // date-time, int32, int64, ...
ajv.addFormat("int-or-string", true);
const agones = {
	"agones.dev/v1/Fleet": ajv.compile(crd("fleet-agones.dev-v1.json")),
	"agones.dev/v1/GameServer": ajv.compile(crd("gameserver-agones.dev-v1.json")),
	"autoscaling.agones.dev/v1/FleetAutoscaler": ajv.compile(crd("fleetautoscaler-autoscaling.agones.dev-v1.json")),
};

// kubernetes-models: <module dir>/<Kind> where the dir is the apiVersion
// ("v1" for the core group).
function coreModel(apiVersion, kind) {
	const file = path.join(nm, "kubernetes-models", apiVersion, kind + ".js");
	if (!/^[A-Za-z0-9.\/]+$/.test(apiVersion) || !/^[A-Za-z0-9]+$/.test(kind) || !fs.existsSync(file)) return null;
	return require(file)[kind];
}

function ajvErrors(errors) {
	return errors.map((e) => `${e.instancePath || "/"} ${e.message}${e.params && e.params.additionalProperty ? ` (${e.params.additionalProperty})` : ""}`);
}

const failures = [];
let checked = 0;
function check(where, obj) {
	const key = `${obj.apiVersion}/${obj.kind}`;
	checked++;
	if (agones[key]) {
		const v = agones[key];
		if (!v(obj)) failures.push(`${where}: ${key} against the Agones CRD schema: ${ajvErrors(v.errors).join("; ")}`);
		return;
	}
	const Model = coreModel(obj.apiVersion, obj.kind);
	if (!Model) {
		failures.push(`${where}: no schema for ${key} (neither kubernetes-models nor tests/k8s/agones/)`);
		return;
	}
	// kustomize folds long base64 Secret data over lines; the API server's
	// decoder (Go's encoding/base64) skips the newlines, the schema's
	// "byte" format does not: compare what the server reads.
	if (obj.apiVersion === "v1" && obj.kind === "Secret" && obj.data)
		obj = Object.assign({}, obj, {
			data: Object.fromEntries(Object.entries(obj.data).map(([k, v]) => [k, typeof v === "string" ? v.replace(/[\r\n]/g, "") : v])),
		});
	try {
		new Model(obj).validate();
	} catch (e) {
		failures.push(`${where}: ${key}: ${e.message}`);
	}
}

for (const file of process.argv.slice(2)) {
	const docs = YAML.parseAllDocuments(fs.readFileSync(file, "utf8"));
	for (const d of docs) {
		if (d.errors && d.errors.length) {
			failures.push(`${file}: YAML: ${d.errors.map(String).join("; ")}`);
			continue;
		}
		const obj = d.toJSON();
		if (!obj) continue;
		const where = `${path.basename(file)} ${obj.kind}/${obj.metadata && obj.metadata.name}`;
		check(where, obj);
		if (obj.apiVersion === "agones.dev/v1" && obj.kind === "Fleet" && obj.spec && obj.spec.template) {
			const gs = {
				apiVersion: "agones.dev/v1",
				kind: "GameServer",
				metadata: Object.assign({ name: `${obj.metadata.name}-template` }, obj.spec.template.metadata || {}),
				spec: obj.spec.template.spec,
			};
			check(`${where} (template as GameServer)`, gs);
			if (gs.spec && gs.spec.template)
				check(`${where} (GameServer pod template)`, Object.assign({ apiVersion: "v1", kind: "PodTemplate", metadata: { name: "gs" } }, { template: gs.spec.template }));
		}
	}
}
for (const f of failures) console.log(`validate: FAIL: ${f}`);
console.log(`validate: ${checked} objects checked, ${failures.length} failed`);
process.exit(failures.length || checked === 0 ? 1 : 0);
