#!/usr/bin/env node
// contract-test.js: drives live cc-api servers over HTTP and checks every
// answer against contracts/v1/openapi.json. Plain Node (>= 18: global fetch),
// ajv + ajv-formats from build/node (scripts/npm-tools.sh installs them).
//
// What it proves:
//  1. every documented (route, status, error code) is provoked by some
//     request, unless UNPROVOKABLE below names it with a reason (and an
//     allow-list entry that the doc lacks, or that a request did provoke,
//     is itself a failure, so the list cannot rot);
//  2. every answer's status is documented for its route, its JSON body
//     validates against the schema documented for that status, an error's
//     code is one the route lists in x-cosmic-clash.error_codes, every
//     documented response header is present and valid (X-Request-Id on all,
//     Retry-After on 429, equal to retry_after_seconds, which no other status
//     carries), 503 is retryable; and each request got the status
//     and code the doc says it should (listed per case below);
//  3. the route table in services/api/routes.c and the doc's paths name the
//     same (method, path) pairs.
// Requests expected to succeed are validated against the doc too (body and
// parameters), so the doc cannot refuse what the server serves.
//
// Usage: tests/integration/contract.sh starts the servers and runs this.
// `contract-test.js --static` runs only the checks that need no server (3,
// and the allow-list against the doc). Servers and data, by environment:
//   CC_CONTRACT_API            cc-testkit-api, healthy database, operator token
//   CC_CONTRACT_STEAM_API      cc-api with the fake Steam and an unreachable
//                              database, operator token set
//   CC_CONTRACT_BARE_API       cc-api with neither Steam nor operator token
//                              configured, unreachable database
//   CC_CONTRACT_OPERATOR_TOKEN the operator bearer secret of the first two
//   CC_CONTRACT_PG_DSN         the first server's database (fixtures via psql)
//   CC_CONTRACT_PSQL           psql binary (default: psql on PATH)
//   CC_CONTRACT_REGIONS        the first server's --regions (default eu-west,us-east)
//   CC_CONTRACT_MIN_PROTOCOL   the first server's --min-protocol-version (default 2)
//   CC_CONTRACT_WORKLOAD_SECRET the raw workload secret file the first two
//                              servers verify workload tokens with (this test
//                              signs them itself, with Node's crypto)
// Optional: CC_CONTRACT_SPEC, CC_CONTRACT_ROUTES, CC_CONTRACT_NODE_PREFIX.
'use strict';

const fs = require('fs');
const http = require('http');
const net = require('net');
const path = require('path');
const crypto = require('crypto');
const { execFileSync } = require('child_process');
const { createRequire } = require('module');
const { isDeepStrictEqual } = require('util');

const TOP = path.resolve(__dirname, '../..');
const STATIC_ONLY = process.argv.includes('--static');
const cfg = {
  spec: process.env.CC_CONTRACT_SPEC || path.join(TOP, 'contracts/v1/openapi.json'),
  routes: process.env.CC_CONTRACT_ROUTES || path.join(TOP, 'services/api/routes.c'),
  nodePrefix: process.env.CC_CONTRACT_NODE_PREFIX || path.join(TOP, 'build/node'),
  psql: process.env.CC_CONTRACT_PSQL || 'psql',
  regions: (process.env.CC_CONTRACT_REGIONS || 'eu-west,us-east').split(','),
  minProtocol: Number(process.env.CC_CONTRACT_MIN_PROTOCOL || 2),
  workloadSecret: process.env.CC_CONTRACT_WORKLOAD_SECRET,
};

// Statuses and codes no request can provoke from these servers. Keys are
// "METHOD /path STATUS code" exactly as the doc spells them.
const RETRY_EXHAUSTED =
  'needs one transaction to hit a serialization failure on all 5 attempts; no request sequence forces ' +
  'that deterministically against a healthy PostgreSQL (the retry loop itself is tested in test_pg)';
const UNPROVOKABLE = {
  'POST /v1/session/steam 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/queue 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/queue/{ticket_id}/heartbeat 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/queue/{ticket_id}/cancel 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/probes/{region}/challenge 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/probes/{region}/answer 503 retry_exhausted': RETRY_EXHAUSTED,
  'GET /v1/proposals/{proposal_id} 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/proposals/{proposal_id}/response 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/admin/players/{player_id}/ban 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/admin/players/{player_id}/unban 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/servers/{server_id}/register 503 retry_exhausted': RETRY_EXHAUSTED,
  'GET /v1/servers/{server_id}/roster 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/servers/{server_id}/connect 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/servers/{server_id}/disconnect 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/servers/{server_id}/shutdown 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/servers/{server_id}/result 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/admin/outbox/dead-letters/{outbox_id}/replay 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/servers/{server_id}/heartbeat 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/servers/{server_id}/no_show 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/parties 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/parties/join 503 retry_exhausted': RETRY_EXHAUSTED,
  'GET /v1/parties/{party_id} 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/parties/{party_id}/invite 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/parties/{party_id}/leave 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/parties/{party_id}/kick 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/parties/{party_id}/promote 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/parties/{party_id}/disband 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/parties/{party_id}/queue 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/servers/{server_id}/vacated 503 retry_exhausted': RETRY_EXHAUSTED,
  'GET /v1/backfill-offers/{offer_id} 503 retry_exhausted': RETRY_EXHAUSTED,
  'POST /v1/backfill-offers/{offer_id}/response 503 retry_exhausted': RETRY_EXHAUSTED,
};

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];
const DEFS_ID = 'urn:cosmic-clash:openapi-components';
const MAX_BODY = 64 * 1024;

let passed = 0;
let failed = 0;
const exercised = new Set(); // "METHOD /path STATUS[ code]"

function ok(line) {
  passed++;
  console.log(`ok   ${line}`);
}
function fail(line, details) {
  failed++;
  console.log(`FAIL ${line}`);
  for (const d of details || []) console.log(`     ${String(d).replace(/\n/g, '\n     ')}`);
}
function fatal(msg) {
  console.error(`contract-test: ${msg}`);
  process.exit(2);
}
function need(name) {
  const v = process.env[name];
  if (!v) fatal(`${name} is not set (tests/integration/contract.sh sets it)`);
  return v;
}
// clip: text for the report, cut to n bytes, with credentials (session
// tokens, probe nonces) blanked as the services' own logs do.
function clip(s, n = 800) {
  s = String(s).replace(/("(?:session_token|nonce)"\s*:\s*)"[^"]*"/g, '$1"<redacted>"');
  return s.length > n ? `${s.slice(0, n)}... (${s.length} bytes)` : s;
}

// ---- the document ----------------------------------------------------------

const doc = JSON.parse(fs.readFileSync(cfg.spec, 'utf8'));

// resolve: follows local "#/a/b" references until a node without $ref.
function resolve(node) {
  for (let hops = 0; node && node.$ref && hops < 16; hops++) {
    if (!node.$ref.startsWith('#/')) fatal(`non-local $ref ${node.$ref}`);
    node = node.$ref
      .slice(2)
      .split('/')
      .reduce((n, k) => (n === undefined ? n : n[k.replace(/~1/g, '/').replace(/~0/g, '~')]), doc);
  }
  return node;
}

const OPS = new Map(); // "POST /v1/queue" -> operation
for (const [p, item] of Object.entries(doc.paths || {}))
  for (const m of METHODS) if (item[m]) OPS.set(`${m.toUpperCase()} ${p}`, { ...item[m], pathParams: item.parameters });

function errorCodes(opKey, status) {
  const codes = ((OPS.get(opKey)['x-cosmic-clash'] || {}).error_codes || {})[status];
  return codes || [];
}

// Every documented (route, status, code): what coverage must reach.
function documentedOutcomes() {
  const out = [];
  for (const [key, op] of OPS)
    for (const status of Object.keys(op.responses || {})) {
      if (/^[45]/.test(status)) for (const code of errorCodes(key, status)) out.push(`${key} ${status} ${code}`);
      else out.push(`${key} ${status}`);
    }
  return out;
}

// ---- server routes vs doc ----------------------------------------------------

