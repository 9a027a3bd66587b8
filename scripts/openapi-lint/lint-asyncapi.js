#!/usr/bin/env node
// lint-asyncapi.js DOC: validates an AsyncAPI document (contracts/v1/events.json)
// with the official parser (@asyncapi/parser, pinned in package.json: the
// AsyncAPI JSON Schema plus its Spectral ruleset), failing on any error and
// on any warning (a contract clients build from has no "mostly valid"), then
// checks our own conventions: every message of the channel is sent by the
// operation, every event message's payload pins its `event` name with const
// and requires the envelope fields. Prints each problem with its path.
'use strict';
const fs = require('fs');
const path = require('path');
const modules = path.resolve(__dirname, '../../build/node/node_modules');
const { Parser, fromFile } = require(path.join(modules, '@asyncapi/parser'));

const ENVELOPE = ['id', 'position', 'event', 'resource_type', 'resource_id', 'revision', 'player_ids', 'occurred_at',
	'payload'];

async function main() {
	const file = process.argv[2];
	if (!file) {
		console.error('usage: lint-asyncapi.js DOC');
		process.exit(2);
	}
	const parser = new Parser();
	const { document, diagnostics } = await fromFile(parser, file).parse();
	let problems = 0;
	for (const d of diagnostics) {
		// severity: 0 error, 1 warning, 2 info, 3 hint
		if (d.severity > 1)
			continue;
		problems++;
		console.error(`${file}: ${d.severity === 0 ? 'error' : 'warning'} ${d.code}: ${d.message} at /${d.path.join('/')}`);
	}
	if (!document) {
		console.error(`${file}: not a valid AsyncAPI document (${problems} problems above)`);
		process.exit(1);
	}
	const raw = JSON.parse(fs.readFileSync(file, 'utf8'));
	const channel = raw.channels && raw.channels.events;
	const ops = Object.values(raw.operations || {});
	const sent = new Set();
	for (const op of ops)
		for (const m of op.messages || [])
			sent.add(m.$ref.split('/').pop());
	const names = new Set();
	for (const [key, msg] of Object.entries(raw.components.messages)) {
		if (!channel.messages[key]) {
			console.error(`${file}: components.messages.${key} is not a message of channel events`);
			problems++;
		}
		if (!sent.has(key)) {
			console.error(`${file}: message ${key} is sent by no operation`);
			problems++;
		}
		const p = msg.payload || {};
		const ev = p.properties && p.properties.event;
		if (!ev || ev.const !== msg.name) {
			console.error(`${file}: message ${key}: payload.properties.event must be {"const": "${msg.name}"}`);
			problems++;
		}
		if (names.has(msg.name)) {
			console.error(`${file}: message name ${msg.name} appears twice`);
			problems++;
		}
		names.add(msg.name);
		if (!msg.name.startsWith('stream.')) {
			const missing = ENVELOPE.filter((f) => !(p.required || []).includes(f));
			if (missing.length) {
				console.error(`${file}: event ${msg.name}: the envelope fields ${missing.join(', ')} are not required`);
				problems++;
			}
			if (p.additionalProperties !== false) {
				console.error(`${file}: event ${msg.name}: the envelope must say additionalProperties: false`);
				problems++;
			}
		}
	}
	const codes = Object.keys((channel && channel['x-close-codes']) || {});
	for (const c of ['1000', '1001', '1002', '1007', '1008', '1009', '1011', '1013'])
		if (!codes.includes(c)) {
			console.error(`${file}: x-close-codes lacks ${c}`);
			problems++;
		}
	if (problems) {
		console.error(`${file}: ${problems} problems`);
		process.exit(1);
	}
	// The event names, one a line, for the caller's cross-check against the code.
	if (process.argv[3] === '--names')
		for (const n of [...names].sort())
			console.log(n);
}
main().catch((e) => {
	console.error(`lint-asyncapi: ${e.stack || e}`);
	process.exit(1);
});
