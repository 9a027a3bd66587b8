#!/usr/bin/env bash
# The live-events contract (contracts/v1/events.json, AsyncAPI 3.0 of
# GET /v1/events) passes the official AsyncAPI parser's validation with no
# error or warning and our conventions (scripts/openapi-lint/lint-asyncapi.js),
# the linter refuses planted errors (so a broken document cannot pass
# quietly), and the events it lists are exactly the outbox events the code
# writes for players: every cc_outbox_append event name in libcommon/store/*.c
# and migrations/*.up.sql is a message of the document or listed under
# x-not-on-the-stream, and every documented event is written somewhere.
# Needs no database; its first run installs the linter from npm.
set -uo pipefail
top=${CC_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$top"
doc=contracts/v1/events.json
lint="node scripts/openapi-lint/lint-asyncapi.js"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/events_lint.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "events_lint: FAILED: $*" >&2; status=1; }

scripts/npm-tools.sh || { echo "events_lint: FAILED: scripts/npm-tools.sh could not install the linter" >&2; exit 1; }

if $lint "$doc" --names >"$tmp/names"; then
	echo "events_lint: $doc passes the AsyncAPI parser and the conventions ($(wc -l <"$tmp/names") messages)"
else
	fail "$lint $doc (problems above)"
fi

# Planted errors: each must be refused (and say where).
plant() { # plant NAME PYTHON-EXPR-ON-d EXPECTED-TEXT
	python3 -c "
import json, sys
d = json.load(open('$doc'))
$2
json.dump(d, open('$tmp/$1.json', 'w'))" || { fail "could not plant $1"; return; }
	if $lint "$tmp/$1.json" >/dev/null 2>"$tmp/$1.err"; then
		fail "$lint accepted planted error $1"
	elif ! grep -q -- "$3" "$tmp/$1.err"; then
		fail "planted error $1: the linter's output lacks '$3':"; cat "$tmp/$1.err" >&2
	else
		echo "events_lint: planted error $1 refused"
	fi
}
plant bad_action "d['operations']['receiveEvents']['action'] = 'publish'" '/operations/receiveEvents/action'
plant dangling_ref "d['channels']['events']['messages']['ticket_queued']['\$ref'] = '#/components/messages/nope'" 'does not exist'
plant unknown_field "d['channels']['events']['adress'] = d['channels']['events'].pop('address')" 'adress'
plant loose_envelope "d['components']['messages']['ticket_queued']['payload']['required'].remove('revision')" 'revision'
plant unsent_message "d['operations']['receiveEvents']['messages'].pop()" 'sent by no operation'
plant no_1013 "del d['channels']['events']['x-close-codes']['1013']" 'lacks 1013'

# The message validator the stream's contract test uses
# (tests/contract/events-validator.js): documented messages pass, each
# broken one is refused on its own.
validate="node tests/contract/events-validator.js $doc"
env='"id": 812, "position": 40417, "resource_id": "5b1c0d1e-7a55-4b8e-9d0c-2f1e8a6b3c4d", "revision": 3, "player_ids": ["0f9d3c7e-1b2a-4c5d-8e6f-7a8b9c0d1e2f"], "occurred_at": "2025-01-15T18:04:05.120Z"'
cat >"$tmp/good.jsonl" <<JSON
{$env, "event": "ticket.proposed", "resource_type": "ticket", "payload": {"proposal_id": "6b1c0d1e-7a55-4b8e-9d0c-2f1e8a6b3c4d"}}
{$env, "event": "ticket.queued", "resource_type": "ticket", "payload": {}}
{$env, "event": "allocation.published", "resource_type": "allocation", "payload": {"match_id": "6b1c0d1e-7a55-4b8e-9d0c-2f1e8a6b3c4d", "server_id": "gs-1"}}
{$env, "event": "rating.changed", "resource_type": "rating", "payload": {"playlist": "ranked_2v2", "match_id": "6b1c0d1e-7a55-4b8e-9d0c-2f1e8a6b3c4d", "rating": 1512.5, "deviation": 180.2, "volatility": 0.06, "games": 4}}
{"event": "stream.ready", "position": 0, "replayed": 0}
{"event": "stream.resync", "position": 40417, "reason": "too_old"}
JSON
if $validate "$tmp/good.jsonl"; then
	echo "events_lint: $(grep -c . "$tmp/good.jsonl") documented messages pass the validator"
