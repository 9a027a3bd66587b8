#!/usr/bin/env node
// openapi_doc_checks.js: what tests/integration/openapi_lint.sh checks beyond
// the linter, about contracts/v1/openapi.json and the README's examples of it.
// Plain Node; ajv + ajv-formats from build/node (scripts/npm-tools.sh).
//
//  1. Refusals that come before routing are listed where they can occur:
//     every operation lists 429 `too_many_connections` (the per-address
//     connection cap of the HTTP front, sys/http_front.h), and every
//     operation whose path has a parameter lists 400 `invalid_path` (the raw
//     path check of sys/http_server.h), each through a response whose
//     description names the code (issue 20 item 13).
//  2. Every request body the README shows (`curl ... localhost:8080/v1/...
//     -d '<json>'`) validates against the documented request schema of its
//     operation, so the README cannot again show a body only the testkit
//     takes (issue 20 item 11). At least one must be found.
//
// Usage: openapi_doc_checks.js [SPEC [README]]; exits 1 with one line per problem.
'use strict';
const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');

const TOP = path.resolve(__dirname, '../..');
const specFile = process.argv[2] || path.join(TOP, 'contracts/v1/openapi.json');
const readmeFile = process.argv[3] || path.join(TOP, 'README.md');
const doc = JSON.parse(fs.readFileSync(specFile, 'utf8'));
const problems = [];
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

function resolve(node) {
  for (let hops = 0; node && node.$ref && hops < 16; hops++)
    node = node.$ref
      .slice(2)
      .split('/')
      .reduce((n, k) => (n === undefined ? n : n[k.replace(/~1/g, '/').replace(/~0/g, '~')]), doc);
  return node;
}

// ---- 1. pre-routing refusals, per operation ----------------------------------------
let ops = 0;
for (const [p, item] of Object.entries(doc.paths || {}))
  for (const m of METHODS.filter((x) => item[x])) {
    ops++;
    const op = item[m];
    const where = `${m.toUpperCase()} ${p}`;
    const codes = (op['x-cosmic-clash'] || {}).error_codes || {};
    const need = [['429', 'too_many_connections']];
    if (/\{[^}]+\}/.test(p)) need.push(['400', 'invalid_path']);
    for (const [status, code] of need) {
      const resp = resolve((op.responses || {})[status]);
      if (!resp) problems.push(`${where}: no ${status} response, yet every such route can answer ${status} ${code}`);
      else if (!String(resp.description).includes('`' + code + '`'))
        problems.push(`${where} ${status}: the response's description does not name \`${code}\``);
      if (!(codes[status] || []).includes(code))
        problems.push(`${where}: x-cosmic-clash.error_codes["${status}"] lacks ${code}`);
    }
  }
if (ops === 0) problems.push(`${specFile}: no operations found`);

// ---- 1b. the rating rule where players and operators read it (issue 20 item 14) -------
// glicko2_ref.py --self-test checks the README's worked example; here, that the
// contract's ranked profile and the README state both rules at all.
{
  const profile = ((doc.paths['/v1/profile/ranked'] || {}).get || {}).description || '';
  const readmeText = fs.readFileSync(readmeFile, 'utf8');
  for (const [where, text] of [['GET /v1/profile/ranked description', profile], [path.basename(readmeFile), readmeText]])
    for (const [rule, re] of [
      ['the composite opponent (mean rating, root mean square of the deviations)', /composite opponent[\s\S]{0,200}mean[\s\S]{0,200}root mean square/i],
      ['the deviation cap of 350 before step 7', /capped at 350[\s\S]{0,200}before step 7/i],
    ])
      if (!re.test(text)) problems.push(`${where} does not state ${rule}`);
}

// ---- 2. the README's request bodies against the schemas ------------------------------
const req = createRequire(path.join(TOP, 'build/node/package.json'));
let Ajv2020, addFormats;
try {
  Ajv2020 = req('ajv/dist/2020');
  addFormats = req('ajv-formats');
} catch (e) {
  console.error(`openapi_doc_checks: cannot load ajv from build/node (scripts/npm-tools.sh): ${e.message}`);
  process.exit(1);
}
Ajv2020 = Ajv2020.default || Ajv2020;
addFormats = addFormats.default || addFormats;
const ajv = new Ajv2020({ allErrors: true, strict: false, allowUnionTypes: true });
addFormats(ajv);
const DEFS = 'urn:cosmic-clash:openapi-components';
const toAjv = (s) =>
  JSON.parse(JSON.stringify(s), (k, v) => (k === '$ref' ? `${DEFS}#/$defs/${v.slice('#/components/schemas/'.length)}` : v));
ajv.addSchema({ $id: DEFS, $defs: toAjv(doc.components.schemas) });

// "/v1/queue/abc/heartbeat" -> the documented "POST /v1/queue/{ticket_id}/heartbeat".
function operationFor(method, urlPath) {
  const segs = urlPath.split('/');
  for (const [p, item] of Object.entries(doc.paths || {})) {
    const t = p.split('/');
    if (t.length === segs.length && t.every((s, i) => /^\{.*\}$/.test(s) || s === segs[i]) && item[method.toLowerCase()])
      return { key: `${method} ${p}`, op: item[method.toLowerCase()] };
  }
  return null;
}

const readme = fs.readFileSync(readmeFile, 'utf8').split('\n');
let examples = 0;
readme.forEach((line, i) => {
  const m = /\bcurl\b.*?localhost:8080(\/v1\/[^\s'"?]*)/.exec(line);
  if (!m) return;
  const body = /(?:-d|--data(?:-binary|-raw)?)\s+'([^']*)'/.exec(line);
  const method = (/-X\s+([A-Z]+)/.exec(line) || [])[1] || (body ? 'POST' : 'GET');
  const where = `${path.basename(readmeFile)}:${i + 1}`;
  const found = operationFor(method, m[1]);
  if (!found) return problems.push(`${where}: ${method} ${m[1]} is not a documented operation`);
  if (!body) return;
  examples++;
  let json;
  try {
    json = JSON.parse(body[1]);
  } catch (e) {
    return problems.push(`${where}: the body ${body[1]} is not JSON: ${e.message}`);
  }
  const rb = resolve(found.op.requestBody);
  const schema = rb && rb.content && rb.content['application/json'] && rb.content['application/json'].schema;
  if (!schema) return problems.push(`${where}: ${found.key} documents no JSON request body, yet the README sends one`);
  const v = ajv.compile(toAjv(schema));
  if (!v(json))
    problems.push(
      `${where}: the README's body ${body[1]} for ${found.key} breaks the documented schema: ` +
        v.errors.map((e) => `${e.instancePath || '(root)'} ${e.message}`).join('; '),
    );
  else console.log(`openapi_doc_checks: ${where}: ${found.key} body ${body[1]} matches the schema`);
});
if (examples === 0) problems.push(`${readmeFile}: no curl example with a request body found (the check would prove nothing)`);

for (const p of problems) console.error(`openapi_doc_checks: ${p}`);
if (!problems.length) console.log(`openapi_doc_checks: ${ops} operations list 429 too_many_connections (and 400 invalid_path where they take a path parameter); ${examples} README request bodies match the schemas`);
process.exit(problems.length ? 1 : 0);
