#!/usr/bin/env node
// check-conventions.js FILE: the house rules of contracts/v1/openapi.json
// that a generic OpenAPI linter cannot know. Prints one line per problem and
// exits 1 if there is any; plain Node, no packages.
//
//  - the file is canonical: JSON.stringify(doc, null, 2) plus a newline, so
//    diffs stay small and a duplicate key (silently dropped by parsers)
//    cannot hide in it;
//  - every operation states its security, and lists in
//    x-cosmic-clash.error_codes exactly the error statuses it answers, each
//    with snake_case codes that the shared response's description names;
//  - error responses use the Error schema (429: RateLimitedError);
//  - every request body refuses unknown fields (additionalProperties: false).
'use strict';
const fs = require('fs');

const file = process.argv[2];
if (!file) {
  console.error('usage: check-conventions.js FILE');
  process.exit(2);
}
const problems = [];
const text = fs.readFileSync(file, 'utf8');
let doc;
try {
  doc = JSON.parse(text);
} catch (e) {
  console.error(`${file}: not JSON: ${e.message}`);
  process.exit(1);
}

if (JSON.stringify(doc, null, 2) + '\n' !== text) {
  const want = (JSON.stringify(doc, null, 2) + '\n').split('\n');
  const have = text.split('\n');
  let i = 0;
  while (i < want.length && want[i] === have[i]) i++;
  problems.push(`line ${i + 1}: not canonical JSON (2-space indent, no duplicate keys, one trailing newline); ` +
    `expected ${JSON.stringify(want[i] ?? '<end of file>')}`);
}

// resolve: follows local "#/a/b" references until a node without $ref.
function resolve(node) {
  for (let hops = 0; node && node.$ref && hops < 16; hops++) {
    if (!node.$ref.startsWith('#/')) return undefined;
    node = node.$ref.slice(2).split('/').reduce((n, k) => (n === undefined ? n : n[k.replace(/~1/g, '/').replace(/~0/g, '~')]), doc);
  }
  return node;
}

const SNAKE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

for (const [path, item] of Object.entries(doc.paths || {})) {
  for (const method of METHODS.filter((m) => item[m])) {
    const op = item[method];
    const where = `${method.toUpperCase()} ${path}`;
    if (!Array.isArray(op.security)) problems.push(`${where}: no explicit security (use [] for none)`);

    const errorStatuses = Object.keys(op.responses || {}).filter((s) => /^[45]/.test(s)).sort();
    const codes = (op['x-cosmic-clash'] || {}).error_codes;
    if (!codes) {
      problems.push(`${where}: missing x-cosmic-clash.error_codes`);
    } else {
      const listed = Object.keys(codes).sort();
      if (listed.join() !== errorStatuses.join())
        problems.push(`${where}: error_codes lists statuses [${listed}] but responses are [${errorStatuses}]`);
    }

    for (const status of errorStatuses) {
      const resp = resolve(op.responses[status]);
      const media = resp && resp.content && resp.content['application/json'];
      const want = status === '429' ? 'RateLimitedError' : 'Error';
      if (!media || !media.schema || media.schema.$ref !== `#/components/schemas/${want}`)
        problems.push(`${where} ${status}: body schema must be $ref ${want}`);
      for (const code of (codes && codes[status]) || []) {
        if (!SNAKE.test(code)) problems.push(`${where} ${status}: code "${code}" is not snake_case`);
        else if (!resp || !String(resp.description).includes('`' + code + '`'))
          problems.push(`${where} ${status}: code "${code}" is not named in the response's description`);
      }
    }

    if (op.requestBody) {
      const body = resolve(op.requestBody);
      const schema = resolve(body && body.content && body.content['application/json'] && body.content['application/json'].schema);
      if (!schema || schema.additionalProperties !== false)
        problems.push(`${where}: request body schema must set additionalProperties: false`);
    }
  }
}

for (const p of problems) console.error(`${file}: ${p}`);
process.exit(problems.length ? 1 : 0);
