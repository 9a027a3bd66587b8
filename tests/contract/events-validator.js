#!/usr/bin/env node
// events-validator.js: checks live messages of GET /v1/events against
// contracts/v1/events.json (AsyncAPI 3.0), for the contract test of the
// stream (issue 22) and for tests/integration/events_lint.sh.
//
//   const { loadEventValidator } = require('./events-validator');
//   const check = loadEventValidator(docPath, nodePrefix);
//   const problems = check(message); // [] when the message is valid
//
// A message is picked by its `event` (a name no message of the document
// has is a problem: the stream sends nothing undocumented). The payload
// schemas are JSON Schema draft-07 (AsyncAPI's default), compiled by ajv in
// strict mode with ajv-formats, "#/components/schemas/X" refs resolved
// against the document.
//
// CLI: node events-validator.js DOC FILE  (FILE: one JSON message a line;
// exits 1 and names each invalid line).
'use strict';
const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');

function loadEventValidator(docPath, nodePrefix) {
  const doc = JSON.parse(fs.readFileSync(docPath, 'utf8'));
  const req = createRequire(path.join(nodePrefix, 'package.json'));
  let Ajv = req('ajv');
  let addFormats = req('ajv-formats');
  Ajv = Ajv.default || Ajv;
  addFormats = addFormats.default || addFormats;
  const ajv = new Ajv({ allErrors: true, strict: true });
  addFormats(ajv);
  const ID = 'cc-events.json';
  const fix = (s) => JSON.parse(JSON.stringify(s).replace(/"#\/components\/schemas\//g, `"${ID}#/definitions/`));
  ajv.addSchema({ $id: ID, definitions: fix(doc.components.schemas) });
  const byName = new Map();
  for (const m of Object.values(doc.components.messages)) byName.set(m.name, ajv.compile(fix(m.payload)));
  return (msg) => {
    if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) return ['not a JSON object'];
    const v = byName.get(msg.event);
    if (!v) return [`event ${JSON.stringify(msg.event)} is not a message of ${docPath}`];
    if (v(msg)) return [];
    return v.errors.map((e) => `${msg.event}: ${e.instancePath || '/'} ${e.message}${e.params && e.params.additionalProperty ? ` (${e.params.additionalProperty})` : ''}`);
  };
}

module.exports = { loadEventValidator };

if (require.main === module) {
  const [docPath, file] = process.argv.slice(2);
  if (!docPath || !file) {
    console.error('usage: events-validator.js DOC FILE');
    process.exit(2);
  }
  const check = loadEventValidator(docPath, path.resolve(__dirname, '../../build/node'));
  let bad = 0;
  fs.readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    let msg;
    try {
      msg = JSON.parse(line);
    } catch (e) {
      console.error(`${file}:${i + 1}: not JSON: ${e.message}`);
      bad++;
      return;
    }
    const problems = check(msg);
    for (const p of problems) console.error(`${file}:${i + 1}: ${p}`);
    if (problems.length) bad++;
  });
  process.exit(bad ? 1 : 0);
}