else
	fail "$validate rejected documented messages (above)"
fi
n_bad=0
while IFS='|' read -r what line; do
	printf '%s\n' "$line" >"$tmp/bad.jsonl"
	if $validate "$tmp/bad.jsonl" 2>/dev/null; then
		fail "$validate accepted a message with $what: $line"
	else
		n_bad=$((n_bad + 1))
	fi
done <<JSON
no revision|{"id": 1, "position": 2, "event": "ticket.queued", "resource_type": "ticket", "resource_id": "5b1c0d1e-7a55-4b8e-9d0c-2f1e8a6b3c4d", "player_ids": [], "occurred_at": "2025-01-15T18:04:05.120Z", "payload": {}}
a reference|{$env, "ref": true, "event": "ticket.queued", "resource_type": "ticket", "payload": {}}
an uppercase uuid|{$env, "event": "ticket.proposed", "resource_type": "ticket", "payload": {"proposal_id": "6B1C0D1E-7A55-4B8E-9D0C-2F1E8A6B3C4D"}}
no proposal_id|{$env, "event": "ticket.proposed", "resource_type": "ticket", "payload": {}}
the wrong resource_type|{$env, "event": "ticket.queued", "resource_type": "match", "payload": {}}
an undocumented event|{$env, "event": "ticket.teleported", "resource_type": "ticket", "payload": {}}
an undocumented resync reason|{"event": "stream.resync", "position": 1, "reason": "bored"}
JSON
[[ $n_bad -eq 7 ]] && echo "events_lint: the validator refuses all $n_bad broken messages"

# The code's event names against the document's.
{
	grep -hoE '\.event = "[a-z][a-z0-9_.]*"' libcommon/store/*.c | sed -E 's/.*"(.*)"/\1/'
	grep -hoE '(announce|announce_proposal|transition|move)\([^;]*"(ticket|proposal|match|allocation|rating)\.[a-z_]+"' \
		libcommon/store/*.c | grep -oE '"(ticket|proposal|match|allocation|rating)\.[a-z_]+"' | tr -d '"'
	grep -hoE "cc_outbox_append\('[a-z][a-z0-9_.]*'" libcommon/store/*.c migrations/*.up.sql | sed -E "s/.*'(.*)'/\1/"
} | grep -v '^$' | sort -u >"$tmp/code"
python3 -c "import json; print('\n'.join(json.load(open('$doc'))['x-not-on-the-stream']['events']))" | sort -u >"$tmp/quiet"
grep -v '^stream\.' "$tmp/names" | sort -u >"$tmp/documented"
sort -u "$tmp/documented" "$tmp/quiet" >"$tmp/known"
if [[ $(wc -l <"$tmp/code") -lt 20 ]]; then
	fail "found only $(wc -l <"$tmp/code") event names in the code (the grep is broken?): $(tr '\n' ' ' <"$tmp/code")"
fi
undocumented=$(comm -23 "$tmp/code" "$tmp/known" | tr '\n' ' ')
unwritten=$(comm -13 "$tmp/code" "$tmp/known" | tr '\n' ' ')
[[ -z $undocumented ]] || fail "events written in libcommon/store or migrations but not in $doc: $undocumented"
[[ -z $unwritten ]] || fail "events in $doc that no code writes: $unwritten"
[[ -n $undocumented$unwritten ]] || echo "events_lint: the $(wc -l <"$tmp/code") event names in the code are the document's"
exit $status