function compareRoutes() {
  const text = fs.readFileSync(cfg.routes, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');
  const table = /api_routes\[\]\s*=\s*\{([\s\S]*?)\n\};/.exec(text);
  if (!table) return fail(`routes: no "api_routes[] = { ... };" table in ${cfg.routes}`);
  const entries = [...table[1].matchAll(/\{\s*"([A-Z]+)"\s*,\s*"([^"]+)"\s*,\s*[A-Za-z_]\w*\s*\}/g)];
  const braces = (table[1].match(/\{\s*"/g) || []).length;
  if (entries.length === 0 || entries.length !== braces)
    return fail(`routes: parsed ${entries.length} of ${braces} entries of ${cfg.routes}; the table's shape changed`);
  const server = new Set(entries.map((e) => `${e[1]} ${e[2]}`));
  // The WebSocket stream is documented by the AsyncAPI document beside it (its channel address).
  const events = JSON.parse(fs.readFileSync(path.join(path.dirname(cfg.spec), 'events.json'), 'utf8'));
  for (const ch of Object.values(events.channels || {}))
    if (server.delete(`GET ${ch.address}`))
      ok(`routes: GET ${ch.address} is served and documented by events.json (AsyncAPI)`);
  let same = true;
  for (const r of server)
    if (!OPS.has(r)) {
      same = false;
      fail(`routes: ${r} is served (services/api/routes.c) but not in ${path.basename(cfg.spec)}`);
    }
  for (const r of OPS.keys())
    if (!server.has(r)) {
      same = false;
      fail(`routes: ${r} is in ${path.basename(cfg.spec)} but services/api/routes.c has no such route`);
    }
  if (same) ok(`routes: services/api/routes.c and the doc both have the same ${server.size} routes`);
}

function checkAllowList() {
  const documented = new Set(documentedOutcomes());
  for (const key of Object.keys(UNPROVOKABLE))
    if (!documented.has(key)) fail(`allow-list: "${key}" is not a documented (route, status, code); remove it`);
}

// ---- schemas ------------------------------------------------------------------

let ajv;
const validators = new Map();

function loadAjv() {
  const req = createRequire(path.join(cfg.nodePrefix, 'package.json'));
  let Ajv2020, addFormats;
  try {
    Ajv2020 = req('ajv/dist/2020');
    addFormats = req('ajv-formats');
  } catch (e) {
    fatal(`cannot load ajv from ${cfg.nodePrefix} (run scripts/npm-tools.sh): ${e.message}`);
  }
  Ajv2020 = Ajv2020.default || Ajv2020;
  addFormats = addFormats.default || addFormats;
  // strict: a keyword ajv does not know in the doc is an error, not ignored.
  ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  ajv.addVocabulary(['example', 'discriminator', 'xml', 'externalDocs']); // OpenAPI 3.1 annotations
  addFormats(ajv);
  ajv.addSchema({ $id: DEFS_ID, $defs: toAjv(doc.components.schemas) });
  // Compile every schema now, so a doc that ajv cannot read fails here, once.
  const schemas = [];
  for (const [key, op] of OPS) {
    for (const p of [...(op.pathParams || []), ...(op.parameters || [])]) schemas.push([`${key} parameter`, resolve(p).schema]);
    const rb = op.requestBody && resolve(op.requestBody);
    if (rb && rb.content && rb.content['application/json']) schemas.push([`${key} request body`, rb.content['application/json'].schema]);
    for (const [status, r] of Object.entries(op.responses || {})) {
      const resp = resolve(r);
      for (const [name, h] of Object.entries(resp.headers || {})) schemas.push([`${key} ${status} header ${name}`, resolve(h).schema]);
      if (resp.content && resp.content['application/json']) schemas.push([`${key} ${status} body`, resp.content['application/json'].schema]);
    }
  }
  let good = true;
  for (const [where, schema] of schemas) {
    if (!schema) continue;
    try {
      compiled(schema);
    } catch (e) {
      good = false;
      fail(`schema: ${where} does not compile: ${e.message}`);
    }
  }
  if (!good) throw new Error('the doc has schemas ajv (draft 2020-12, strict) refuses; nothing was sent');
  ok(`schemas: all ${schemas.length} parameter, body and header schemas of the doc compile (draft 2020-12, strict)`);
}

function compiled(schema) {
  const key = JSON.stringify(schema);
  if (!validators.has(key)) validators.set(key, ajv.compile(toAjv(schema)));
  return validators.get(key);
}

// toAjv: a copy of an OpenAPI schema whose component refs point into DEFS_ID.
function toAjv(schema) {
  return JSON.parse(JSON.stringify(schema), (k, v) => {
    if (k !== '$ref') return v;
    if (!v.startsWith('#/components/schemas/')) fatal(`schema $ref ${v} is not a component schema`);
    return `${DEFS_ID}#/$defs/${v.slice('#/components/schemas/'.length)}`;
  });
}

// validate: [] or the schema's complaints about value.
function validate(schema, value) {
  const v = compiled(schema);
  if (v(value)) return [];
  return v.errors.map((e) => `${e.instancePath || '(root)'} ${e.message}${e.params ? ' ' + JSON.stringify(e.params) : ''}`);
}

// A header's text as its schema's type (Retry-After is an integer).
function headerValue(schema, text) {
  const t = schema && resolve(schema).type;
  return (t === 'integer' || t === 'number') && /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text;
}

// ---- one exchange -----------------------------------------------------------------

// The request as the doc would see it: [] or what the doc refuses.
function requestProblems(c, op, headers) {
  const problems = [];
  for (const pRef of [...(op.pathParams || []), ...(op.parameters || [])]) {
    const p = resolve(pRef);
    let value;
    if (p.in === 'path') value = c.params[p.name];
    else if (p.in === 'header')
      value = Object.entries(headers).find(([k]) => k.toLowerCase() === p.name.toLowerCase())?.[1];
    else continue;
    if (value === undefined) {
      if (p.required) problems.push(`doc: required ${p.in} parameter ${p.name} missing`);
      continue;
    }
    for (const e of validate(p.schema, value)) problems.push(`doc refuses ${p.in} parameter ${p.name}: ${e}`);
  }
  if (op.requestBody) {
    const rb = resolve(op.requestBody);
    const schema = rb.content && rb.content['application/json'] && rb.content['application/json'].schema;
    if (c.json === undefined) {
      if (rb.required) problems.push('doc: the request body is required');
    } else if (schema) {
      for (const e of validate(schema, c.json)) problems.push(`doc refuses the request body: ${e}`);
    }
  }
  return problems;
}

// The response against the doc: [] or every way it breaks it.
function responseProblems(opKey, res, text, json) {
  const op = OPS.get(opKey);
  const problems = [];
  const rid = res.headers.get('x-request-id');
  if (!rid) problems.push('no X-Request-Id header');
  const documented = op.responses[String(res.status)];
  if (!documented) {
    problems.push(`status ${res.status} is not documented for ${opKey} (documented: ${Object.keys(op.responses).join(', ')})`);
    return problems;
  }
  const resp = resolve(documented);
  for (const [name, hRef] of Object.entries(resp.headers || {})) {
    const h = resolve(hRef);
    const value = res.headers.get(name);
    if (value === null) {
      if (h.required) problems.push(`documented header ${name} missing`);
      continue;
    }
    if (h.schema) for (const e of validate(h.schema, headerValue(h.schema, value))) problems.push(`header ${name}: ${e}`);
  }
  const media = resp.content && resp.content['application/json'];
  if (!media) return problems;
  const ctype = res.headers.get('content-type') || '';
  if (!/^application\/json\b/.test(ctype)) problems.push(`Content-Type is "${ctype}", not application/json`);
  if (json === undefined) {
    problems.push('body is not JSON');
    return problems;
  }
  if (media.schema) for (const e of validate(media.schema, json)) problems.push(`body vs schema: ${e}`);
  if (res.status >= 400 && json && json.error) {
    const codes = errorCodes(opKey, String(res.status));
    if (!codes.includes(json.error.code))
      problems.push(`error code "${json.error.code}" is not listed for ${opKey} ${res.status} (listed: ${codes.join(', ') || 'none'})`);
    if (res.status === 503 && json.error.retryable !== true) problems.push('503 must be retryable: true');
    if (res.status !== 429 && 'retry_after_seconds' in json.error) problems.push('retry_after_seconds on a status other than 429');
    if (res.status === 429 && res.headers.get('retry-after') !== String(json.error.retry_after_seconds))
      problems.push(`Retry-After "${res.headers.get('retry-after')}" != retry_after_seconds ${json.error.retry_after_seconds}`);
  }
  return problems;
}

/*
 * call: one request, checked. c = {
 *   server, op: "POST /v1/queue/{ticket_id}/heartbeat", params: {ticket_id},
 *   query: {name: value} (appended as ?name=value&...),
 *   as: {token, who} (bearer) | undefined, headers, json | raw (body),
 *   expect: [status, code] (code omitted for success), why: what it shows }.
 * Returns {status, json, headers} (status 0 when the request failed).
 */
async function call(c) {
  if (!OPS.has(c.op)) fatal(`test bug: ${c.op} is not a documented operation`);
  const [method, template] = c.op.split(' ');
  c.params = c.params || {};
  const url =
    c.server.url +
    template.replace(/\{(\w+)\}/g, (_, k) => {
      if (!(k in c.params)) fatal(`test bug: ${c.op} needs params.${k}`);
      return encodeURIComponent(c.params[k]);
    }) +
    (c.query ? `?${new URLSearchParams(c.query)}` : '');
  const headers = { ...(c.headers || {}) };
  if (c.as) headers.Authorization = c.dupAuth ? [`Bearer ${c.as.token}`, `Bearer ${c.as.token}`] : `Bearer ${c.as.token}`;
  let body;
  if (c.raw !== undefined) body = c.raw;
  else if (c.json !== undefined) body = JSON.stringify(c.json);
  if (body !== undefined) headers['Content-Type'] = c.contentType !== undefined ? c.contentType : 'application/json';
  // fetch refuses a GET body and joins repeated headers: node's http sends them as given.
  const viaHttp = c.dupAuth || (body !== undefined && (method === 'GET' || method === 'HEAD'));

  const [wantStatus, wantCode] = c.expect;
  const label = `${c.op} ${wantStatus}${wantCode ? ' ' + wantCode : ''} [${c.server.name}] ${c.why}`;
  const request = [
    `request: ${method} ${url}`,
    `  headers: ${JSON.stringify({ ...headers, ...(c.as ? { Authorization: `Bearer <${c.as.who}>` } : {}) })}`,
    ...(body !== undefined ? [`  body: ${clip(body, 300)}`] : []),
  ];

  let res, text;
  try {
    if (viaHttp) ({ res, text } = await httpRequest(url, method, headers, body));
    else {
      res = await fetch(url, { method, headers, body, signal: AbortSignal.timeout(15000) });
      text = await res.text();
    }
  } catch (e) {
    fail(label, [...request, `no answer: ${e.cause ? e.cause.message || e.cause.code : e.message}`]);
    return { status: 0, json: undefined, headers: new Headers() };
  }
  let json;
  try {
    json = text.length ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }

  const problems = responseProblems(c.op, res, text, json);
  const gotCode = json && json.error ? json.error.code : undefined;
  // quiet: a probe in a loop (rate limits): only the awaited status is reported.
  if (c.quiet && res.status !== wantStatus) return { status: res.status, json, headers: res.headers };
  if (res.status !== wantStatus || (wantCode && gotCode !== wantCode) || (!wantCode && res.status >= 400))
    problems.unshift(`expected ${wantStatus}${wantCode ? ' ' + wantCode : ''}, got ${res.status}${gotCode ? ' ' + gotCode : ''}`);
  if (wantStatus < 300) problems.push(...requestProblems(c, OPS.get(c.op), headers));
  if (c.check && res.status === wantStatus) {
    const why = c.check(json, res);
    if (why) problems.push(why);
  }

  if (OPS.get(c.op).responses[String(res.status)])
    exercised.add(`${c.op} ${res.status}${res.status >= 400 && gotCode ? ' ' + gotCode : ''}`);
  if (problems.length === 0) ok(label);
  else
    fail(label, [
      ...request,
      `response: ${res.status} X-Request-Id=${res.headers.get('x-request-id')} Content-Type=${res.headers.get('content-type')}` +
        (res.headers.get('retry-after') ? ` Retry-After=${res.headers.get('retry-after')}` : ''),
      `  body: ${clip(text)}`,
      ...problems.map((p) => `problem: ${p}`),
    ]);
  return { status: res.status, json, headers: res.headers };
}

// httpRequest: one request through node's http module (repeated headers kept),
// answered as {res: {status, headers: Headers}, text}.
function httpRequest(url, method, headers, body) {
  return new Promise((resolve, reject) => {
    // node frames a GET body only when told its length.
    if (body !== undefined) headers = { ...headers, 'Content-Length': Buffer.byteLength(body) };
    const req = http.request(url, { method, headers, timeout: 15000, agent: false }, (r) => {
      const chunks = [];
      r.on('data', (d) => chunks.push(d));
      r.on('end', () => {
        const h = new Headers();
        for (const [k, v] of Object.entries(r.headers)) h.set(k, Array.isArray(v) ? v.join(', ') : v);
        resolve({ res: { status: r.statusCode, headers: h }, text: Buffer.concat(chunks).toString('utf8') });
      });
      r.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

// ---- fixtures -----------------------------------------------------------------------

// sql: runs statements on the first server's database; :'p1'.. are params.
function sql(text, ...params) {
  const args = ['-qAtX', '-v', 'ON_ERROR_STOP=1', '-d', need('CC_CONTRACT_PG_DSN')];
  params.forEach((p, i) => args.push('-v', `p${i + 1}=${p}`));
  return execFileSync(cfg.psql, args, { input: text, encoding: 'utf8' }).trim();
}

function hexTicket(prefix = '') {
  return prefix + crypto.randomBytes(12).toString('hex');
}

const FUTURE = () => new Date(Date.now() + 86400e3).toISOString();
const NO_SUCH_ID = () => crypto.randomUUID();
const ENQUEUE = { playlist: 'ranked', protocol_version: cfg.minProtocol, build: '1.4.2' };
const FORGED = { token: 'forged-token-of-nobody', who: 'forged token' };
const NO_AUTH = undefined;
const OVERSIZED = JSON.stringify({ pad: 'x'.repeat(MAX_BODY + 1024) });

function scenario(name, fn) {
  return fn().catch((e) => fail(`scenario "${name}" stopped: ${e.message}`, [e.stack]));
}

// needOk: the value a later step depends on, or stop the scenario.
function needOk(r, what) {
  if (!r || r.status < 200 || r.status >= 300 || r.json === undefined) throw new Error(`${what} failed (status ${r && r.status})`);
  return r.json;
}

async function login(S, ticket, who) {
  const r = await call({ server: S, op: 'POST /v1/session/steam', json: { ticket }, expect: [200], why: `log in ${who}` });
  const s = needOk(r, `log in ${who}`);
  return { token: s.session_token, id: s.player_id, ticket, who };
}

async function probe(S, p, region) {
  const ch = needOk(
    await call({ server: S, op: 'POST /v1/probes/{region}/challenge', params: { region }, as: p, expect: [201], why: `challenge ${region}`,
      check: (j) => answerUrlProblem(S, region, j.answer_url) }),
    'challenge',
  );
  // Answered where the challenge says (issue 20 item 10): answer_url resolved against the challenge's URL.
  return call({
    server: answerServer(S, region, ch.answer_url), op: 'POST /v1/probes/{region}/answer', params: { region }, as: p, json: { nonce: ch.nonce },
    expect: [200], why: `answer ${region} at its answer_url ${ch.answer_url}`,
    check: (j) => (j.region === region ? null : `answered region ${j.region}, not ${region}`),
  });
}

// One request per player route, used for the auth, ban and outage cases;
// id names the ticket and the proposal.
function playerRoutes(id) {
  const region = cfg.regions[0];
  return [
    { op: 'POST /v1/queue', headers: { 'Idempotency-Key': `k-${crypto.randomUUID()}` }, json: ENQUEUE },
    { op: 'GET /v1/queue/{ticket_id}', params: { ticket_id: id } },
    { op: 'POST /v1/queue/{ticket_id}/heartbeat', params: { ticket_id: id }, json: { revision: 1 } },
    { op: 'POST /v1/queue/{ticket_id}/cancel', params: { ticket_id: id }, json: { revision: 1 } },
    { op: 'POST /v1/probes/{region}/challenge', params: { region } },
    { op: 'POST /v1/probes/{region}/answer', params: { region }, json: { nonce: 'n-unknown' } },
    ...proposalRoutes(id),
    { op: 'GET /v1/profile/ranked' },
    { op: 'GET /v1/matches/{match_id}/assignment', params: { match_id: id } },
    { op: 'GET /v1/matches/{match_id}', params: { match_id: id } },
    { op: 'GET /v1/backfill-offers/{offer_id}', params: { offer_id: id } },
    { op: 'POST /v1/backfill-offers/{offer_id}/response', params: { offer_id: id }, json: { response: 'accept' } },
    ...partyRoutes(id),
  ];
}

// The party routes (issue 26), with bodies a handler could take; id names the party.
function partyRoutes(id) {
  const client = { protocol_version: cfg.minProtocol, build: '1.4.2' };
  const pid = { party_id: id };
  return [
    { op: 'POST /v1/parties', headers: { 'Idempotency-Key': `k-${crypto.randomUUID()}` }, json: client },
    { op: 'POST /v1/parties/join', json: { join_code: 'ABCDEF23', ...client } },
    { op: 'GET /v1/parties/{party_id}', params: pid },
    { op: 'POST /v1/parties/{party_id}/invite', params: pid, json: { player_id: id, revision: 1 } },
    { op: 'POST /v1/parties/{party_id}/leave', params: pid, json: { revision: 1 } },
    { op: 'POST /v1/parties/{party_id}/kick', params: pid, json: { player_id: id, revision: 1 } },
    { op: 'POST /v1/parties/{party_id}/promote', params: pid, json: { player_id: id, revision: 1 } },
    { op: 'POST /v1/parties/{party_id}/disband', params: pid, json: { revision: 1 } },
    { op: 'POST /v1/parties/{party_id}/queue', params: pid, headers: { 'Idempotency-Key': `k-${crypto.randomUUID()}` }, json: { playlist: 'casual', revision: 1 } },
  ];
}

function proposalRoutes(proposalId) {
  return [
    { op: 'GET /v1/proposals/{proposal_id}', params: { proposal_id: proposalId } },
    { op: 'POST /v1/proposals/{proposal_id}/response', params: { proposal_id: proposalId }, json: { response: 'accept', revision: 1 } },
  ];
}

function adminRoutes(playerId) {
  return [
    { op: 'POST /v1/admin/players/{player_id}/ban', params: { player_id: playerId }, json: { until: FUTURE(), reason: 'contract test' } },
    { op: 'POST /v1/admin/players/{player_id}/unban', params: { player_id: playerId } },
    { op: 'GET /v1/admin/players/{player_id}', params: { player_id: playerId } },
    { op: 'GET /v1/admin/queue/stats' },
    { op: 'GET /v1/admin/outbox/dead-letters' },
    { op: 'POST /v1/admin/outbox/dead-letters/{outbox_id}/replay', params: { outbox_id: 1 }, json: { replays: 0 } },
    // The operator console's reads (issue 27).
    { op: 'GET /v1/admin/overview' },
    { op: 'GET /v1/admin/matches', query: { q: 'a' } },
    { op: 'GET /v1/admin/matches/{match_id}', params: { match_id: NO_SUCH_ID() } },
    { op: 'GET /v1/admin/players', query: { q: playerId } },
    { op: 'GET /v1/admin/players/{player_id}/history', params: { player_id: playerId } },
    { op: 'GET /v1/admin/servers' },
  ];
}

// ---- scenarios on the healthy cc-testkit-api ------------------------------------------

async function sessionCases(S) {
  const op = 'POST /v1/session/steam';
  const t = hexTicket();
  const a = await login(S, t, 'a new player');
  const b = await login(S, t, 'the same ticket again');
  if (a.id === b.id) ok(`${op}: a returning account keeps its player id`);
  else fail(`${op}: the same ticket logged in as ${a.id} then ${b.id}`);
  await call({ server: S, op, raw: '{"ticket":', expect: [400, 'invalid_json'], why: 'truncated JSON' });
  await call({ server: S, op, json: { ticket: 42 }, expect: [400, 'invalid_request'], why: 'ticket is a number' });
  await call({ server: S, op, json: {}, expect: [400, 'invalid_request'], why: 'no ticket' });
  await call({ server: S, op, json: { ticket: hexTicket(), remember: true }, expect: [400, 'invalid_request'], why: 'unknown field' });
  await call({ server: S, op, raw: OVERSIZED, expect: [413, 'body_too_large'], why: 'body over 64 KiB' });
}

async function probeCases(S, p, other) {
  const [r0, r1] = cfg.regions;
  const ch = 'POST /v1/probes/{region}/challenge';
  const an = 'POST /v1/probes/{region}/answer';
  const issue = async (region, who = p) =>
    needOk(await call({ server: S, op: ch, params: { region }, as: who, expect: [201], why: `challenge ${region}`,
      check: (j) => (j.region === region ? answerUrlProblem(S, region, j.answer_url) : `challenge for ${j.region}, not ${region}`) }), 'challenge');

  const first = await issue(r0);
  await call({ server: S, op: an, params: { region: r0 }, as: p, json: { nonce: first.nonce }, expect: [200], why: 'answer in time',
    check: (j) => (j.rtt_ms >= 0 && j.region === r0 ? null : `unexpected result ${JSON.stringify(j)}`) });
  await call({ server: S, op: an, params: { region: r0 }, as: p, json: { nonce: first.nonce }, expect: [409, 'nonce_already_used'], why: 'answer twice' });
  await call({ server: S, op: an, params: { region: r0 }, as: p, json: { nonce: 'p1.never-issued' }, expect: [404, 'unknown_nonce'], why: 'nonce never issued' });
  const second = await issue(r0);
  await call({ server: S, op: an, params: { region: r1 }, as: p, json: { nonce: second.nonce }, expect: [404, 'unknown_nonce'], why: 'nonce of another region' });
  await call({ server: S, op: an, params: { region: r0 }, as: other, json: { nonce: second.nonce }, expect: [404, 'unknown_nonce'], why: "another player's nonce" });
  // Expire it on the database clock instead of sleeping past --probe-ttl-seconds.
  sql("UPDATE probe_challenges SET issued_at = now() - interval '2 minutes', expires_at = now() - interval '1 minute' " +
      "WHERE player_id = :'p1' AND answered_at IS NULL", p.id);
  await call({ server: S, op: an, params: { region: r0 }, as: p, json: { nonce: second.nonce }, expect: [422, 'nonce_expired'], why: 'answer after expiry' });
  await call({ server: S, op: ch, params: { region: 'mars' }, as: p, expect: [422, 'unknown_region'], why: 'region not configured' });
  await call({ server: S, op: an, params: { region: 'mars' }, as: p, json: { nonce: 'x' }, expect: [422, 'unknown_region'], why: 'region not configured' });
  await call({ server: S, op: an, params: { region: r0 }, as: p, raw: 'nonce=1', expect: [400, 'invalid_json'], why: 'form body' });
  await call({ server: S, op: an, params: { region: r0 }, as: p, json: { nonce: 7 }, expect: [400, 'invalid_request'], why: 'nonce is a number' });
  await call({ server: S, op: an, params: { region: r0 }, as: p, json: { nonce: '' }, expect: [400, 'invalid_request'], why: 'empty nonce' });
  await call({ server: S, op: an, params: { region: r0 }, as: p, json: { nonce: 'x', rtt_ms: 1 }, expect: [400, 'invalid_request'], why: 'client-reported rtt field' });
  await call({ server: S, op: an, params: { region: r0 }, as: p, raw: OVERSIZED, expect: [413, 'body_too_large'], why: 'body over 64 KiB' });
}

async function queueCases(S, p, other) {
  const q = 'POST /v1/queue';
  const get = 'GET /v1/queue/{ticket_id}';
  const hb = 'POST /v1/queue/{ticket_id}/heartbeat';
  const cancel = 'POST /v1/queue/{ticket_id}/cancel';
  const key = (k) => ({ 'Idempotency-Key': k });
  const ticketCheck = (want) => (j) => {
    for (const [k, v] of Object.entries(want)) if (j[k] !== v) return `ticket ${k} is ${JSON.stringify(j[k])}, expected ${JSON.stringify(v)}`;
    return null;
  };

  await call({ server: S, op: q, as: p, json: ENQUEUE, expect: [400, 'invalid_request'], why: 'no Idempotency-Key' });
  await call({ server: S, op: q, as: p, headers: key('has space'), json: ENQUEUE, expect: [400, 'invalid_request'], why: 'malformed Idempotency-Key' });
  await call({ server: S, op: q, as: p, headers: key('k-bad-json'), raw: '{"playlist":"ranked",', expect: [400, 'invalid_json'], why: 'truncated JSON' });
  await call({ server: S, op: q, as: p, headers: key('k-types'), json: { ...ENQUEUE, protocol_version: String(cfg.minProtocol) }, expect: [400, 'invalid_request'], why: 'protocol_version is a string' });
  await call({ server: S, op: q, as: p, headers: key('k-unknown'), json: { ...ENQUEUE, rating: 3000 }, expect: [400, 'invalid_request'], why: 'client-sent rating (unknown field)' });
  await call({ server: S, op: q, as: p, headers: key('k-build'), json: { ...ENQUEUE, build: 'has space' }, expect: [400, 'invalid_request'], why: 'build outside [A-Za-z0-9._-]' });
  await call({ server: S, op: q, as: p, headers: key('k-missing'), json: { playlist: 'ranked', build: '1.4.2' }, expect: [400, 'invalid_request'], why: 'no protocol_version' });
  await call({ server: S, op: q, as: p, headers: key('k-playlist'), json: { ...ENQUEUE, playlist: 'arcade' }, expect: [422, 'unknown_playlist'], why: 'playlist arcade' });
  await call({ server: S, op: q, as: p, headers: key('k-old'), json: { ...ENQUEUE, protocol_version: cfg.minProtocol - 1 }, expect: [426, 'client_outdated'], why: 'protocol below --min-protocol-version' });
  await call({ server: S, op: q, as: p, headers: key('k-big'), raw: OVERSIZED, expect: [413, 'body_too_large'], why: 'body over 64 KiB' });
  await call({ server: S, op: q, as: other, headers: key('k-unprobed'), json: ENQUEUE, expect: [422, 'no_region_probed'], why: 'player never probed' });

  const created = await call({ server: S, op: q, as: p, headers: key('k-one'), json: ENQUEUE, expect: [201], why: 'enqueue',
    check: ticketCheck({ state: 'QUEUED', revision: 1, player_id: p.id, playlist: 'ranked', proposal_id: null, match_id: null }) });
  const t = needOk(created, 'enqueue');
  await call({ server: S, op: q, as: p, headers: key('k-one'), json: ENQUEUE, expect: [201], why: 'identical replay',
    check: (j) => (isDeepStrictEqual(j, t) ? null : `replay differs from the original: ${JSON.stringify(j)}`) });
  await call({ server: S, op: q, as: p, headers: key('k-one'), json: { ...ENQUEUE, playlist: 'casual' }, expect: [409, 'idempotency_conflict'], why: 'same key, other body' });
  await call({ server: S, op: q, as: p, headers: key('k-two'), json: ENQUEUE, expect: [409, 'active_ticket_exists'], why: 'second active ticket' });

  await call({ server: S, op: 'GET /v1/admin/queue/stats', as: OPERATOR, expect: [200], why: 'stats with a queued ticket',
    check: (j) => {
      const e = j.entries.find((x) => x.playlist === 'ranked' && x.region === cfg.regions[0]);
      if (j.entries.length !== 2 * cfg.regions.length) return `${j.entries.length} entries, expected playlists x regions = ${2 * cfg.regions.length}`;
      return e && e.depth >= 1 ? null : `no ranked/${cfg.regions[0]} entry with depth >= 1`;
    } });
  await call({ server: S, op: 'GET /v1/admin/players/{player_id}', params: { player_id: p.id }, as: OPERATOR, expect: [200], why: 'player with an active ticket',
    check: (j) => (j.active_ticket && j.active_ticket.id === t.id ? null : 'active_ticket is not the queued ticket') });

  await call({ server: S, op: get, params: { ticket_id: t.id }, as: p, expect: [200], why: 'read own ticket', check: ticketCheck({ id: t.id, revision: 1 }) });
  await call({ server: S, op: get, params: { ticket_id: 'not-a-uuid' }, as: p, expect: [400, 'invalid_request'], why: 'ticket_id not a UUID' });
  await call({ server: S, op: get, params: { ticket_id: t.id.toUpperCase() }, as: p, expect: [400, 'invalid_request'], why: 'ticket_id in upper case' });
  await call({ server: S, op: get, params: { ticket_id: NO_SUCH_ID() }, as: p, expect: [404, 'not_found'], why: 'no such ticket' });
  await call({ server: S, op: get, params: { ticket_id: t.id }, as: other, expect: [404, 'not_found'], why: "another player's ticket" });

  const tid = { ticket_id: t.id };
  await call({ server: S, op: hb, params: tid, as: p, json: { revision: 1 }, expect: [200], why: 'heartbeat at revision 1', check: ticketCheck({ revision: 2, state: 'QUEUED' }) });
  await call({ server: S, op: hb, params: tid, as: p, json: { revision: 1 }, expect: [409, 'revision_conflict'], why: 'stale revision' });
  await call({ server: S, op: hb, params: tid, as: p, raw: '{revision:2}', expect: [400, 'invalid_json'], why: 'not JSON' });
  await call({ server: S, op: hb, params: tid, as: p, json: [{ revision: 2 }], expect: [400, 'invalid_request'], why: 'a JSON array: valid JSON, not an object' });
  await call({ server: S, op: hb, params: tid, as: p, json: { revision: '2' }, expect: [400, 'invalid_request'], why: 'revision is a string' });
  await call({ server: S, op: hb, params: tid, as: p, json: { revision: 0 }, expect: [400, 'invalid_request'], why: 'revision 0' });
  await call({ server: S, op: hb, params: tid, as: p, json: {}, expect: [400, 'invalid_request'], why: 'no revision' });
  await call({ server: S, op: hb, params: { ticket_id: '123' }, as: p, json: { revision: 2 }, expect: [400, 'invalid_request'], why: 'ticket_id not a UUID' });
  await call({ server: S, op: hb, params: { ticket_id: NO_SUCH_ID() }, as: p, json: { revision: 2 }, expect: [404, 'not_found'], why: 'no such ticket' });
  await call({ server: S, op: hb, params: tid, as: other, json: { revision: 2 }, expect: [404, 'not_found'], why: "another player's ticket" });
  await call({ server: S, op: hb, params: tid, as: p, raw: OVERSIZED, expect: [413, 'body_too_large'], why: 'body over 64 KiB' });

  // A probe answered while the ticket waits updates its predicted_rtt, not its revision.
  await probe(S, p, cfg.regions[1]);
  await call({ server: S, op: get, params: tid, as: p, expect: [200], why: 'ticket after a new probe',
    check: (j) => (j.revision === 2 && cfg.regions[1] in j.predicted_rtt ? null : `predicted_rtt ${JSON.stringify(j.predicted_rtt)} at revision ${j.revision}`) });

  await call({ server: S, op: cancel, params: tid, as: p, json: { revision: 1 }, expect: [409, 'revision_conflict'], why: 'stale revision' });
  await call({ server: S, op: cancel, params: tid, as: p, raw: '', expect: [400, 'invalid_json'], why: 'empty body' });
  await call({ server: S, op: cancel, params: tid, as: p, json: { revision: 2.5 }, expect: [400, 'invalid_request'], why: 'revision 2.5' });
  await call({ server: S, op: cancel, params: { ticket_id: 'x' }, as: p, json: { revision: 2 }, expect: [400, 'invalid_request'], why: 'ticket_id not a UUID' });
  await call({ server: S, op: cancel, params: { ticket_id: NO_SUCH_ID() }, as: p, json: { revision: 2 }, expect: [404, 'not_found'], why: 'no such ticket' });
  await call({ server: S, op: cancel, params: tid, as: p, raw: OVERSIZED, expect: [413, 'body_too_large'], why: 'body over 64 KiB' });
  await call({ server: S, op: cancel, params: tid, as: p, json: { revision: 2 }, expect: [200], why: 'cancel at revision 2', check: ticketCheck({ state: 'CANCELLED', revision: 3 }) });
  await call({ server: S, op: cancel, params: tid, as: p, json: { revision: 3 }, expect: [409, 'ticket_closed'], why: 'cancel a cancelled ticket' });
  await call({ server: S, op: hb, params: tid, as: p, json: { revision: 3 }, expect: [409, 'ticket_closed'], why: 'heartbeat a cancelled ticket' });
  await call({ server: S, op: q, as: p, headers: key('k-one'), json: ENQUEUE, expect: [201], why: 'replay after cancel returns the original answer',
    check: (j) => (isDeepStrictEqual(sansEstimate(j), sansEstimate(t)) ? null : 'replay differs from the original') });
  await call({ server: S, op: q, as: p, headers: key('k-three'), json: { ...ENQUEUE, playlist: 'casual' }, expect: [201], why: 'enqueue again once the first is closed',
    check: ticketCheck({ playlist: 'casual', state: 'QUEUED' }) });
}

// A replayed enqueue answers the stored ticket with a fresh estimated wait (openapi: POST /v1/queue 201).
function sansEstimate(j) {
  const { estimated_wait_seconds, estimated_wait_method, ...rest } = j || {};
  return rest;
}

async function cooldownCases(S, p) {
  sql("INSERT INTO penalties (player_id, kind, source_id, cooldown_until) " +
      "VALUES (:'p1', 'DECLINE', gen_random_uuid(), now() + interval '1 minute')", p.id);
  await call({ server: S, op: 'POST /v1/queue', as: p, headers: { 'Idempotency-Key': 'k-cooldown' }, json: ENQUEUE,
    expect: [429, 'cooldown'], why: 'DECLINE penalty running',
    check: (j) => (j.error.retry_after_seconds >= 1 && j.error.retry_after_seconds <= 60 ? null : `retry_after_seconds ${j.error.retry_after_seconds}, expected 1..60`) });
}

async function profileCases(S, p) {
  const op = 'GET /v1/profile/ranked';
  await call({ server: S, op, as: p, expect: [404, 'no_rating'], why: 'never rated' });
  sql("INSERT INTO ratings (player_id, playlist, rating, deviation, games) VALUES (:'p1', 'ranked', 1612.4, 84.2, 37)", p.id);
  await call({ server: S, op, as: p, expect: [200], why: 'rated 37 games',
    check: (j) => (j.rating === 1612.4 && j.ranked_games === 37 && !j.provisional && j.tier !== 'PROVISIONAL' ? null : `unexpected profile ${JSON.stringify(j)}`) });
  await call({ server: S, op: 'GET /v1/admin/players/{player_id}', params: { player_id: p.id }, as: OPERATOR, expect: [200], why: 'player with a rating',
    check: (j) => (j.rating && j.rating.rating === 1612.4 ? null : `rating ${JSON.stringify(j.rating)}`) });
}

// queuedPlayer: a new player with a probe and a QUEUED ranked ticket.
async function queuedPlayer(S, who) {
  const p = await login(S, hexTicket(), who);
  await probe(S, p, cfg.regions[0]);
  const t = needOk(
    await call({ server: S, op: 'POST /v1/queue', as: p, headers: { 'Idempotency-Key': `k-${crypto.randomUUID()}` }, json: ENQUEUE,
      expect: [201], why: `enqueue ${who}` }),
    `enqueue ${who}`,
  );
  p.ticketId = t.id;
  return p;
}

// seedProposal: cc-matcher is not part of this tree, so write what its claim
// writes (migrations/0005): an OPEN ranked 1v1 proposal over the players'
// QUEUED tickets (teams 0, 1 in order), each ticket PROPOSED in it at its
// next revision. window: the response window as a PostgreSQL interval from
// now(); a negative one makes the proposal overdue. Returns the proposal id.
function seedProposal(players, window = '10 minutes') {
  const out = sql(
    `BEGIN;
     INSERT INTO proposals (playlist, state, region, arena, build, protocol_version, team_size, matcher, expires_at)
       VALUES (:'p1', 'OPEN', :'p2', 'aurora_ring', :'p3', :'p4'::int, 1, 'contract-test', now() + :'p5'::interval)
       RETURNING id AS proposal_id \\gset
     INSERT INTO proposal_participants (proposal_id, ticket_id, player_id, team)
       SELECT :'proposal_id', t.id, t.player_id, (u.n - 1) % 2
       FROM unnest(:'p6'::uuid[]) WITH ORDINALITY AS u(ticket_id, n) JOIN tickets t ON t.id = u.ticket_id;
     UPDATE tickets SET state = 'PROPOSED', proposal_id = :'proposal_id', revision = revision + 1, updated_at = now()
       WHERE id = ANY(:'p6'::uuid[]) AND state = 'QUEUED';
     -- The claim's announcements too, so the seed passes tests/integration/audit.sql.
     INSERT INTO outbox (event, resource_type, resource_id, revision, player_ids)
       SELECT 'proposal.opened', 'proposal', :'proposal_id', 1, array_agg(player_id)
       FROM proposal_participants WHERE proposal_id = :'proposal_id';
     INSERT INTO outbox (event, resource_type, resource_id, revision, player_ids, payload)
       SELECT 'ticket.proposed', 'ticket', t.id, t.revision, ARRAY[t.player_id],
              jsonb_build_object('proposal_id', :'proposal_id')
       FROM tickets t WHERE t.proposal_id = :'proposal_id' AND t.state = 'PROPOSED';
     SELECT (SELECT count(*) FROM tickets WHERE proposal_id = :'proposal_id' AND state = 'PROPOSED') AS proposed,
       (SELECT count(*) FROM proposal_participants WHERE proposal_id = :'proposal_id') AS joined \\gset
     SELECT :proposed = :'p7' AND :joined = :'p7' AS whole \\gset
     \\if :whole
       COMMIT;
     \\else
       ROLLBACK;
     \\endif
     SELECT :'proposal_id', :proposed, :joined;`,
    ENQUEUE.playlist, cfg.regions[0], ENQUEUE.build, ENQUEUE.protocol_version, window,
    `{${players.map((p) => p.ticketId).join(',')}}`, players.length,
  );
  const [id, proposed, joined] = out.split('|');
  if (Number(proposed) !== players.length || Number(joined) !== players.length)
    throw new Error(`seeding a proposal for ${players.map((p) => p.who).join(', ')} (rolled back): ${proposed} tickets PROPOSED, ` +
      `${joined} participants, expected ${players.length} (were the tickets QUEUED?)`);
  return id;
}

// proposalIs: a check that the view has these fields and, per player, these responses.
function proposalIs(want, responses = []) {
  return (j) => {
    for (const [k, v] of Object.entries(want)) {
      if (v === 'uuid' ? !/^[0-9a-f-]{36}$/.test(j[k]) : j[k] !== v)
        return `proposal ${k} is ${JSON.stringify(j[k])}, expected ${v === 'uuid' ? 'a UUID' : JSON.stringify(v)}`;
    }
    for (const [p, r] of responses) {
      const me = j.participants.find((x) => x.player_id === p.id);
      if (!me) return `${p.who} is not among the participants`;
      if (me.response !== r) return `${p.who}'s response is ${JSON.stringify(me.response)}, expected ${JSON.stringify(r)}`;
    }
    return null;
  };
}

async function proposalCases(S) {
  const get = 'GET /v1/proposals/{proposal_id}';
  const respond = 'POST /v1/proposals/{proposal_id}/response';
  const ticket = 'GET /v1/queue/{ticket_id}';
  const ticketIs = (want) => (j) => {
    for (const [k, v] of Object.entries(want)) if (j[k] !== v) return `ticket ${k} is ${JSON.stringify(j[k])}, expected ${JSON.stringify(v)}`;
    return null;
  };
  const accept = (revision) => ({ response: 'accept', revision });
  const decline = (revision) => ({ response: 'decline', revision });

  // Everyone accepts: the last accept makes the match.
  const a = await queuedPlayer(S, 'proposal player A');
  const b = await queuedPlayer(S, 'proposal player B');
  const c = await queuedPlayer(S, 'proposal player C');
  const d = await queuedPlayer(S, 'proposal player D');
  const p1 = seedProposal([a, b]);
  const id1 = { proposal_id: p1 };
  await call({ server: S, op: ticket, params: { ticket_id: a.ticketId }, as: a, expect: [200], why: 'a PROPOSED ticket names its proposal',
    check: ticketIs({ state: 'PROPOSED', proposal_id: p1, revision: 2 }) });
  await call({ server: S, op: get, params: id1, as: a, expect: [200], why: 'read an open proposal',
    check: (j) => proposalIs({ id: p1, state: 'OPEN', revision: 1, match_id: null, arena: 'aurora_ring', region: cfg.regions[0], team_size: 1 },
      [[a, null], [b, null]])(j) || (j.participants.length === 2 ? null : `${j.participants.length} participants, expected 2`) });
  await call({ server: S, op: get, params: { proposal_id: 'not-a-uuid' }, as: a, expect: [400, 'invalid_request'], why: 'proposal_id not a UUID' });
  await call({ server: S, op: get, params: { proposal_id: p1.toUpperCase() }, as: a, expect: [400, 'invalid_request'], why: 'proposal_id in upper case' });
  await call({ server: S, op: get, params: id1, as: c, expect: [404, 'not_found'], why: 'a player not in the proposal' });
  await call({ server: S, op: get, params: { proposal_id: NO_SUCH_ID() }, as: a, expect: [404, 'not_found'], why: 'no such proposal' });

  await call({ server: S, op: respond, params: id1, as: a, raw: '{"response":', expect: [400, 'invalid_json'], why: 'truncated JSON' });
  await call({ server: S, op: respond, params: id1, as: a, json: [accept(1)], expect: [400, 'invalid_request'], why: 'an array (valid JSON, not an object)' });
  await call({ server: S, op: respond, params: id1, as: a, json: { response: 'maybe', revision: 1 }, expect: [400, 'invalid_request'], why: 'response maybe' });
  await call({ server: S, op: respond, params: id1, as: a, json: { response: 'ACCEPT', revision: 1 }, expect: [400, 'invalid_request'], why: 'response in upper case' });
  await call({ server: S, op: respond, params: id1, as: a, json: { response: true, revision: 1 }, expect: [400, 'invalid_request'], why: 'response is a boolean' });
  await call({ server: S, op: respond, params: id1, as: a, json: { revision: 1 }, expect: [400, 'invalid_request'], why: 'no response' });
  await call({ server: S, op: respond, params: id1, as: a, json: { response: 'accept' }, expect: [400, 'invalid_request'], why: 'no revision' });
  await call({ server: S, op: respond, params: id1, as: a, json: accept(0), expect: [400, 'invalid_request'], why: 'revision 0' });
  await call({ server: S, op: respond, params: id1, as: a, json: accept('1'), expect: [400, 'invalid_request'], why: 'revision is a string' });
  await call({ server: S, op: respond, params: id1, as: a, json: { ...accept(1), ticket_id: a.ticketId }, expect: [400, 'invalid_request'], why: 'unknown field' });
  await call({ server: S, op: respond, params: { proposal_id: 'x' }, as: a, json: accept(1), expect: [400, 'invalid_request'], why: 'proposal_id not a UUID' });
  await call({ server: S, op: respond, params: id1, as: a, raw: OVERSIZED, expect: [413, 'body_too_large'], why: 'body over 64 KiB' });
  await call({ server: S, op: respond, params: id1, as: c, json: accept(1), expect: [404, 'not_found'], why: 'a player not in the proposal' });
  await call({ server: S, op: respond, params: { proposal_id: NO_SUCH_ID() }, as: a, json: accept(1), expect: [404, 'not_found'], why: 'no such proposal' });
  await call({ server: S, op: respond, params: id1, as: a, json: accept(2), expect: [409, 'revision_conflict'], why: 'revision 2 of a proposal at 1' });

  await call({ server: S, op: respond, params: id1, as: a, json: accept(1), expect: [200], why: 'first accept',
    check: proposalIs({ state: 'OPEN', revision: 1, match_id: null }, [[a, 'accept'], [b, null]]) });
  await call({ server: S, op: respond, params: id1, as: a, json: accept(1), expect: [200], why: 'identical repeat of the accept',
    check: proposalIs({ state: 'OPEN', revision: 1 }, [[a, 'accept']]) });
  await call({ server: S, op: respond, params: id1, as: a, json: decline(1), expect: [409, 'already_responded'], why: 'decline after accepting' });
  await call({ server: S, op: get, params: id1, as: b, expect: [200], why: "the other participant sees the accept",
    check: proposalIs({ state: 'OPEN', revision: 1 }, [[a, 'accept'], [b, null]]) });
  const done = await call({ server: S, op: respond, params: id1, as: b, json: accept(1), expect: [200], why: 'the last accept',
    check: proposalIs({ state: 'ACCEPTED', revision: 2, match_id: 'uuid' }, [[a, 'accept'], [b, 'accept']]) });
  const matchId = done.json && done.json.match_id;
  for (const p of [a, b])
    await call({ server: S, op: ticket, params: { ticket_id: p.ticketId }, as: p, expect: [200], why: `${p.who}'s ticket after everyone accepted`,
      check: ticketIs({ state: 'MATCHED', match_id: matchId, proposal_id: p1 }) });
  await call({ server: S, op: respond, params: id1, as: a, json: accept(1), expect: [200], why: 'identical repeat after the decision',
    check: proposalIs({ state: 'ACCEPTED', match_id: matchId }) });
  await call({ server: S, op: respond, params: id1, as: b, json: decline(2), expect: [409, 'proposal_closed'], why: 'decline an accepted proposal' });

  // A decline ends it at once: the decliner is cancelled and cooled down, the rest requeued.
  const p2 = seedProposal([c, d]);
  const id2 = { proposal_id: p2 };
  await call({ server: S, op: respond, params: id2, as: d, json: accept(1), expect: [200], why: 'accept before the other declines',
    check: proposalIs({ state: 'OPEN' }, [[d, 'accept']]) });
  await call({ server: S, op: respond, params: id2, as: c, json: decline(1), expect: [200], why: 'decline',
    check: proposalIs({ state: 'DECLINED', revision: 2, match_id: null }, [[c, 'decline'], [d, 'accept']]) });
  await call({ server: S, op: ticket, params: { ticket_id: c.ticketId }, as: c, expect: [200], why: "the decliner's ticket", check: ticketIs({ state: 'CANCELLED' }) });
  await call({ server: S, op: ticket, params: { ticket_id: d.ticketId }, as: d, expect: [200], why: 'the other ticket is requeued',
    check: ticketIs({ state: 'QUEUED', proposal_id: null }) });
  await call({ server: S, op: respond, params: id2, as: c, json: decline(1), expect: [200], why: 'identical repeat of the decline',
    check: proposalIs({ state: 'DECLINED' }) });
  await call({ server: S, op: respond, params: id2, as: d, json: decline(2), expect: [409, 'proposal_closed'], why: 'respond to a declined proposal' });
  await call({ server: S, op: 'POST /v1/queue', as: c, headers: { 'Idempotency-Key': 'k-after-decline' }, json: ENQUEUE,
    expect: [429, 'cooldown'], why: 'the decliner queues again during the DECLINE cooldown' });

  // The window passed: a late response expires it (and that sticks), then 409.
  // Nobody had answered, so both tickets end EXPIRED (SPEC 7): a ticket whose
  // client let the window pass never goes back to the queue.
  const e = await queuedPlayer(S, 'proposal player E');
  const p3 = seedProposal([d, e], '-1 second');
  await call({ server: S, op: respond, params: { proposal_id: p3 }, as: d, json: accept(1), expect: [409, 'proposal_closed'], why: 'accept after the window' });
  await call({ server: S, op: get, params: { proposal_id: p3 }, as: e, expect: [200], why: 'the late response expired it',
    check: proposalIs({ state: 'EXPIRED', revision: 2, match_id: null }, [[d, null], [e, null]]) });
  for (const p of [d, e])
    await call({ server: S, op: ticket, params: { ticket_id: p.ticketId }, as: p, expect: [200], why: `${p.who} never answered: EXPIRED`,
      check: ticketIs({ state: 'EXPIRED', proposal_id: p3 }) });
  // A read advances expiry too. Whoever accepted in time is requeued at
  // once, keeping the heartbeat deadline it had (the window is moved into
  // the past here rather than waited for).
  const g = await queuedPlayer(S, 'proposal player G');
  const h = await queuedPlayer(S, 'proposal player H');
  const p4 = seedProposal([g, h]);
  await call({ server: S, op: respond, params: { proposal_id: p4 }, as: g, json: accept(1), expect: [200], why: 'accept in time',
    check: proposalIs({ state: 'OPEN' }, [[g, 'accept']]) });
  const gBefore = needOk(await call({ server: S, op: ticket, params: { ticket_id: g.ticketId }, as: g, expect: [200], why: 'the accepter waits',
    check: ticketIs({ state: 'PROPOSED', proposal_id: p4 }) }), 'read the accepter');
  sql(`UPDATE proposals SET expires_at = now() - interval '1 second' WHERE id = :'p1'`, p4);
  await call({ server: S, op: get, params: { proposal_id: p4 }, as: h, expect: [200], why: 'read after the window',
    check: proposalIs({ state: 'EXPIRED', revision: 2 }, [[g, 'accept'], [h, null]]) });
  await call({ server: S, op: ticket, params: { ticket_id: g.ticketId }, as: g, expect: [200], why: 'the accepter is requeued by the read',
    check: ticketIs({ state: 'QUEUED', proposal_id: null, expires_at: gBefore.expires_at }) });
  await call({ server: S, op: ticket, params: { ticket_id: h.ticketId }, as: h, expect: [200], why: 'the non-responder ends',
    check: ticketIs({ state: 'EXPIRED', proposal_id: p4 }) });

  // Cancelling a PROPOSED ticket declines its proposal; the other is requeued.
  const i = await queuedPlayer(S, 'proposal player I');
  const p5 = seedProposal([g, i]);
  const gt = needOk(await call({ server: S, op: ticket, params: { ticket_id: g.ticketId }, as: g, expect: [200], why: 'ticket in a proposal',
    check: ticketIs({ state: 'PROPOSED', proposal_id: p5 }) }), 'read the proposed ticket');
  await call({ server: S, op: 'POST /v1/queue/{ticket_id}/cancel', params: { ticket_id: g.ticketId }, as: g, json: { revision: gt.revision },
    expect: [200], why: 'cancel a PROPOSED ticket', check: ticketIs({ state: 'CANCELLED', revision: gt.revision + 1 }) });
  await call({ server: S, op: get, params: { proposal_id: p5 }, as: i, expect: [200], why: 'the cancel declined the proposal',
    check: proposalIs({ state: 'DECLINED' }, [[g, 'decline'], [i, null]]) });
  await call({ server: S, op: ticket, params: { ticket_id: i.ticketId }, as: i, expect: [200], why: 'requeued by the cancel',
    check: ticketIs({ state: 'QUEUED', proposal_id: null }) });

  // Banning a participant cancels their ticket like a cancel would: the
  // proposal is declined and the others requeued at once, not left waiting
  // for the window to requeue the banned player's ticket too.
  const f = await queuedPlayer(S, 'proposal player F');
  const p6 = seedProposal([i, f]);
  await call({ server: S, op: 'POST /v1/admin/players/{player_id}/ban', params: { player_id: i.id }, as: OPERATOR,
    json: { until: FUTURE(), reason: 'contract test' }, expect: [200], why: 'ban a participant of an open proposal',
    check: (j) => (j.active_ticket === null ? null : `the banned player still has active ticket ${JSON.stringify(j.active_ticket)}`) });
  for (const r of proposalRoutes(p6))
    await call({ server: S, ...r, as: i, expect: [403, 'banned'], why: 'a banned participant' });
  await call({ server: S, op: get, params: { proposal_id: p6 }, as: f, expect: [200], why: 'the ban declined the proposal',
    check: proposalIs({ state: 'DECLINED' }, [[i, 'decline'], [f, null]]) });
  await call({ server: S, op: ticket, params: { ticket_id: f.ticketId }, as: f, expect: [200], why: 'requeued by the ban',
    check: ticketIs({ state: 'QUEUED', proposal_id: null }) });
}

// ---- the game server's routes (workload tokens) ----------------------------------

// workloadToken: the token cc-allocator would sign (libcommon/game/workload_token.h,
// contracts/join-token.md), computed here with Node's HMAC from the raw secret
// file (one key under the id ""): "CCWT" | 1 | 0 | 16-byte allocation id | i64 expiry.
function workloadToken(allocationId, expires, secretPath = cfg.workloadSecret) {
  let key = fs.readFileSync(secretPath);
  if (key.length >= 2 && key.subarray(-2).toString() === '\r\n') key = key.subarray(0, -2);
  else if (key.length >= 1 && key.subarray(-1).toString() === '\n') key = key.subarray(0, -1);
  const exp = Buffer.alloc(8);
  exp.writeBigInt64BE(BigInt(expires));
  const claims = Buffer.concat([Buffer.from('CCWT'), Buffer.from([1, 0]), Buffer.from(allocationId.replace(/-/g, ''), 'hex'), exp]);
  const tag = crypto.createHmac('sha256', key).update(claims).digest();
  return `${claims.toString('base64url')}.${tag.toString('base64url')}`;
}

// seedAllocation: what cc-allocator's claim and endpoint steps write (a local
// game server ALLOCATED to a new ALLOCATED allocation of the match); returns
// { id, server, token, as } for the server routes.
function seedAllocation(matchId, server, port) {
  const [id, expires] = sql(
    `INSERT INTO game_servers (id, provider, region, address, port, state) VALUES (:'p2', 'local', 'eu-west', '127.0.0.1', :'p3'::int, 'IDLE');
     INSERT INTO allocations (match_id, state, provider, workload_expires_at)
       VALUES (:'p1', 'REQUESTED', 'local', date_trunc('second', now()) + interval '1 hour') RETURNING id AS alloc \\gset
     UPDATE allocations SET state = 'ALLOCATED', server_id = :'p2', address = '127.0.0.1', port = :'p3'::int WHERE id = :'alloc';
     UPDATE game_servers SET state = 'ALLOCATED', allocation_id = :'alloc' WHERE id = :'p2';
     SELECT :'alloc', extract(epoch FROM workload_expires_at)::bigint FROM allocations WHERE id = :'alloc';`,
    matchId, server, port,
  ).split('|');
  const token = workloadToken(id, expires);
  return { id, server, token, as: { token, who: `workload token of ${server}` } };
}

// seedRequested: an allocation cc-allocator has asked its provider for, no
// server recorded yet (Agones shows the game server its allocation before
// the allocator records it); returns { id, as } for the server routes.
function seedRequested(matchId) {
  const [id, expires] = sql(
    `INSERT INTO allocations (match_id, state, provider, workload_expires_at)
       VALUES (:'p1', 'REQUESTED', 'agones', date_trunc('second', now()) + interval '1 hour')
       RETURNING id, extract(epoch FROM workload_expires_at)::bigint;`,
    matchId,
  ).split('|');
  const token = workloadToken(id, expires);
  return { id, as: { token, who: 'workload token of an allocation with no server yet' } };
}

// seedPublish: what cc-allocator's publish writes: one assignment per
// participant, the roster manifest (game/roster.h's shape), PUBLISHED.
function seedPublish(matchId, alloc) {
  sql(
    `INSERT INTO assignments (match_id, player_id, slot, team, join_token, expires_at)
       SELECT match_id, player_id, (row_number() OVER (ORDER BY team, player_id) - 1)::smallint, team,
              'contract-join-token', now() + interval '10 minutes'
       FROM match_players WHERE match_id = :'p1';
     INSERT INTO rosters (match_id, allocation_id, key_id, digest, manifest)
       SELECT :'p1', :'p2', 'k1', repeat('ab', 32), jsonb_build_object('version', 1, 'match_id', :'p1', 'allocation_id', :'p2',
         'server_id', :'p3', 'key_id', 'k1', 'digest', repeat('ab', 32),
         'players', jsonb_agg(jsonb_build_object('slot', slot, 'team', team, 'player_id', player_id, 'generation', generation,
                                                 'expires_at', extract(epoch FROM expires_at)::bigint) ORDER BY slot))
       FROM assignments WHERE match_id = :'p1';
     UPDATE allocations SET state = 'PUBLISHED' WHERE id = :'p2';`,
    matchId, alloc.id, alloc.server,
  );
}

// acceptedMatch: two queued players, a seeded proposal, both accept over HTTP;
// returns { id, players: [a, b] } (a on team 0).
async function acceptedMatch(S, who) {
  const a = await queuedPlayer(S, `${who} A`);
  const b = await queuedPlayer(S, `${who} B`);
  const pid = seedProposal([a, b]);
  for (const p of [a, b])
    await call({ server: S, op: 'POST /v1/proposals/{proposal_id}/response', params: { proposal_id: pid }, as: p,
      json: { response: 'accept', revision: 1 }, expect: [200], why: `${p.who} accepts` });
  const id = sql("SELECT id FROM matches WHERE proposal_id = :'p1'", pid);
  if (!/^[0-9a-f-]{36}$/.test(id)) throw new Error(`no match for proposal ${pid}`);
  return { id, players: [a, b] };
}

const REGISTER = (state, extra = {}) => ({ state, protocol_version: cfg.minProtocol, image_digest: 'sha256:c0ffee', ...extra });

// One request per server route, for the auth, outage and configuration cases.
function serverRoutes(server) {
  const params = { server_id: server };
  const pid = NO_SUCH_ID();
  return [
    { op: 'POST /v1/servers/{server_id}/register', params, json: REGISTER('process_ready') },
    { op: 'GET /v1/servers/{server_id}/roster', params },
    { op: 'POST /v1/servers/{server_id}/connect', params, json: { player_id: pid, connection_id: 'c1' } },
    { op: 'POST /v1/servers/{server_id}/disconnect', params, json: { player_id: pid, generation: 1, reason: 'left' } },
    { op: 'POST /v1/servers/{server_id}/shutdown', params, json: { reason: 'match_over' } },
    { op: 'POST /v1/servers/{server_id}/result', params, json: { score: [0, 0], duration_seconds: 1, players: [0, 1].map((team) =>
      ({ player_id: NO_SUCH_ID(), team, goals: 0, assists: 0, saves: 0, shots: 0 })) } },
    { op: 'POST /v1/servers/{server_id}/heartbeat', params, json: { phase: 'playing', tick: 1 } },
    { op: 'POST /v1/servers/{server_id}/no_show', params, json: { player_ids: [pid] } },
    { op: 'POST /v1/servers/{server_id}/vacated', params, json: { player_id: pid, slot: 0, generation: 1, remaining_seconds: 100 } },
  ];
}

async function serverCases(S) {
  const reg = 'POST /v1/servers/{server_id}/register';
  const roster = 'GET /v1/servers/{server_id}/roster';
  const connect = 'POST /v1/servers/{server_id}/connect';
  const disconnect = 'POST /v1/servers/{server_id}/disconnect';
  const shutdown = 'POST /v1/servers/{server_id}/shutdown';
  const result = 'POST /v1/servers/{server_id}/result';
  const heartbeat = 'POST /v1/servers/{server_id}/heartbeat';
  const noShow = 'POST /v1/servers/{server_id}/no_show';
  const assignment = 'GET /v1/matches/{match_id}/assignment';
  const tag = crypto.randomBytes(4).toString('hex');

  const m = await acceptedMatch(S, 'server-route player');
  const [a, b] = m.players;
  const al = seedAllocation(m.id, `contract-${tag}-1`, 17101);
  const at = al.as;
  const sp = { server_id: al.server };
  const other = { server_id: `contract-${tag}-other` };
  const BAD_TOKEN = { token: workloadToken(al.id, 4102444800).replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')), who: 'a forged workload token' };
  const UNRECORDED = { token: workloadToken(NO_SUCH_ID(), 4102444800), who: 'a token naming no allocation' };
  const lease = (p, c) => ({ player_id: p.id, connection_id: c });
  const players = (s0, s1) => [
    { player_id: a.id, team: 0, goals: s0, assists: 0, saves: 2, shots: 4 },
    { player_id: b.id, team: 1, goals: s1, assists: 1, saves: 0, shots: 3 },
  ];

  // Authentication, on every server route.
  for (const r of serverRoutes(al.server)) {
    await call({ server: S, ...r, as: NO_AUTH, expect: [401, 'unauthorized'], why: 'no workload token' });
    await call({ server: S, ...r, as: BAD_TOKEN, expect: [401, 'unauthorized'], why: 'forged signature' });
    await call({ server: S, ...r, as: UNRECORDED, expect: [401, 'unauthorized'], why: 'a well-signed token naming no recorded allocation' });
    await call({ server: S, ...r, params: other, as: at, expect: [403, 'forbidden'], why: "the token's allocation serves another server" });
    await call({ server: S, ...r, params: { server_id: 'bad id!' }, as: at, expect: [400, 'invalid_request'], why: 'server_id outside [A-Za-z0-9._-]' });
    if (r.json) {
      await call({ server: S, ...r, raw: '{"x":', as: at, expect: [400, 'invalid_json'], why: 'truncated JSON' });
      await call({ server: S, ...r, json: { ...r.json, extra: 1 }, as: at, expect: [400, 'invalid_request'], why: 'unknown field' });
      await call({ server: S, ...r, raw: OVERSIZED, as: at, expect: [413, 'body_too_large'], why: 'body over 64 KiB' });
    }
  }

  // An allocation with no server recorded yet: "not yet" (409, retry), not "not yours" (403).
  const pm = await acceptedMatch(S, 'pending-allocation player');
  const pending = seedRequested(pm.id);
  for (const r of serverRoutes(`contract-${tag}-pending`))
    await call({ server: S, ...r, as: pending.as, expect: [409, 'invalid_state'], why: 'the allocation has no server recorded yet' });

  // Before the roster is published.
  await call({ server: S, op: roster, params: sp, as: at, expect: [404, 'roster_not_published'], why: 'roster before publication' });
  await call({ server: S, op: assignment, params: { match_id: m.id }, as: a, expect: [409, 'assignment_pending'], why: 'assignment before publication' });
  await call({ server: S, op: reg, params: sp, as: at, json: REGISTER('assignment_ready'), expect: [409, 'invalid_state'], why: 'assignment_ready before process_ready' });
  await call({ server: S, op: reg, params: sp, as: at, json: REGISTER('process_ready', { protocol_version: cfg.minProtocol + 1 }), expect: [422, 'protocol_mismatch'], why: 'another protocol than the match' });
  await call({ server: S, op: reg, params: sp, as: at, json: REGISTER('sideways'), expect: [400, 'invalid_request'], why: 'unknown state' });
  const first = await call({ server: S, op: reg, params: sp, as: at, json: REGISTER('process_ready'), expect: [200], why: 'process_ready',
    check: (j) => (j.match_id === m.id && j.allocation_id === al.id && j.state === 'process_ready' ? null : `registration ${JSON.stringify(j)}`) });
  await call({ server: S, op: reg, params: sp, as: at, json: REGISTER('process_ready'), expect: [200], why: 'identical replay of process_ready',
    check: (j) => (isDeepStrictEqual(j, first.json) ? null : 'the replay answered differently') });
  await call({ server: S, op: reg, params: sp, as: at, json: REGISTER('process_ready', { image_digest: 'sha256:other' }), expect: [409, 'replay_conflict'], why: 'another image digest' });
  await call({ server: S, op: reg, params: sp, as: at, json: REGISTER('assignment_ready'), expect: [409, 'assignments_not_live'], why: 'assignment_ready before the roster is published' });
  await call({ server: S, op: connect, params: sp, as: at, json: lease(a, 'c1'), expect: [409, 'invalid_state'], why: 'connect before the roster is published' });
  await call({ server: S, op: disconnect, params: sp, as: at, json: { player_id: a.id, generation: 1, reason: 'left' }, expect: [409, 'invalid_state'], why: 'disconnect before the roster is published' });

  seedPublish(m.id, al);
  await call({ server: S, op: roster, params: sp, as: at, expect: [200], why: 'the published roster',
    check: (j) => (j.match_id === m.id && j.players.length === 2 ? null : `roster ${JSON.stringify(j)}`) });
  await call({ server: S, op: connect, params: sp, as: at, json: lease(a, 'c1'), expect: [409, 'invalid_state'], why: 'connect before assignment_ready' });
  await call({ server: S, op: reg, params: sp, as: at, json: REGISTER('assignment_ready'), expect: [200], why: 'assignment_ready' });
  await call({ server: S, op: assignment, params: { match_id: m.id }, as: a, expect: [200], why: "a participant's assignment",
    check: (j) => (j.server_id === al.server && j.port === 17101 && j.join_token === 'contract-join-token' ? null : `assignment ${JSON.stringify(j)}`) });
  await call({ server: S, op: assignment, params: { match_id: 'x' }, as: a, expect: [400, 'invalid_request'], why: 'match_id not a UUID' });
  await call({ server: S, op: assignment, params: { match_id: NO_SUCH_ID() }, as: a, expect: [404, 'not_found'], why: 'no such match' });
  await call({ server: S, op: result, params: sp, as: at, json: { score: [1, 0], duration_seconds: 60, players: players(1, 0) }, expect: [409, 'invalid_state'], why: 'a result before anyone connected' });

  // Leases.
  await call({ server: S, op: connect, params: sp, as: at, json: { player_id: NO_SUCH_ID(), connection_id: 'c9' }, expect: [404, 'not_in_roster'], why: 'a player not in the match' });
  await call({ server: S, op: disconnect, params: sp, as: at, json: { player_id: NO_SUCH_ID(), generation: 1, reason: 'left' }, expect: [404, 'not_in_roster'], why: 'a player not in the match' });
  await call({ server: S, op: connect, params: sp, as: at, json: lease(a, 'c1'), expect: [200], why: 'connect',
    check: (j) => (j.generation === 1 && j.connected && j.disconnect_reason === null ? null : `lease ${JSON.stringify(j)}`) });
  await call({ server: S, op: connect, params: sp, as: at, json: lease(a, 'c1'), expect: [200], why: 'identical replay of the connect' });
  await call({ server: S, op: connect, params: sp, as: at, json: lease(a, 'c2'), expect: [409, 'already_connected'], why: 'a second connection while connected' });
  await call({ server: S, op: disconnect, params: sp, as: at, json: { player_id: a.id, generation: 2, reason: 'left' }, expect: [409, 'stale_generation'], why: 'another generation' });
  await call({ server: S, op: disconnect, params: sp, as: at, json: { player_id: a.id, generation: 1, reason: 'left' }, expect: [200], why: 'disconnect',
    check: (j) => (!j.connected && j.disconnect_reason === 'left' ? null : `lease ${JSON.stringify(j)}`) });
  await call({ server: S, op: disconnect, params: sp, as: at, json: { player_id: a.id, generation: 1, reason: 'left' }, expect: [200], why: 'identical replay of the disconnect' });
  await call({ server: S, op: disconnect, params: sp, as: at, json: { player_id: a.id, generation: 1, reason: 'kicked' }, expect: [409, 'replay_conflict'], why: 'another reason for the ended lease' });
  await call({ server: S, op: connect, params: sp, as: at, json: lease(a, 'c3'), expect: [200], why: 'reconnect', check: (j) => (j.generation === 2 ? null : `generation ${j.generation}`) });
  await call({ server: S, op: connect, params: sp, as: at, json: lease(b, 'c5'), expect: [200], why: 'the other player connects' });
  await call({ server: S, op: reg, params: sp, as: at, json: REGISTER('assignment_ready'), expect: [409, 'invalid_state'], why: 'an identical assignment_ready replay once the match is IN_PROGRESS' });

  // Heartbeat (the liveness signal); "ended" moves the match to RESULT_PENDING.
  await call({ server: S, op: heartbeat, params: sp, as: at, json: { phase: 'paused', tick: 1 }, expect: [400, 'invalid_request'], why: 'unknown phase' });
  await call({ server: S, op: heartbeat, params: sp, as: at, json: { phase: 'playing', tick: -1 }, expect: [400, 'invalid_request'], why: 'negative tick' });
  await call({ server: S, op: heartbeat, params: sp, as: at, json: { phase: 'playing', tick: 600 }, expect: [200], why: 'heartbeat while playing',
    check: (j) => (j.match_state === 'IN_PROGRESS' && j.allocation_state === 'PUBLISHED' && j.allocation_id === al.id ? null : `heartbeat ${JSON.stringify(j)}`) });
  await call({ server: S, op: noShow, params: sp, as: at, json: { player_ids: [NO_SUCH_ID()] }, expect: [422, 'not_in_roster'], why: 'a no-show who is not a participant' });
  await call({ server: S, op: noShow, params: sp, as: at, json: { player_ids: [a.id, a.id] }, expect: [400, 'invalid_request'], why: 'the same player twice' });
  await call({ server: S, op: noShow, params: sp, as: at, json: { player_ids: [a.id, b.id] }, expect: [200], why: 'naming players who connected: no no-show',
    check: (j) => (j.match_state === 'IN_PROGRESS' && j.no_show_player_ids.length === 0 && j.requeued_player_ids.length === 0 ? null : `no_show ${JSON.stringify(j)}`) });
  await call({ server: S, op: heartbeat, params: sp, as: at, json: { phase: 'ended', tick: 18000 }, expect: [200], why: 'heartbeat ended',
    check: (j) => (j.match_state === 'RESULT_PENDING' ? null : `heartbeat ${JSON.stringify(j)}`) });

  // Result.
  await call({ server: S, op: result, params: sp, as: at, json: { score: [0, 1], duration_seconds: 60, players: players(1, 0) }, expect: [422, 'invalid_result'], why: "team 0's goals above its score" });
  await call({ server: S, op: result, params: sp, as: at, json: { score: [1], duration_seconds: 60, players: players(1, 0) }, expect: [400, 'invalid_request'], why: 'one score' });
  const done = await call({ server: S, op: result, params: sp, as: at, json: { score: [2, 1], duration_seconds: 300, players: players(2, 1) }, expect: [200], why: 'the result',
    check: (j) => (j.state === 'COMPLETED' && j.winner === 0 && j.rating_changes.length === 2 ? null : `result ${JSON.stringify(j)}`) });
  await call({ server: S, op: result, params: sp, as: at, json: { duration_seconds: 300, players: players(2, 1).reverse(), score: [2, 1] }, expect: [200], why: 'identical replay, players reordered',
    check: (j) => (isDeepStrictEqual(j, done.json) ? null : 'the replay answered differently') });
  await call({ server: S, op: result, params: sp, as: at, json: { score: [1, 2], duration_seconds: 300, players: players(1, 2) }, expect: [409, 'replay_conflict'], why: 'another result' });
  await call({ server: S, op: 'GET /v1/profile/ranked', as: a, expect: [200], why: 'the winner is rated',
    check: (j) => (j.ranked_games === 1 && j.rating > 1500 ? null : `profile ${JSON.stringify(j)}`) });

  // Shutdown.
  await call({ server: S, op: shutdown, params: sp, as: at, json: { reason: 'match_over' }, expect: [200], why: 'shutdown',
    check: (j) => (j.state === 'RELEASED' && j.match_state === 'COMPLETED' ? null : `shutdown ${JSON.stringify(j)}`) });
  await call({ server: S, op: shutdown, params: sp, as: at, json: { reason: 'match_over' }, expect: [200], why: 'identical replay of the shutdown' });
  await call({ server: S, op: shutdown, params: sp, as: at, json: { reason: 'crashed' }, expect: [409, 'replay_conflict'], why: 'another reason' });
  await call({ server: S, op: roster, params: sp, as: at, expect: [409, 'invalid_state'], why: 'roster after the release' });
  await call({ server: S, op: connect, params: sp, as: at, json: lease(a, 'c3'), expect: [200], why: 'identical replay of a connect after the release' });
  await call({ server: S, op: connect, params: sp, as: at, json: lease(b, 'c4'), expect: [409, 'invalid_state'], why: 'a new connect after the release' });
  await call({ server: S, op: disconnect, params: sp, as: at, json: { player_id: a.id, generation: 2, reason: 'server_shutdown' }, expect: [200], why: 'disconnect after the release' });
  await call({ server: S, op: assignment, params: { match_id: m.id }, as: b, expect: [409, 'match_closed'], why: 'assignment of a completed match' });

  // An allocation the allocator failed: its server's shutdown is refused.
  const m2 = await acceptedMatch(S, 'failed-allocation player');
  const al2 = seedAllocation(m2.id, `contract-${tag}-2`, 17102);
  sql("UPDATE allocations SET state = 'FAILED' WHERE id = :'p1'", al2.id);
  await call({ server: S, op: shutdown, params: { server_id: al2.server }, as: al2.as, json: { reason: 'match_over' }, expect: [409, 'invalid_state'], why: 'shutdown of a FAILED allocation' });

  // A no-show: its player never connects; the match is called off (store/match_settle.h).
  const m3 = await acceptedMatch(S, 'no-show player');
  const [a3, b3] = m3.players;
  const al3 = seedAllocation(m3.id, `contract-${tag}-3`, 17103);
  const sp3 = { server_id: al3.server };
  await call({ server: S, op: reg, params: sp3, as: al3.as, json: REGISTER('process_ready'), expect: [200], why: 'no-show match process_ready' });
  await call({ server: S, op: noShow, params: sp3, as: al3.as, json: { player_ids: [b3.id] }, expect: [409, 'invalid_state'], why: 'no_show before any connect window' });
  seedPublish(m3.id, al3);
  await call({ server: S, op: reg, params: sp3, as: al3.as, json: REGISTER('assignment_ready'), expect: [200], why: 'no-show match assignment_ready' });
  await call({ server: S, op: connect, params: sp3, as: al3.as, json: lease(a3, 'n1'), expect: [200], why: 'the one who shows up' });
  const settled = await call({ server: S, op: noShow, params: sp3, as: al3.as, json: { player_ids: [b3.id] }, expect: [200], why: 'the no-show',
    check: (j) => (j.match_state === 'FAILED' && isDeepStrictEqual(j.no_show_player_ids, [b3.id]) && isDeepStrictEqual(j.requeued_player_ids, [a3.id])
      ? null : `no_show ${JSON.stringify(j)}`) });
  await call({ server: S, op: noShow, params: sp3, as: al3.as, json: { player_ids: [b3.id] }, expect: [200], why: 'identical replay of the no_show',
    check: (j) => (isDeepStrictEqual(j, settled.json) ? null : 'the replay answered differently') });
  await call({ server: S, op: heartbeat, params: sp3, as: al3.as, json: { phase: 'playing', tick: 60 }, expect: [200], why: 'heartbeat of a called-off match',
    check: (j) => (j.match_state === 'FAILED' && j.allocation_state === 'RELEASED' ? null : `heartbeat ${JSON.stringify(j)}`) });
  return al;
}

// GET /v1/matches/{match_id} (issue 20): a ranked match read by its participants
// before and after its result, strangers refused like a match that does not
// exist; and the result closes every lease still open ("match_over").
async function matchCases(S) {
  const get = 'GET /v1/matches/{match_id}';
  const tag = crypto.randomBytes(4).toString('hex');
  const m = await acceptedMatch(S, 'summary player');
  const [a, b] = m.players;
  const stranger = await login(S, hexTicket(), 'a player of no match');
  const al = seedAllocation(m.id, `contract-${tag}-summary`, 17111);
  const sp = { server_id: al.server };
  const at = al.as;
  const post = (route, json, why) =>
    call({ server: S, op: `POST /v1/servers/{server_id}/${route}`, params: sp, as: at, json, expect: [200], why });
  const team = (j, t) => (j.teams.find((x) => x.team === t) || { players: [] }).players;
  const everyone = (j) => [...team(j, 0), ...team(j, 1)];

  await call({ server: S, op: get, params: { match_id: m.id }, as: a, expect: [200], why: 'a participant reads the match before it starts',
    check: (j) => (j.match_id === m.id && j.playlist === 'ranked' && j.ranked === true && j.state === 'ALLOCATING' &&
      j.end_reason === null && j.started_at === null && j.ended_at === null && j.result === null &&
      team(j, 0).length === 1 && team(j, 0)[0].player_id === a.id && team(j, 1)[0].player_id === b.id &&
      j.teams.every((t) => t.score === null) && everyone(j).every((x) => 'rating' in x && x.rating === null && x.stats === null)
      ? null : `summary ${JSON.stringify(j)}`) });
  const missing = await call({ server: S, op: get, params: { match_id: NO_SUCH_ID() }, as: a, expect: [404, 'not_found'], why: 'no such match' });
  await call({ server: S, op: get, params: { match_id: m.id }, as: stranger, expect: [404, 'not_found'], why: 'a player not in the match',
    check: (j) => (isDeepStrictEqual(j, missing.json) ? null : `a stranger's 404 ${JSON.stringify(j)} differs from no such match's ${JSON.stringify(missing.json)}`) });
  await call({ server: S, op: get, params: { match_id: 'x' }, as: a, expect: [400, 'invalid_request'], why: 'match_id not a UUID' });
  await call({ server: S, op: get, params: { match_id: '..x' }, as: a, expect: [400, 'invalid_path'], why: 'a path with ".." in the match_id' });

  // The game, through the server routes.
  await post('register', REGISTER('process_ready'), 'summary match process_ready');
  seedPublish(m.id, al);
  await post('register', REGISTER('assignment_ready'), 'summary match assignment_ready');
  await post('connect', { player_id: a.id, connection_id: 's1' }, 'summary match: A connects');
  await post('connect', { player_id: b.id, connection_id: 's2' }, 'summary match: B connects');
  await call({ server: S, op: get, params: { match_id: m.id }, as: b, expect: [200], why: 'the other participant reads it while it is played',
    check: (j) => (j.state === 'IN_PROGRESS' && j.started_at !== null && j.ended_at === null && j.end_reason === null && j.result === null
      ? null : `summary ${JSON.stringify(j)}`) });
  await post('result', { score: [3, 1], duration_seconds: 240, players: [
    { player_id: a.id, team: 0, goals: 3, assists: 0, saves: 1, shots: 5 },
    { player_id: b.id, team: 1, goals: 1, assists: 0, saves: 4, shots: 2 }] }, 'summary match result');
  const open = sql(`SELECT count(*) FILTER (WHERE connected OR disconnected_at IS NULL OR disconnect_reason IS DISTINCT FROM 'match_over')
                    FROM assignments WHERE match_id = :'p1'`, m.id);
  if (open === '0') ok(`${get}: the result closed both leases, reason match_over`);
  else fail(`${get}: after the result ${open} of 2 assignments are not closed with match_over`,
    [sql("SELECT string_agg(player_id || ' ' || connected || ' ' || coalesce(disconnect_reason, '-'), '; ') FROM assignments WHERE match_id = :'p1'", m.id)]);
  await call({ server: S, op: 'POST /v1/servers/{server_id}/disconnect', params: sp, as: at, json: { player_id: a.id, generation: 1, reason: 'left' },
    expect: [200], why: 'a receipt after the result for a lease the result closed',
    check: (j) => (!j.connected && j.disconnect_reason === 'match_over' ? null : `lease ${JSON.stringify(j)}`) });
  const profile = needOk(await call({ server: S, op: 'GET /v1/profile/ranked', as: a, expect: [200], why: 'the summary winner is rated' }), 'profile');
  await call({ server: S, op: get, params: { match_id: m.id }, as: a, expect: [200], why: 'a participant reads the completed match',
    check: (j) => {
      const me = team(j, 0)[0], them = team(j, 1)[0];
      const good = j.state === 'COMPLETED' && j.end_reason === 'completed' && j.ended_at !== null && j.started_at !== null &&
        j.result && isDeepStrictEqual(j.result.score, [3, 1]) && j.result.winner === 0 && j.result.duration_seconds === 240 &&
        team(j, 0) && j.teams[0].score === 3 && j.teams[1].score === 1 &&
        me.stats && me.stats.goals === 3 && me.stats.shots === 5 && me.stats.bot === false && them.stats.saves === 4 &&
        me.rating && me.rating.rating_before === 1500 && me.rating.rating_after > me.rating.rating_before &&
        me.rating.rating_after === profile.rating && me.rating.deviation_after === profile.deviation &&
        them.rating && them.rating.rating_after < them.rating.rating_before;
      return good ? null : `summary ${JSON.stringify(j)} (A's profile ${JSON.stringify(profile)})`;
    } });
  // A lease left open by a match that ended before migration 0016 (faked): the shutdown closes it, match_over.
  sql("UPDATE assignments SET connected = true, disconnected_at = NULL, disconnect_reason = NULL WHERE match_id = :'p1' AND player_id = :'p2'", m.id, b.id);
  await post('shutdown', { reason: 'match_over' }, 'summary match shutdown');
  const leftover = sql("SELECT connected || ' ' || coalesce(disconnect_reason, '-') || ' ' || (disconnected_at IS NOT NULL) FROM assignments WHERE match_id = :'p1' AND player_id = :'p2'", m.id, b.id);
  if (leftover === 'false match_over true') ok(`${get}: the shutdown of a completed match closed a lease left open, reason match_over`);
  else fail(`${get}: after the shutdown of a completed match the open lease is "${leftover}", not "false match_over true"`);
  await call({ server: S, op: get, params: { match_id: m.id }, as: b, expect: [200], why: 'the match stays readable after its server is released',
    check: (j) => (j.state === 'COMPLETED' && j.result !== null ? null : `summary ${JSON.stringify(j)}`) });

  // A match its server shuts down while it is played: FAILED server_shutdown, no result, leases closed with that reason.
  const m2 = await acceptedMatch(S, 'summary player of a shut-down match');
  const [a2, b2] = m2.players;
  const al2 = seedAllocation(m2.id, `contract-${tag}-summary2`, 17112);
  const post2 = (route, json, why) =>
    call({ server: S, op: `POST /v1/servers/{server_id}/${route}`, params: { server_id: al2.server }, as: al2.as, json, expect: [200], why });
  await post2('register', REGISTER('process_ready'), 'shut-down match process_ready');
  seedPublish(m2.id, al2);
  await post2('register', REGISTER('assignment_ready'), 'shut-down match assignment_ready');
  await post2('connect', { player_id: a2.id, connection_id: 't1' }, 'shut-down match: A connects');
  await post2('connect', { player_id: b2.id, connection_id: 't2' }, 'shut-down match: B connects');
  // A leaves mid-match: its lease ends "left", and another reason for it is a conflict while the match lives.
  const disc2 = (json, expect, why, check) =>
    call({ server: S, op: 'POST /v1/servers/{server_id}/disconnect', params: { server_id: al2.server }, as: al2.as, json, expect, why, check });
  await disc2({ player_id: a2.id, generation: 1, reason: 'left' }, [200], 'shut-down match: A leaves mid-match');
  await disc2({ player_id: a2.id, generation: 1, reason: 'timeout' }, [409, 'replay_conflict'], 'another reason for an ended lease while the match is live');
  await post2('shutdown', { reason: 'crashed' }, 'the server shuts down mid-match');
  const closed = sql("SELECT string_agg(CASE WHEN player_id = :'p2' THEN 'A' ELSE 'B' END || ' ' || connected || ' ' || (disconnected_at IS NOT NULL) || ' ' || disconnect_reason, ', ' ORDER BY player_id = :'p2' DESC) FROM assignments WHERE match_id = :'p1'", m2.id, a2.id);
  if (closed === 'A false true left, B false true server_shutdown') ok(`${get}: the shutdown mid-match closed the lease still open, reason server_shutdown; the one a receipt ended kept its reason`);
  else fail(`${get}: after a shutdown mid-match the leases are "${closed}", not "A false true left, B false true server_shutdown"`);
  // Once the match is over, a receipt for a lease that ended before it, whatever its reason, answers the lease as it is.
  await disc2({ player_id: a2.id, generation: 1, reason: 'timeout' }, [200], 'another reason for a lease that ended before the match did, once the match is over',
    (j) => (!j.connected && j.disconnect_reason === 'left' ? null : `lease ${JSON.stringify(j)}`));
  await call({ server: S, op: get, params: { match_id: m2.id }, as: b2, expect: [200], why: 'a participant reads a match its server shut down',
    check: (j) => (j.state === 'FAILED' && j.end_reason === 'server_shutdown' && j.ended_at !== null && j.result === null &&
      everyone(j).every((x) => x.rating === null && x.stats === null) ? null : `summary ${JSON.stringify(j)}`) });
}

// Every player route refuses a missing, forged, expired or revoked session alike.
async function authCases(S, expired) {
  for (const r of playerRoutes(NO_SUCH_ID())) {
    await call({ server: S, ...r, as: NO_AUTH, expect: [401, 'unauthorized'], why: 'no bearer token' });
    await call({ server: S, ...r, as: FORGED, expect: [401, 'unauthorized'], why: 'unknown bearer token' });
    await call({ server: S, ...r, as: expired, expect: [401, 'session_expired'], why: 'expired session' });
  }
}

async function banCases(S, p) {
  const ban = 'POST /v1/admin/players/{player_id}/ban';
  const unban = 'POST /v1/admin/players/{player_id}/unban';
  const view = 'GET /v1/admin/players/{player_id}';
  const pid = { player_id: p.id };
  const until = FUTURE();

  await call({ server: S, op: ban, params: pid, as: OPERATOR, json: { until: '2000-01-01T00:00:00Z', reason: 'x' }, expect: [422, 'invalid_parameters'], why: 'ban ending in the past' });
  await call({ server: S, op: ban, params: pid, as: OPERATOR, raw: '{"until"', expect: [400, 'invalid_json'], why: 'truncated JSON' });
  await call({ server: S, op: ban, params: pid, as: OPERATOR, json: { until: 'tomorrow', reason: 'x' }, expect: [400, 'invalid_request'], why: 'until not RFC 3339' });
  await call({ server: S, op: ban, params: pid, as: OPERATOR, json: { until: '2999-13-01T00:00:00Z', reason: 'x' }, expect: [400, 'invalid_request'], why: 'month 13' });
  await call({ server: S, op: ban, params: pid, as: OPERATOR, json: { until }, expect: [400, 'invalid_request'], why: 'no reason' });
  await call({ server: S, op: ban, params: pid, as: OPERATOR, json: { until, reason: '' }, expect: [400, 'invalid_request'], why: 'empty reason' });
  await call({ server: S, op: ban, params: { player_id: 'nobody' }, as: OPERATOR, json: { until, reason: 'x' }, expect: [400, 'invalid_request'], why: 'player_id not a UUID' });
  await call({ server: S, op: ban, params: { player_id: NO_SUCH_ID() }, as: OPERATOR, json: { until, reason: 'x' }, expect: [404, 'not_found'], why: 'no such player' });
  await call({ server: S, op: ban, params: pid, as: OPERATOR, raw: OVERSIZED, expect: [413, 'body_too_large'], why: 'body over 64 KiB' });
  await call({ server: S, op: ban, params: pid, as: OPERATOR, json: { until, reason: 'x'.repeat(257) }, expect: [400, 'invalid_request'], why: 'a reason of 257 characters' });
  // maxLength counts characters: 200 "é" are 400 bytes and fit 256.
  const reason = '\u00e9'.repeat(200);
  await call({ server: S, op: ban, params: pid, as: OPERATOR, json: { until, reason }, expect: [200], why: 'ban with a reason of 200 "é" (400 bytes)',
    check: (j) => (j.ban_reason === reason && j.banned_until && j.active_sessions === 0 ? null : `after the ban: ${JSON.stringify(j)}`) });

  for (const r of playerRoutes(NO_SUCH_ID()))
    await call({ server: S, ...r, as: p, expect: [403, 'banned'], why: 'session of a banned player' });
  await call({ server: S, op: 'POST /v1/session/steam', json: { ticket: p.ticket }, expect: [403, 'banned'], why: 'banned player logs in' });

  await call({ server: S, op: view, params: pid, as: OPERATOR, expect: [200], why: 'view a banned player' });
  await call({ server: S, op: view, params: { player_id: 'x' }, as: OPERATOR, expect: [400, 'invalid_request'], why: 'player_id not a UUID' });
  await call({ server: S, op: view, params: { player_id: NO_SUCH_ID() }, as: OPERATOR, expect: [404, 'not_found'], why: 'no such player' });
  await call({ server: S, op: unban, params: { player_id: 'x' }, as: OPERATOR, expect: [400, 'invalid_request'], why: 'player_id not a UUID' });
  await call({ server: S, op: unban, params: { player_id: NO_SUCH_ID() }, as: OPERATOR, expect: [404, 'not_found'], why: 'no such player' });
  await call({ server: S, op: unban, params: pid, as: OPERATOR, expect: [200], why: 'unban',
    check: (j) => (j.banned_until === null && j.ban_reason === null ? null : `after unban: ${JSON.stringify(j)}`) });
  await call({ server: S, op: unban, params: pid, as: OPERATOR, expect: [200], why: 'unban a player who is not banned' });
  // The ban revoked the session and lifting it does not revive it.
  await call({ server: S, op: 'GET /v1/profile/ranked', as: p, expect: [401, 'session_expired'], why: 'session revoked by the lifted ban' });
  const again = await login(S, p.ticket, 'the unbanned player');
  await call({ server: S, op: 'GET /v1/profile/ranked', as: again, expect: [404, 'no_rating'], why: 'new session after unban' });

  for (const r of adminRoutes(p.id)) {
    await call({ server: S, ...r, as: NO_AUTH, expect: [401, 'unauthorized'], why: 'no operator token' });
    await call({ server: S, ...r, as: again, expect: [401, 'unauthorized'], why: 'a player session is not the operator token' });
  }
}

// The outbox's dead letters: planted as cc-maintenance's dispatcher leaves them.
async function deadLetterCases(S) {
  const list = 'GET /v1/admin/outbox/dead-letters';
  const replay = 'POST /v1/admin/outbox/dead-letters/{outbox_id}/replay';
  const plant = () =>
    Number(sql("INSERT INTO outbox (event, resource_type, resource_id, revision, player_ids, attempts, dead_lettered_at, last_error) " +
      "SELECT 'test.poisoned', 'test', gen_random_uuid(), 1, array_fill(gen_random_uuid(), ARRAY[65]), 5, now(), " +
      "'invalid envelope: player_ids must be at most 64 ids' RETURNING id"));
  const a = plant();
  const b = plant();
  await call({ server: S, op: list, query: { limit: 1 }, as: OPERATOR, expect: [200], why: 'newest dead letter, a page of one',
    check: (j) => (j.dead_letters.length === 1 && j.dead_letters[0].id === b && j.next_before === b ? null : `page ${JSON.stringify(j)}`) });
  await call({ server: S, op: list, query: { before: b, limit: 100 }, as: OPERATOR, expect: [200], why: 'the page before it',
    check: (j) => (j.dead_letters.length > 0 && j.dead_letters[0].id === a ? null : `page ${clip(JSON.stringify(j))}`) });
  await call({ server: S, op: list, query: { limit: 0 }, as: OPERATOR, expect: [400, 'invalid_request'], why: 'limit 0' });
  await call({ server: S, op: list, query: { limit: 101 }, as: OPERATOR, expect: [400, 'invalid_request'], why: 'limit 101' });
  await call({ server: S, op: list, query: { before: 'x' }, as: OPERATOR, expect: [400, 'invalid_request'], why: 'before not a number' });
  await call({ server: S, op: replay, params: { outbox_id: a }, as: OPERATOR, json: { replays: 0 }, expect: [200], why: 'replay',
    check: (j) => (j.replayed === true && j.state === 'pending' && j.replays === 1 ? null : `after the replay: ${JSON.stringify(j)}`) });
  await call({ server: S, op: replay, params: { outbox_id: a }, as: OPERATOR, json: { replays: 0 }, expect: [200], why: 'the same replay again',
    check: (j) => (j.replayed === false && j.replays === 1 ? null : `after the repeat: ${JSON.stringify(j)}`) });
  await call({ server: S, op: replay, params: { outbox_id: a }, as: OPERATOR, json: { replays: 3 }, expect: [409, 'revision_conflict'], why: 'stale fence' });
  await call({ server: S, op: replay, params: { outbox_id: a }, as: OPERATOR, json: { replays: 1 }, expect: [409, 'invalid_state'], why: 'not dead-lettered (pending again)' });
  await call({ server: S, op: replay, params: { outbox_id: 999999999999999 }, as: OPERATOR, json: { replays: 0 }, expect: [404, 'not_found'], why: 'no such dead letter' });
  await call({ server: S, op: replay, params: { outbox_id: 'abc' }, as: OPERATOR, json: { replays: 0 }, expect: [400, 'invalid_request'], why: 'outbox_id not a number' });
  await call({ server: S, op: replay, params: { outbox_id: b }, as: OPERATOR, raw: '{"replays"', expect: [400, 'invalid_json'], why: 'truncated JSON' });
  await call({ server: S, op: replay, params: { outbox_id: b }, as: OPERATOR, json: { replays: -1 }, expect: [400, 'invalid_request'], why: 'negative replays' });
  await call({ server: S, op: replay, params: { outbox_id: b }, as: OPERATOR, json: { replays: 0, force: true }, expect: [400, 'invalid_request'], why: 'unknown field' });
  await call({ server: S, op: replay, params: { outbox_id: b }, as: OPERATOR, raw: OVERSIZED, expect: [413, 'body_too_large'], why: 'body over 64 KiB' });
}

// The operator console (issue 27): its page and assets, its reads, and the ban's fence.
async function consoleCases(S, p) {
  const page = 'GET /console';
  const asset = 'GET /console/{asset}';
  const headersOk = (j, res) => {
    const csp = res.headers.get('content-security-policy') || '';
    if (res.headers.get('cache-control') !== 'no-cache') return `Cache-Control ${res.headers.get('cache-control')}`;
    return /script-src 'self'/.test(csp) && !/unsafe-(inline|eval)/.test(csp) ? null : `CSP ${csp}`;
  };
  const index = await call({ server: S, op: page, expect: [200], why: 'the console page', check: headersOk });
  await call({ server: S, op: page, headers: { 'If-None-Match': index.headers.get('etag') }, expect: [304], why: 'the page, its ETag still current' });
  const js = await call({ server: S, op: asset, params: { asset: 'app.js' }, expect: [200], why: 'the console script',
    check: (j, res) => (/^text\/javascript/.test(res.headers.get('content-type')) ? headersOk(j, res) : `Content-Type ${res.headers.get('content-type')}`) });
  await call({ server: S, op: asset, params: { asset: 'app.js' }, headers: { 'If-None-Match': `"0000", ${js.headers.get('etag')}` }, expect: [304], why: 'the script, its ETag in a list' });
  await call({ server: S, op: asset, params: { asset: 'style.css' }, headers: { 'If-None-Match': '"0123456789abcdef0123456789abcdef"' }, expect: [200], why: 'a stale ETag gets the asset' });
  await call({ server: S, op: asset, params: { asset: 'nope.js' }, expect: [404, 'not_found'], why: 'not an asset' });

  const ov = 'GET /v1/admin/overview';
  await call({ server: S, op: ov, as: OPERATOR, expect: [200], why: 'the overview',
    check: (j) => (j.queues.length === cfg.regions.length * 2 && j.series.queue_depth.length === 30 ? null : `overview ${clip(JSON.stringify(j))}`) });
  const list = 'GET /v1/admin/matches';
  const m = await acceptedMatch(S, 'console');
  await call({ server: S, op: list, as: OPERATOR, expect: [200], why: 'every match, newest first' });
  await call({ server: S, op: list, query: { q: m.id.slice(0, 8), limit: 5 }, as: OPERATOR, expect: [200], why: 'a match by the start of its id',
    check: (j) => (j.matches.some((x) => x.match_id === m.id) ? null : `${m.id} not listed`) });
  await call({ server: S, op: list, query: { q: m.players[0].id }, as: OPERATOR, expect: [200], why: 'a match by a player in it',
    check: (j) => (j.matches.length === 1 && j.matches[0].match_id === m.id ? null : `for player: ${clip(JSON.stringify(j))}`) });
  await call({ server: S, op: list, query: { state: 'COMPLETED', limit: 100 }, as: OPERATOR, expect: [200], why: 'completed matches',
    check: (j) => (j.matches.every((x) => x.state === 'COMPLETED') ? null : 'a match of another state') });
  await call({ server: S, op: list, query: { limit: 0 }, as: OPERATOR, expect: [400, 'invalid_request'], why: 'limit 0' });
  await call({ server: S, op: list, query: { limit: '1x' }, as: OPERATOR, expect: [400, 'invalid_request'], why: 'limit not a number' });
  await call({ server: S, op: list, query: { state: 'PLAYING' }, as: OPERATOR, expect: [400, 'invalid_request'], why: 'not a match state' });
  await call({ server: S, op: list, query: { q: 'x'.repeat(65) }, as: OPERATOR, expect: [400, 'invalid_request'], why: 'a search of 65 characters' });
  await call({ server: S, op: list, query: { q: '' }, as: OPERATOR, expect: [400, 'invalid_request'], why: 'an empty search' });
  const one = 'GET /v1/admin/matches/{match_id}';
  await call({ server: S, op: one, params: { match_id: m.id }, as: OPERATOR, expect: [200], why: 'one match',
    check: (j) => (j.match.match_id === m.id && j.players.length === 2 && j.timeline[0].step === 'proposal' && j.timeline[0].at ? null : `match ${clip(JSON.stringify(j))}`) });
  await call({ server: S, op: one, params: { match_id: NO_SUCH_ID() }, as: OPERATOR, expect: [404, 'not_found'], why: 'no such match' });
  await call({ server: S, op: one, params: { match_id: 'nope' }, as: OPERATOR, expect: [400, 'invalid_request'], why: 'match_id not a UUID' });
  const find = 'GET /v1/admin/players';
  await call({ server: S, op: find, query: { q: p.id }, as: OPERATOR, expect: [200], why: 'a player by id',
    check: (j) => (j.players.length === 1 && j.players[0].player_id === p.id ? null : `found ${clip(JSON.stringify(j))}`) });
  await call({ server: S, op: find, query: { q: '%_\\' }, as: OPERATOR, expect: [200], why: 'LIKE wildcards are searched literally',
    check: (j) => (j.players.length === 0 ? null : `found ${j.players.length}`) });
  await call({ server: S, op: find, as: OPERATOR, expect: [400, 'invalid_request'], why: 'no search' });
  await call({ server: S, op: find, query: { q: 'caf\u00e9' }, as: OPERATOR, expect: [400, 'invalid_request'], why: 'a search that is not ASCII' });
  const hist = 'GET /v1/admin/players/{player_id}/history';
  await call({ server: S, op: hist, params: { player_id: m.players[0].id }, as: OPERATOR, expect: [200], why: 'a player\'s history',
    check: (j) => (j.matches.length === 1 && j.matches[0].match_id === m.id && j.sessions.length >= 1 ? null : `history ${clip(JSON.stringify(j))}`) });
  await call({ server: S, op: hist, params: { player_id: NO_SUCH_ID() }, as: OPERATOR, expect: [404, 'not_found'], why: 'no such player' });
  await call({ server: S, op: hist, params: { player_id: 'x' }, as: OPERATOR, expect: [400, 'invalid_request'], why: 'player_id not a UUID' });
  await call({ server: S, op: 'GET /v1/admin/servers', as: OPERATOR, expect: [200], why: 'every game server' });

  // The fence: the ban the operator read, null for none; a retry of what is already in place is answered, not refused.
  const ban = 'POST /v1/admin/players/{player_id}/ban';
  const unban = 'POST /v1/admin/players/{player_id}/unban';
  const pid = { player_id: p.id };
  const until = new Date(Math.floor(Date.now() / 1000) * 1000 + 86400e3).toISOString();
  const later = new Date(Math.floor(Date.now() / 1000) * 1000 + 2 * 86400e3).toISOString();
  const same = (j) => (j.banned_until === until && j.ban_reason === 'fenced' ? null : `after: ${JSON.stringify(j)}`);
  await call({ server: S, op: ban, params: pid, as: OPERATOR, json: { until, reason: 'fenced', expected_banned_until: null }, expect: [200], why: 'fenced ban of a player not banned', check: same });
  await call({ server: S, op: ban, params: pid, as: OPERATOR, json: { until, reason: 'fenced', expected_banned_until: null }, expect: [200], why: 'the same fenced ban again (a retry)', check: same });
  await call({ server: S, op: ban, params: pid, as: OPERATOR, json: { until: later, reason: 'fenced', expected_banned_until: null }, expect: [409, 'revision_conflict'], why: 'a fence the ban has moved past' });
  await call({ server: S, op: ban, params: pid, as: OPERATOR, json: { until, reason: 'fenced', expected_banned_until: 'soon' }, expect: [400, 'invalid_request'], why: 'a fence that is not a timestamp' });
  await call({ server: S, op: ban, params: pid, as: OPERATOR, json: { until: later, reason: 'longer', expected_banned_until: until }, expect: [200], why: 'fenced extension of the ban',
    check: (j) => (j.banned_until === later ? null : `after: ${JSON.stringify(j)}`) });
  await call({ server: S, op: unban, params: pid, as: OPERATOR, json: { expected_banned_until: until }, expect: [409, 'revision_conflict'], why: 'unban fenced by a stale ban' });
  await call({ server: S, op: unban, params: pid, as: OPERATOR, raw: '{"expected_banned_until"', expect: [400, 'invalid_json'], why: 'truncated JSON' });
  await call({ server: S, op: unban, params: pid, as: OPERATOR, json: { expected_banned_until: later, force: true }, expect: [400, 'invalid_request'], why: 'unknown field' });
  await call({ server: S, op: unban, params: pid, as: OPERATOR, json: { expected_banned_until: later }, expect: [200], why: 'fenced unban',
    check: (j) => (j.banned_until === null ? null : `after: ${JSON.stringify(j)}`) });
  await call({ server: S, op: unban, params: pid, as: OPERATOR, json: { expected_banned_until: later }, expect: [200], why: 'the same fenced unban again (a retry)' });
}

// ---- scenarios on the servers that cannot reach their database ---------------------------

async function outageCases(S, p) {
  const op = 'POST /v1/session/steam';
  await call({ server: S, op, json: { ticket: 'not-hex!' }, expect: [400, 'invalid_request'], why: 'ticket that is not hex' });
  await call({ server: S, op, json: { ticket: hexTicket('e1') }, expect: [401, 'invalid_ticket'], why: 'Steam: invalid ticket' });
  await call({ server: S, op, json: { ticket: hexTicket('e3') }, expect: [401, 'invalid_ticket'], why: 'Steam: expired ticket' });
  await call({ server: S, op, json: { ticket: hexTicket('fa') }, expect: [403, 'family_shared'], why: 'Steam: family-shared copy' });
  await call({ server: S, op, json: { ticket: hexTicket('bb') }, expect: [403, 'vac_banned'], why: 'Steam: VAC-banned account' });
  await call({ server: S, op, json: { ticket: hexTicket('cc') }, expect: [403, 'publisher_banned'], why: 'Steam: publisher-banned account' });
  await call({ server: S, op, json: { ticket: hexTicket('51') }, expect: [503, 'steam_unavailable'], why: 'Steam answers HTTP 503' });
  await call({ server: S, op, json: { ticket: hexTicket('0a') }, expect: [503, 'unavailable'], why: 'Steam accepts, database down' });
  for (const r of playerRoutes(NO_SUCH_ID()))
    await call({ server: S, ...r, as: FORGED, expect: [503, 'unavailable'], why: 'database down' });
  for (const r of adminRoutes(p.id))
    await call({ server: S, ...r, as: OPERATOR, expect: [503, 'unavailable'], why: 'database down' });
  const token = { token: workloadToken(NO_SUCH_ID(), 4102444800), who: 'a well-signed workload token' };
  for (const r of serverRoutes('gs-outage'))
    await call({ server: S, ...r, as: token, expect: [503, 'unavailable'], why: 'database down' });
}

async function unconfiguredCases(S, p) {
  await call({ server: S, op: 'POST /v1/session/steam', json: { ticket: hexTicket('0a') }, expect: [503, 'not_configured'], why: 'no Steam App ID or key' });
  const token = { token: workloadToken(NO_SUCH_ID(), 4102444800), who: 'a well-signed workload token' };
  for (const r of serverRoutes('gs-unconfigured'))
    await call({ server: S, ...r, as: token, expect: [503, 'not_configured'], why: 'no --workload-secret-file' });
  for (const r of adminRoutes(p.id))
    await call({ server: S, ...r, as: OPERATOR, expect: [503, 'not_configured'], why: 'no operator token configured' });
}

// ---- parties (issue 26) ------------------------------------------------------------------

async function partyCases(S) {
  const create = 'POST /v1/parties';
  const join = 'POST /v1/parties/join';
  const get = 'GET /v1/parties/{party_id}';
  const invite = 'POST /v1/parties/{party_id}/invite';
  const leave = 'POST /v1/parties/{party_id}/leave';
  const kick = 'POST /v1/parties/{party_id}/kick';
  const promote = 'POST /v1/parties/{party_id}/promote';
  const disband = 'POST /v1/parties/{party_id}/disband';
  const queue = 'POST /v1/parties/{party_id}/queue';
  const client = { protocol_version: cfg.minProtocol, build: '1.4.2' };
  const key = (k) => ({ 'Idempotency-Key': `${k}-${crypto.randomUUID()}` });
  const probed = async (who) => { const p = await login(S, hexTicket(), who); await probe(S, p, cfg.regions[0]); return p; };
  const leader = await probed('party leader');
  const a = await probed('party member a');
  const b = await probed('party member b');
  const c = await probed('party member c');
  const outsider = await login(S, hexTicket(), 'not in the party');
  const rev = (j) => j.revision;

  await call({ server: S, op: create, as: leader, json: client, expect: [400, 'invalid_request'], why: 'no Idempotency-Key' });
  await call({ server: S, op: create, as: leader, headers: key('p'), raw: '{"build":', expect: [400, 'invalid_json'], why: 'truncated JSON' });
  await call({ server: S, op: create, as: leader, headers: key('p'), json: { ...client, build: 'has space' }, expect: [400, 'invalid_request'], why: 'build outside [A-Za-z0-9._-]' });
  await call({ server: S, op: create, as: leader, headers: key('p'), raw: OVERSIZED, expect: [413, 'body_too_large'], why: 'body over 64 KiB' });
  const k1 = key('party-one');
  const made = needOk(await call({ server: S, op: create, as: leader, headers: k1, json: client, expect: [201], why: 'create a party',
    check: (j) => (j.leader === leader.id && j.revision === 1 && j.members.length === 1 && !j.queued ? null : `unexpected party ${JSON.stringify(j)}`) }), 'create');
  await call({ server: S, op: create, as: leader, headers: k1, json: client, expect: [201], why: 'identical replay',
    check: (j) => (isDeepStrictEqual(j, made) ? null : 'replay differs from the original') });
  await call({ server: S, op: create, as: leader, headers: k1, json: { ...client, build: '9.9.9' }, expect: [409, 'idempotency_conflict'], why: 'same key, other body' });
  await call({ server: S, op: create, as: leader, headers: key('p'), json: client, expect: [409, 'already_in_party'], why: 'a second party' });
  const pid = { party_id: made.id };

  await call({ server: S, op: get, params: pid, as: leader, expect: [200], why: 'read own party' });
  await call({ server: S, op: get, params: { party_id: 'nope' }, as: leader, expect: [400, 'invalid_request'], why: 'party_id not a UUID' });
  await call({ server: S, op: get, params: pid, as: outsider, expect: [404, 'not_found'], why: 'a party one is not in' });

  await call({ server: S, op: join, as: a, raw: '[', expect: [400, 'invalid_json'], why: 'not JSON' });
  await call({ server: S, op: join, as: a, json: { join_code: made.join_code, party_id: made.id, ...client }, expect: [400, 'invalid_request'], why: 'both join_code and party_id' });
  await call({ server: S, op: join, as: a, json: { join_code: 'abc', ...client }, expect: [400, 'invalid_request'], why: 'malformed join code' });
  await call({ server: S, op: join, as: a, raw: OVERSIZED, expect: [413, 'body_too_large'], why: 'body over 64 KiB' });
  await call({ server: S, op: join, as: a, json: { join_code: 'ZZZZZZZZ', ...client }, expect: [404, 'not_found'], why: 'no party has this code' });
  await call({ server: S, op: join, as: a, json: { party_id: made.id, ...client }, expect: [404, 'not_found'], why: 'party_id without an invitation' });
  let p = needOk(await call({ server: S, op: join, as: a, json: { join_code: made.join_code, ...client }, expect: [200], why: 'join by code',
    check: (j) => (j.members.length === 2 && j.revision === 2 ? null : `unexpected party ${JSON.stringify(j)}`) }), 'join');

  await call({ server: S, op: invite, params: pid, as: leader, raw: '{', expect: [400, 'invalid_json'], why: 'truncated JSON' });
  await call({ server: S, op: invite, params: pid, as: leader, json: { player_id: 'x', revision: 2 }, expect: [400, 'invalid_request'], why: 'player_id not a UUID' });
  await call({ server: S, op: invite, params: { party_id: 'x' }, as: leader, json: { player_id: b.id, revision: 2 }, expect: [400, 'invalid_request'], why: 'party_id not a UUID' });
  await call({ server: S, op: invite, params: pid, as: leader, raw: OVERSIZED, expect: [413, 'body_too_large'], why: 'body over 64 KiB' });
  await call({ server: S, op: invite, params: pid, as: a, json: { player_id: b.id, revision: 2 }, expect: [403, 'not_leader'], why: 'a member invites' });
  await call({ server: S, op: invite, params: pid, as: leader, json: { player_id: b.id, revision: 1 }, expect: [409, 'revision_conflict'], why: 'stale revision' });
  await call({ server: S, op: invite, params: pid, as: leader, json: { player_id: NO_SUCH_ID(), revision: 2 }, expect: [404, 'not_found'], why: 'no such player' });
  await call({ server: S, op: invite, params: { party_id: NO_SUCH_ID() }, as: leader, json: { player_id: b.id, revision: 2 }, expect: [404, 'not_found'], why: 'no such party' });
  p = needOk(await call({ server: S, op: invite, params: pid, as: leader, json: { player_id: b.id, revision: 2 }, expect: [200], why: 'invite b',
    check: (j) => (j.invited.includes(b.id) ? null : 'b is not listed as invited') }), 'invite');
  p = needOk(await call({ server: S, op: join, as: b, json: { party_id: made.id, ...client }, expect: [200], why: 'join by invitation',
    check: (j) => (j.members.length === 3 && j.invited.length === 0 ? null : `unexpected party ${JSON.stringify(j)}`) }), 'join b');
  await call({ server: S, op: join, as: c, json: { join_code: made.join_code, ...client }, expect: [409, 'party_full'], why: 'a fourth member' });

  // kick and promote
  for (const op of [kick, promote]) {
    await call({ server: S, op, params: pid, as: leader, raw: '{"player_id"', expect: [400, 'invalid_json'], why: 'truncated JSON' });
    await call({ server: S, op, params: pid, as: leader, json: { player_id: b.id }, expect: [400, 'invalid_request'], why: 'no revision' });
    await call({ server: S, op, params: pid, as: leader, raw: OVERSIZED, expect: [413, 'body_too_large'], why: 'body over 64 KiB' });
    await call({ server: S, op, params: pid, as: a, json: { player_id: b.id, revision: rev(p) }, expect: [403, 'not_leader'], why: 'a member does it' });
    await call({ server: S, op, params: pid, as: leader, json: { player_id: leader.id, revision: rev(p) }, expect: [422, 'invalid_target'], why: 'the leader names himself' });
    await call({ server: S, op, params: pid, as: leader, json: { player_id: c.id, revision: rev(p) }, expect: [422, 'invalid_target'], why: 'names a non-member' });
    await call({ server: S, op, params: pid, as: leader, json: { player_id: b.id, revision: rev(p) - 1 }, expect: [409, 'revision_conflict'], why: 'stale revision' });
    await call({ server: S, op, params: pid, as: outsider, json: { player_id: b.id, revision: rev(p) }, expect: [404, 'not_found'], why: 'not in the party' });
  }

  // queue refusals, each naming the member
  await call({ server: S, op: queue, params: pid, as: leader, json: { playlist: 'casual', revision: rev(p) }, expect: [400, 'invalid_request'], why: 'no Idempotency-Key' });
  await call({ server: S, op: queue, params: pid, as: leader, headers: key('q'), raw: '{', expect: [400, 'invalid_json'], why: 'truncated JSON' });
  await call({ server: S, op: queue, params: pid, as: leader, headers: key('q'), raw: OVERSIZED, expect: [413, 'body_too_large'], why: 'body over 64 KiB' });
  await call({ server: S, op: queue, params: pid, as: leader, headers: key('q'), json: { playlist: 'arcade', revision: rev(p) }, expect: [422, 'unknown_playlist'], why: 'playlist arcade' });
  await call({ server: S, op: queue, params: pid, as: leader, headers: key('q'), json: { playlist: 'ranked', revision: rev(p) }, expect: [422, 'party_too_large'], why: 'three for ranked (solo only)' });
  await call({ server: S, op: queue, params: pid, as: a, headers: key('q'), json: { playlist: 'casual', revision: rev(p) }, expect: [403, 'not_leader'], why: 'a member queues' });
  await call({ server: S, op: queue, params: pid, as: leader, headers: key('q'), json: { playlist: 'casual', revision: rev(p) - 1 }, expect: [409, 'revision_conflict'], why: 'stale revision' });
  await call({ server: S, op: queue, params: { party_id: NO_SUCH_ID() }, as: leader, headers: key('q'), json: { playlist: 'casual', revision: 1 }, expect: [404, 'not_found'], why: 'no such party' });
  const names = (m) => (j) => (j.error.message.includes(m.id) ? null : `the message does not name member ${m.id}: ${j.error.message}`);
  sql("UPDATE cc_party_members SET build = '1.4.3' WHERE player_id = :'p1'", b.id);
  await call({ server: S, op: queue, params: pid, as: leader, headers: key('q'), json: { playlist: 'casual', revision: rev(p) }, expect: [422, 'build_mismatch'], why: 'b runs another build', check: names(b) });
  sql("UPDATE cc_party_members SET build = '1.4.2', protocol_version = :'p2' WHERE player_id = :'p1'", b.id, cfg.minProtocol - 1);
  await call({ server: S, op: queue, params: pid, as: leader, headers: key('q'), json: { playlist: 'casual', revision: rev(p) }, expect: [426, 'member_client_outdated'], why: 'b is below the minimum protocol', check: names(b) });
  sql("UPDATE cc_party_members SET protocol_version = :'p2' WHERE player_id = :'p1'", b.id, cfg.minProtocol);
  sql("UPDATE players SET banned_until = now() + interval '1 day', ban_reason = 'contract' WHERE id = :'p1'", a.id);
  await call({ server: S, op: queue, params: pid, as: leader, headers: key('q'), json: { playlist: 'casual', revision: rev(p) }, expect: [403, 'member_banned'], why: 'a is banned', check: names(a) });
  sql("UPDATE players SET banned_until = NULL, ban_reason = NULL WHERE id = :'p1'", a.id);
  sql("INSERT INTO penalties (player_id, kind, source_id, cooldown_until) VALUES (:'p1', 'DECLINE', gen_random_uuid(), now() + interval '1 minute')", a.id);
  await call({ server: S, op: queue, params: pid, as: leader, headers: key('q'), json: { playlist: 'casual', revision: rev(p) }, expect: [429, 'member_cooldown'], why: 'a is cooling down', check: names(a) });
  sql("DELETE FROM penalties WHERE player_id = :'p1'", a.id);
  sql("DELETE FROM region_rtts WHERE player_id = :'p1'", b.id);
  await call({ server: S, op: queue, params: pid, as: leader, headers: key('q'), json: { playlist: 'casual', revision: rev(p) }, expect: [422, 'member_no_region_probed'], why: 'b never probed', check: names(b) });
  await probe(S, b, cfg.regions[0]);
  const solo = needOk(await call({ server: S, op: 'POST /v1/queue', as: b, headers: key('solo'), json: { ...ENQUEUE, playlist: 'casual' }, expect: [201], why: 'b queues alone' }), 'solo');
  await call({ server: S, op: queue, params: pid, as: leader, headers: key('q'), json: { playlist: 'casual', revision: rev(p) }, expect: [409, 'member_active_ticket'], why: 'b has a ticket', check: names(b) });
  await call({ server: S, op: 'POST /v1/queue/{ticket_id}/cancel', params: { ticket_id: solo.id }, as: b, json: { revision: 1 }, expect: [200], why: 'b cancels the solo ticket' });

  const kq = key('queue');
  const q = needOk(await call({ server: S, op: queue, params: pid, as: leader, headers: kq, json: { playlist: 'casual', revision: rev(p) }, expect: [201], why: 'queue the party',
    check: (j) => (j.tickets.length === 3 && j.tickets.every((t) => t.party_id === made.id && t.state === 'QUEUED') && j.party.queued ? null : `unexpected answer ${JSON.stringify(j)}`) }), 'queue');
  await call({ server: S, op: queue, params: pid, as: leader, headers: kq, json: { playlist: 'casual', revision: rev(p) }, expect: [201], why: 'identical replay',
    check: (j) => (isDeepStrictEqual(j, q) ? null : 'replay differs from the original') });
  await call({ server: S, op: queue, params: pid, as: leader, headers: kq, json: { playlist: 'ranked', revision: rev(p) }, expect: [409, 'idempotency_conflict'], why: 'same key, other body' });
  await call({ server: S, op: join, as: c, json: { join_code: made.join_code, ...client }, expect: [409, 'party_queued'], why: 'join a queued party' });
  p = q.party;

  // A member's heartbeat keeps the party's lease; a member's leave takes every ticket out.
  const ta = q.tickets.find((t) => t.player_id === a.id);
  await call({ server: S, op: 'POST /v1/queue/{ticket_id}/heartbeat', params: { ticket_id: ta.id }, as: a, json: { revision: 1 }, expect: [200], why: 'a member heartbeats a party ticket' });
  await call({ server: S, op: 'GET /v1/queue/{ticket_id}', params: { ticket_id: q.tickets.find((t) => t.player_id === b.id).id }, as: b, expect: [200], why: "b's ticket shares a's new deadline",
    check: (j) => (j.expires_at > q.tickets.find((t) => t.player_id === b.id).expires_at && j.revision === 1 ? null : `expires_at ${j.expires_at}, revision ${j.revision}`) });

  // In a proposal (the real claim, cc_claim_proposal: the party on team 0, three solos on team 1), leave,
  // kick and disband are refused 409 party_in_proposal and change nothing; once a solo's decline requeues
  // the party, the leave below goes through.
  const solos = [];
  for (const who of ['proposal solo 1', 'proposal solo 2', 'proposal solo 3']) {
    const s = await probed(who);
    s.ticketId = needOk(await call({ server: S, op: 'POST /v1/queue', as: s, headers: key('psolo'), json: { ...ENQUEUE, playlist: 'casual' }, expect: [201], why: `${who} queues casual` }), who).id;
    solos.push(s);
  }
  const claimIds = [...q.tickets.map((t) => t.id), ...solos.map((x) => x.ticketId)];
  const claimed = sql(`SELECT outcome FROM cc_claim_proposal(gen_random_uuid(), 'casual', :'p1'::uuid[], '{0,0,0,1,1,1}', :'p2', :'p3'::int, :'p4', 1000000, 3, 'contract-test', 600, 0)`,
    `{${claimIds.join(',')}}`, client.build, client.protocol_version, cfg.regions[0]);
  if (claimed !== 'claimed') fail(`parties: claiming a proposal over the party and three solos answered ${JSON.stringify(claimed)}`);
  const partyRows = () => sql("SELECT string_agg(t.state || ':' || t.revision || ':' || coalesce(t.proposal_id::text, ''), ' ' ORDER BY t.id) || ' / ' || " +
    "(SELECT p.revision || ':' || p.leader FROM cc_parties p WHERE p.id = :'p1') || ' / ' || " +
    "(SELECT string_agg(m.player_id::text, ' ' ORDER BY m.player_id) FROM cc_party_members m WHERE m.party_id = :'p1') " +
    "FROM tickets t WHERE t.party_id = :'p1'", made.id);
  const before = partyRows();
  const proposalId = sql("SELECT proposal_id FROM tickets WHERE id = :'p1'", ta.id);
  const namesProposal = (j) => (j.error.message.includes(proposalId) ? null : `the message does not name proposal ${proposalId}: ${j.error.message}`);
  await call({ server: S, op: leave, params: pid, as: a, json: { revision: rev(p) }, expect: [409, 'party_in_proposal'], why: 'a leaves while the party is in a proposal', check: namesProposal });
  await call({ server: S, op: kick, params: pid, as: leader, json: { player_id: b.id, revision: rev(p) }, expect: [409, 'party_in_proposal'], why: 'kick b while the party is in a proposal', check: namesProposal });
  await call({ server: S, op: disband, params: pid, as: leader, json: { revision: rev(p) }, expect: [409, 'party_in_proposal'], why: 'disband while the party is in a proposal', check: namesProposal });
  await call({ server: S, op: leave, params: pid, as: a, json: { revision: rev(p) - 1 }, expect: [409, 'revision_conflict'], why: 'a stale revision is still revision_conflict in a proposal' });
  const after = partyRows();
  if (after !== before) fail(`parties: a refused change in a proposal changed the party or its tickets: before ${before}, after ${after}`);
  await call({ server: S, op: 'POST /v1/proposals/{proposal_id}/response', params: { proposal_id: proposalId }, as: solos[0], json: { response: 'decline', revision: 1 }, expect: [200], why: 'a solo declines: the party goes back to the queue' });
  await call({ server: S, op: 'GET /v1/queue/{ticket_id}', params: { ticket_id: ta.id }, as: a, expect: [200], why: "the party's ticket is QUEUED again",
    check: (j) => (j.state === 'QUEUED' && j.proposal_id === null ? null : `a's ticket is ${j.state} in ${j.proposal_id}`) });
  for (const s of solos.slice(1)) {
    const t = needOk(await call({ server: S, op: 'GET /v1/queue/{ticket_id}', params: { ticket_id: s.ticketId }, as: s, expect: [200], why: 'a requeued solo' }), 'solo');
    await call({ server: S, op: 'POST /v1/queue/{ticket_id}/cancel', params: { ticket_id: s.ticketId }, as: s, json: { revision: t.revision }, expect: [200], why: 'the solo leaves the queue' });
  }

  await call({ server: S, op: leave, params: pid, as: a, raw: '', expect: [400, 'invalid_json'], why: 'empty body' });
  await call({ server: S, op: leave, params: pid, as: a, json: { revision: 'x' }, expect: [400, 'invalid_request'], why: 'revision is a string' });
  await call({ server: S, op: leave, params: pid, as: a, raw: OVERSIZED, expect: [413, 'body_too_large'], why: 'body over 64 KiB' });
  await call({ server: S, op: leave, params: pid, as: a, json: { revision: rev(p) - 1 }, expect: [409, 'revision_conflict'], why: 'stale revision' });
  await call({ server: S, op: leave, params: pid, as: outsider, json: { revision: rev(p) }, expect: [404, 'not_found'], why: 'not in the party' });
  const left = needOk(await call({ server: S, op: leave, params: pid, as: a, json: { revision: rev(p) }, expect: [200], why: 'a leaves a queued party',
    check: (j) => (!j.disbanded ? null : 'the party ended') }), 'leave');
  await call({ server: S, op: 'GET /v1/queue/{ticket_id}', params: { ticket_id: q.tickets.find((t) => t.player_id === b.id).id }, as: b, expect: [200], why: "a's leave cancelled b's ticket too",
    check: (j) => (j.state === 'CANCELLED' ? null : `b's ticket is ${j.state}`) });
  p = needOk(await call({ server: S, op: kick, params: pid, as: leader, json: { player_id: b.id, revision: left.revision }, expect: [200], why: 'kick b',
    check: (j) => (j.members.length === 1 ? null : 'b is still a member') }), 'kick');
  needOk(await call({ server: S, op: join, as: c, json: { join_code: made.join_code, ...client }, expect: [200], why: 'c joins' }), 'join c');
  p = needOk(await call({ server: S, op: get, params: pid, as: c, expect: [200], why: 'c reads the party' }), 'get');
  p = needOk(await call({ server: S, op: promote, params: pid, as: leader, json: { player_id: c.id, revision: rev(p) }, expect: [200], why: 'promote c',
    check: (j) => (j.leader === c.id ? null : 'c does not lead') }), 'promote');

  const other = needOk(await call({ server: S, op: create, as: outsider, headers: key('other'), json: client, expect: [201], why: 'another party' }), 'other');
  await call({ server: S, op: join, as: c, json: { join_code: other.join_code, ...client }, expect: [409, 'already_in_party'], why: 'join a second party' });
  await call({ server: S, op: leave, params: { party_id: other.id }, as: outsider, json: { revision: other.revision }, expect: [200], why: 'the last member leaves',
    check: (j) => (j.disbanded ? null : 'the party did not end') });
  await call({ server: S, op: disband, params: pid, as: c, raw: '{', expect: [400, 'invalid_json'], why: 'truncated JSON' });
  await call({ server: S, op: disband, params: pid, as: c, json: {}, expect: [400, 'invalid_request'], why: 'no revision' });
  await call({ server: S, op: disband, params: pid, as: c, raw: OVERSIZED, expect: [413, 'body_too_large'], why: 'body over 64 KiB' });
  await call({ server: S, op: disband, params: pid, as: leader, json: { revision: rev(p) }, expect: [403, 'not_leader'], why: 'the former leader disbands' });
  await call({ server: S, op: disband, params: pid, as: c, json: { revision: rev(p) - 1 }, expect: [409, 'revision_conflict'], why: 'stale revision' });
  await call({ server: S, op: disband, params: pid, as: outsider, json: { revision: rev(p) }, expect: [404, 'not_found'], why: 'not in the party' });
  await call({ server: S, op: disband, params: pid, as: c, json: { revision: rev(p) }, expect: [200], why: 'disband',
    check: (j) => (j.disbanded ? null : 'not disbanded') });
  await call({ server: S, op: get, params: pid, as: c, expect: [404, 'not_found'], why: 'a disbanded party' });
}

// ---- issue 13: refusals every route shares, rate limits, the server's own answers -----------

// The path parameters of any route, with values its handler could be reached with.
function anyParams(opKey) {
  const params = {};
  for (const m of opKey.matchAll(/\{(\w+)\}/g)) params[m[1]] = m[1] === 'region' ? cfg.regions[0] : NO_SUCH_ID();
  return params;
}

// Every route: a body that is not JSON is 415, two Authorization headers are 400.
async function everyRouteCases(S, p) {
  for (const op of OPS.keys()) {
    const params = anyParams(op);
    await call({ server: S, op, params, as: p, raw: '{}', contentType: 'text/plain', expect: [415, 'unsupported_media_type'], why: 'a text/plain body' });
    await call({ server: S, op, params, as: p, raw: '{}', contentType: '', expect: [415, 'unsupported_media_type'], why: 'a body without Content-Type' });
    await call({ server: S, op, params, as: p, dupAuth: true, expect: [400, 'invalid_request'], why: 'two Authorization headers' });
  }
}

// untilLimited: repeats c until it is refused 429 rate_limited (checked in full), at most n times.
async function untilLimited(c, n) {
  for (let i = 0; i < n; i++) {
    const r = await call({ ...c, expect: [429, 'rate_limited'], quiet: true, why: `${c.why} (after ${i} allowed)` });
    if (r.status === 429) return;
  }
  fail(`rate limit: ${c.op} [${c.server.name}] ${c.why}: no 429 rate_limited in ${n} requests`);
}

// Per-player buckets on the four limited routes (defaults: 10, 30, 30, 60 a minute).
async function rateLimitCases(S) {
  const ticket = hexTicket();
  await untilLimited({ server: S, op: 'POST /v1/session/steam', json: { ticket }, why: 'one player logs in again and again' }, 40);
  const p = await login(S, hexTicket(), 'rate-limited player');
  await untilLimited({ server: S, op: 'POST /v1/probes/{region}/challenge', params: { region: cfg.regions[0] }, as: p,
    why: 'one player asks for probe challenges again and again' }, 80);
  await untilLimited({ server: S, op: 'POST /v1/queue', as: p, headers: { 'Idempotency-Key': 'rate-limit' }, json: ENQUEUE,
    why: 'one player enqueues again and again' }, 80);
  await untilLimited({ server: S, op: 'POST /v1/proposals/{proposal_id}/response', params: { proposal_id: NO_SUCH_ID() }, as: p,
    json: { response: 'accept', revision: 1 }, why: 'one player answers proposals again and again' }, 150);
  // Backfill responses share the proposal responses' bucket.
  await untilLimited({ server: S, op: 'POST /v1/backfill-offers/{offer_id}/response', params: { offer_id: NO_SUCH_ID() }, as: p,
    json: { response: 'accept' }, why: 'one player answers backfill offers right after proposals' }, 150);
}

// Casual backfill (SPEC 9): the game server's vacated report, and the player's offer routes over
// seeded offers (the accept that seats a player is backfill_e2e.sh's, through the real binaries).
async function backfillCases(S) {
  const vacated = 'POST /v1/servers/{server_id}/vacated';
  const get = 'GET /v1/backfill-offers/{offer_id}';
  const respond = 'POST /v1/backfill-offers/{offer_id}/response';
  const tag = crypto.randomBytes(4).toString('hex');
  const m = await acceptedMatch(S, 'backfill player');
  const [a, b] = m.players;
  const al = seedAllocation(m.id, `contract-${tag}-bf`, 17301);
  sql(`INSERT INTO assignments (match_id, player_id, slot, team, join_token, expires_at)
       VALUES (:'p1', :'p2', 0, 0, 'token', now() + interval '1 hour'), (:'p1', :'p3', 1, 1, 'token', now() + interval '1 hour')`,
    m.id, a.id, b.id);
  const sp = { server_id: al.server };
  await call({ server: S, op: vacated, params: sp, as: al.as, json: { player_id: a.id, slot: 0, generation: 1, remaining_seconds: 100 },
    expect: [200], why: 'a ranked slot vacated: never backfilled',
    check: (j) => (j.outcome === 'not_backfilled' && j.offer_id === null && j.match_id === m.id ? null : `vacated ${JSON.stringify(j)}`) });
  await call({ server: S, op: vacated, params: sp, as: al.as, json: { player_id: a.id, slot: 0, generation: 2, remaining_seconds: 100 },
    expect: [422, 'not_in_roster'], why: 'a generation the slot never had' });
  await call({ server: S, op: vacated, params: sp, as: al.as, json: { player_id: a.id, slot: 16, generation: 1, remaining_seconds: 100 },
    expect: [400, 'invalid_request'], why: 'slot 16' });

  const q = await queuedPlayer(S, 'backfill candidate');
  // Two vacancies of slot 0 (generations 1 and 2): a ticket is offered one vacancy at most once.
  const seed = (generation, expires) => sql(
    `INSERT INTO backfill_offers (match_id, slot, team, generation, vacated_player_id, ticket_id, player_id, state, expires_at, offer_until)
     VALUES (:'p1', 0, 0, :'p6'::int, :'p2', :'p3', :'p4', 'OPEN', now() + :'p5'::interval, now() + interval '1 hour') RETURNING id`,
    m.id, a.id, q.ticketId, q.id, expires, generation);
  const o1 = seed(1, '1 hour');
  await call({ server: S, op: get, params: { offer_id: o1 }, as: q, expect: [200], why: 'the offered player reads its offer',
    check: (j) => (j.state === 'OPEN' && j.id === o1 && j.revision === 1 && j.responded_at === null ? null : `offer ${JSON.stringify(j)}`) });
  await call({ server: S, op: get, params: { offer_id: o1 }, as: a, expect: [404, 'not_found'], why: "another player's offer" });
  await call({ server: S, op: get, params: { offer_id: NO_SUCH_ID() }, as: q, expect: [404, 'not_found'], why: 'no such offer' });
  await call({ server: S, op: get, params: { offer_id: 'NOT-A-UUID' }, as: q, expect: [400, 'invalid_request'], why: 'offer_id not a lowercase UUID' });
  await call({ server: S, op: respond, params: { offer_id: o1 }, as: q, json: { response: 'maybe' }, expect: [400, 'invalid_request'], why: 'response maybe' });
  await call({ server: S, op: respond, params: { offer_id: o1 }, as: q, raw: '{"response":', expect: [400, 'invalid_json'], why: 'truncated JSON' });
  await call({ server: S, op: respond, params: { offer_id: o1 }, as: q, raw: OVERSIZED, expect: [413, 'body_too_large'], why: 'body over 64 KiB' });
  await call({ server: S, op: respond, params: { offer_id: NO_SUCH_ID() }, as: q, json: { response: 'decline' }, expect: [404, 'not_found'], why: 'no such offer' });
  await call({ server: S, op: respond, params: { offer_id: o1 }, as: q, json: { response: 'decline' }, expect: [200], why: 'decline (no penalty)',
    check: (j) => (j.state === 'DECLINED' && j.revision === 2 && j.responded_at ? null : `offer ${JSON.stringify(j)}`) });
  await call({ server: S, op: respond, params: { offer_id: o1 }, as: q, json: { response: 'decline' }, expect: [200], why: 'the same decline again' });
  await call({ server: S, op: respond, params: { offer_id: o1 }, as: q, json: { response: 'accept' }, expect: [409, 'offer_closed'], why: 'accept after the decline' });
  const o2 = seed(2, '-1 second');
  await call({ server: S, op: respond, params: { offer_id: o2 }, as: q, json: { response: 'accept' }, expect: [409, 'offer_expired'], why: 'accept after the window' });
  await call({ server: S, op: get, params: { offer_id: o2 }, as: q, expect: [200], why: 'the expiry was committed',
    check: (j) => (j.state === 'EXPIRED' ? null : `offer ${JSON.stringify(j)}`) });
  const penalties = sql(`SELECT count(*) FROM penalties WHERE player_id = :'p1'`, q.id);
  if (penalties === '0') ok(`${respond}: a declined or expired backfill offer records no penalty`);
  else fail(`${respond}: ${penalties} penalties after a decline and an expiry`);
}

const SERVER_CODES = (doc['x-cosmic-clash'] || {}).server_error_codes || {};

// rawExchange: writes bytes on a new connection to S and reads the answer until the
// server closes (or 10 s). trickle: then one more byte every 100 ms until an answer.
function rawExchange(S, bytes, trickle = false) {
  const u = new URL(S.url);
  return new Promise((resolve) => {
    const sock = net.connect(Number(u.port), u.hostname);
    const chunks = [];
    let timer;
    const done = (why) => {
      clearInterval(timer);
      sock.destroy();
      const raw = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})[^\r\n]*\r\n([\s\S]*?)\r\n\r\n([\s\S]*)$/.exec(raw);
      const headers = new Headers();
      if (m) for (const line of m[2].split('\r\n')) { const i = line.indexOf(':'); if (i > 0) headers.append(line.slice(0, i), line.slice(i + 1).trim()); }
      resolve({ status: m ? Number(m[1]) : 0, headers, body: m ? m[3] : '', raw, why });
    };
    sock.setTimeout(10000, () => done('timed out'));
    sock.on('data', (d) => { chunks.push(d); clearInterval(timer); });
    sock.on('end', () => done('closed'));
    sock.on('error', (e) => done(e.message));
    sock.on('connect', () => {
      sock.write(bytes);
      if (trickle) timer = setInterval(() => sock.write('a'), 100);
    });
  });
}

// serverAnswer: a raw exchange checked against the doc's server_error_codes.
async function serverAnswer(S, what, bytes, want, code, trickle = false) {
  const t0 = Date.now();
  const r = await rawExchange(S, bytes, trickle);
  const label = `server ${want} ${code} [${S.name}] ${what}`;
  const problems = [];
  let json;
  try { json = JSON.parse(r.body); } catch { json = undefined; }
  if (r.status !== want || !json || !json.error || json.error.code !== code)
    problems.push(`expected ${want} ${code}, got ${r.status} ${json && json.error ? json.error.code : '(no JSON error)'}`);
  if (!r.headers.get('x-request-id')) problems.push('no X-Request-Id header');
  if (!/^application\/json\b/.test(r.headers.get('content-type') || '')) problems.push(`Content-Type is "${r.headers.get('content-type')}"`);
  if (json) for (const e of validate(doc.components.schemas.Error, json)) problems.push(`body vs Error schema: ${e}`);
  if (json && json.error && !(SERVER_CODES[String(r.status)] || []).includes(json.error.code))
    problems.push(`${r.status} ${json.error.code} is not in x-cosmic-clash.server_error_codes`);
  if (r.status === 429 && r.headers.get('retry-after') !== String(json && json.error && json.error.retry_after_seconds))
    problems.push(`Retry-After "${r.headers.get('retry-after')}" != retry_after_seconds`);
  if (r.status && json && json.error) exercised.add(`SERVER ${r.status} ${json.error.code}`);
  if (problems.length === 0) ok(`${label} (${Date.now() - t0} ms)`);
  else fail(label, [`sent: ${clip(JSON.stringify(String(bytes)), 300)}`, `got (${r.why}): ${clip(r.raw)}`, ...problems.map((p) => `problem: ${p}`)]);
}

// holdConnections: n connections to S that each sent one byte of a head and wait.
async function holdConnections(S, n) {
  const u = new URL(S.url);
  const socks = [];
  for (let i = 0; i < n; i++) {
    const sock = net.connect(Number(u.port), u.hostname);
    sock.on('error', () => {});
    await new Promise((resolve) => sock.on('connect', resolve));
    sock.write('G');
    socks.push(sock);
  }
  return socks;
}

async function frontDoorCases(S, bare) {
  const many = ['GET /v1/profile/ranked HTTP/1.1\r\nHost: a\r\n'];
  for (let i = 0; i < 4000; i++) many.push(`X-H${i}: 1\r\n`);
  await serverAnswer(S, 'an HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 505, 'http_version_not_supported');
  await serverAnswer(S, 'a header line without a colon', 'GET /v1/profile/ranked HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n', 400, 'malformed_request');
  await serverAnswer(S, 'Content-Length: -1', 'POST /v1/queue HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n', 400, 'malformed_request');
  await serverAnswer(S, 'about 4,000 headers', many.join('') + '\r\n', 431, 'headers_too_large');
  await serverAnswer(S, 'one header of 300 KB', `GET /v1/profile/ranked HTTP/1.1\r\nX-Big: ${'a'.repeat(300 * 1024)}\r\n\r\n`, 431, 'headers_too_large');
  await serverAnswer(S, 'a Content-Length of 10 MB', 'POST /v1/queue HTTP/1.1\r\nHost: a\r\nContent-Length: 10000000\r\n\r\n', 413, 'body_too_large');
  await serverAnswer(S, 'no such path', 'GET /v1/nothing-here HTTP/1.1\r\nHost: a\r\n\r\n', 404, 'not_found');
  await serverAnswer(S, 'a bad escape in the path', 'GET /v1/queue/%zz HTTP/1.1\r\nHost: a\r\n\r\n', 400, 'invalid_path');
  await serverAnswer(S, 'DELETE on /v1/queue', 'DELETE /v1/queue HTTP/1.1\r\nHost: a\r\n\r\n', 405, 'method_not_allowed');
  await serverAnswer(S, 'a 3,000-byte path', `GET /${'p'.repeat(3000)} HTTP/1.1\r\nHost: a\r\n\r\n`, 414, 'path_too_long');
  await serverAnswer(S, 'a head trickled a byte every 100 ms', 'GET /v1/profile/ranked HTTP/1.1\r\nX-Slow: ', 408, 'request_timeout', true);
  // One address over its cap (8 on this server) while its first 8 connections wait.
  const held = await holdConnections(S, 8);
  await serverAnswer(S, 'a 9th connection from one address', 'GET /v1/profile/ranked HTTP/1.1\r\nHost: a\r\n\r\n', 429, 'too_many_connections');
  held.forEach((h) => h.destroy());
  // The whole server at its cap (3 on the unconfigured one).
  const full = await holdConnections(bare, 3);
  await serverAnswer(bare, 'a 4th connection to a server that takes 3', 'GET /v1/profile/ranked HTTP/1.1\r\nHost: a\r\n\r\n', 503, 'server_busy');
  full.forEach((h) => h.destroy());
}

function serverCoverage() {
  for (const [status, codes] of Object.entries(SERVER_CODES))
    for (const code of codes)
      if (!exercised.has(`SERVER ${status} ${code}`)) fail(`coverage: server answer ${status} ${code} is documented but no request provoked it`);
}

// ---- issue 20 item 10: where a region's probe is answered -----------------------------------
// CC_CONTRACT_PROBE_URLS is the testkit's --probe-urls ("region=URL,..."): a
// region listed there answers at URL/v1/probes/REGION/answer, any other at the
// relative /v1/probes/REGION/answer (this server).
const PROBE_URLS = Object.fromEntries(
  (process.env.CC_CONTRACT_PROBE_URLS || '').split(',').filter(Boolean).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
);

function answerUrlProblem(S, region, answerUrl) {
  if (S.name !== 'testkit') return null;
  const want = `${PROBE_URLS[region] || ''}/v1/probes/${region}/answer`;
  return answerUrl === want ? null : `answer_url is ${JSON.stringify(answerUrl)}, not ${JSON.stringify(want)} (--probe-urls ${JSON.stringify(PROBE_URLS)})`;
}

// The server to answer at: answer_url resolved against the challenge's URL, minus the route.
function answerServer(S, region, answerUrl) {
  const route = `/v1/probes/${region}/answer`;
  const abs = new URL(answerUrl || route, `${S.url}/v1/probes/${region}/challenge`).href;
  if (!abs.endsWith(route)) fatal(`answer_url ${answerUrl} does not end in ${route}`);
  return { name: S.name, url: abs.slice(0, -route.length) };
}

// ---- issue 20 item 13: refusals before routing, listed on every operation ------------------
// Every operation documents 429 too_many_connections (the per-address cap; 8 on
// the testkit) and every operation with a path parameter 400 invalid_path; each
// is provoked here on every documented operation, through call(), so the answer
// is checked against that operation's documented response (RateLimitedError with
// Retry-After equal to retry_after_seconds, X-Request-Id).

// The malformed path parameters a client can send by mistake: each is refused
// by the raw path check (sys/http_server.h) before any route is looked up.
const BAD_PATH_PARAMS = [
  ['a/b', 'contains "/" (sent as %2F)'],
  ['a..b', 'contains ".."'],
  ['\u00e9t\u00e9', 'is not ASCII (sent as %C3%A9...)'],
];

async function invalidPathCases(S) {
  let i = 0;
  for (const op of OPS.keys()) {
    const names = [...op.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
    if (names.length === 0) continue;
    // The first such route gets all three; the others one each, in turn.
    const bad = i++ === 0 ? BAD_PATH_PARAMS : [BAD_PATH_PARAMS[i % BAD_PATH_PARAMS.length]];
    for (const [value, why] of bad) {
      const params = anyParams(op);
      params[names[0]] = value;
      await call({ server: S, op, params, expect: [400, 'invalid_path'], why: `${names[0]} ${why}`,
        check: (j) => (j.error.retryable === false ? null : 'invalid_path must be retryable: false') });
    }
  }
}

// The per-address cap: hold `cap` connections that each sent one byte (and wait
// for the rest of their head, up to the 1.5 s header deadline), then one more
// request to op. Retried a few times: a connection released just before may
// still be counted when the next ones are held, or already not when op is sent.
async function tooManyConnectionsCase(S, op, cap) {
  const params = anyParams(op);
  for (let attempt = 1; attempt <= 6; attempt++) {
    const held = await holdConnections(S, cap);
    const r = await call({ server: S, op, params, expect: [429, 'too_many_connections'], quiet: attempt < 6,
      why: `connection ${cap + 1} from one address (cap ${cap})`,
      check: (j, res) =>
        j.error.retry_after_seconds === 1 && j.error.retryable === true && res.headers.get('retry-after') === '1'
          ? null : 'too_many_connections must say retryable: true, retry_after_seconds 1, Retry-After: 1' });
    held.forEach((h) => h.destroy());
    if (r.status === 429) return;
    await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
  }
}

async function tooManyConnectionsCases(S) {
  for (const op of OPS.keys()) await tooManyConnectionsCase(S, op, 8);
}

// ---- coverage -----------------------------------------------------------------------------

function coverage() {
  const byOp = new Map();
  for (const key of documentedOutcomes()) {
    const [method, p, status, code] = key.split(' ');
    const opKey = `${method} ${p}`;
    if (!byOp.has(opKey)) byOp.set(opKey, []);
    const reason = UNPROVOKABLE[key];
    const hit = exercised.has(key);
    byOp.get(opKey).push(`${status}${code ? ' ' + code : ''}${hit ? '' : reason ? ' (allow-listed)' : ' (MISSED)'}`);
    if (hit && reason) fail(`coverage: ${key} was provoked, yet UNPROVOKABLE lists it ("${reason}"); remove it from the list`);
    else if (!hit && !reason) fail(`coverage: ${key} is documented but no request provoked it, and UNPROVOKABLE does not list it`);
  }
  console.log('\ncoverage (status code; every one provoked unless marked):');
  for (const [opKey, items] of byOp) console.log(`  ${opKey}\n      ${items.join(', ')}`);
  console.log('\nunprovokable (allow-listed), by reason:');
  const byReason = new Map();
  for (const [key, reason] of Object.entries(UNPROVOKABLE)) byReason.set(reason, [...(byReason.get(reason) || []), key]);
  for (const [reason, keys] of byReason) console.log(`  ${reason}:\n      ${keys.join('\n      ')}`);
  const n = documentedOutcomes().length;
  const hit = documentedOutcomes().filter((k) => exercised.has(k)).length;
  console.log(`\n${hit} of ${n} documented (route, status, code) outcomes provoked, ${Object.keys(UNPROVOKABLE).length} allow-listed\n`);
}

// ---- main -------------------------------------------------------------------------------

let OPERATOR;
let schemasReady = false;

async function main() {
  compareRoutes();
  checkAllowList();
  if (STATIC_ONLY) return;
  loadAjv();
  schemasReady = true;
  const api = { name: 'testkit', url: need('CC_CONTRACT_API') };
  const steam = { name: 'steam+db-down', url: need('CC_CONTRACT_STEAM_API') };
  const bare = { name: 'unconfigured', url: need('CC_CONTRACT_BARE_API') };
  OPERATOR = { token: need('CC_CONTRACT_OPERATOR_TOKEN'), who: 'operator token' };
  need('CC_CONTRACT_PG_DSN');
  need('CC_CONTRACT_WORKLOAD_SECRET');

  // Players: main (probed, queues), unprobed, cooled down, expired, banned.
  const main = await login(api, hexTicket(), 'main player');
  const unprobed = await login(api, hexTicket(), 'unprobed player');
  const cooled = await login(api, hexTicket(), 'cooled-down player');
  const expired = await login(api, hexTicket(), 'expired player');
  const banned = await login(api, hexTicket(), 'player to ban');
  sql("UPDATE sessions SET expires_at = now() - interval '1 second' WHERE player_id = :'p1'", expired.id);

  await scenario('session', () => sessionCases(api));
  await scenario('probes', () => probeCases(api, main, unprobed));
  await scenario('queue', () => queueCases(api, main, unprobed));
  await scenario('cooldown', async () => { await probe(api, cooled, cfg.regions[0]); await cooldownCases(api, cooled); });
  await scenario('profile', () => profileCases(api, main));
  await scenario('proposals', () => proposalCases(api));
  await scenario('server routes', () => serverCases(api));
  await scenario('match summary', () => matchCases(api));
  await scenario('parties', () => partyCases(api));
  await scenario('backfill', () => backfillCases(api));
  await scenario('auth', () => authCases(api, expired));
  await scenario('ban', () => banCases(api, banned));
  await scenario('dead letters', () => deadLetterCases(api));
  await scenario('operator console', async () => consoleCases(api, await login(api, hexTicket(), 'player the console fences')));
  await scenario('database down', () => outageCases(steam, main));
  await scenario('not configured', () => unconfiguredCases(bare, main));
  await scenario('every route', () => everyRouteCases(api, main));
  await scenario('rate limits', () => rateLimitCases(api));
  await scenario('server answers', () => frontDoorCases(api, bare));
  // issue 20 item 13 (docs branch): pre-routing refusals on every operation.
  await scenario('invalid path on every route with a parameter', () => invalidPathCases(api));
  await scenario('connection cap on every route', () => tooManyConnectionsCases(api));
  serverCoverage();
}

main()
  .catch((e) => fail(`contract-test crashed: ${e.message}`, [e.stack]))
  .finally(() => {
    if (schemasReady) coverage();
    console.log(`contract: ${passed} passed, ${failed} failed`);
    process.exitCode = failed || passed === 0 ? 1 : 0;
  });
