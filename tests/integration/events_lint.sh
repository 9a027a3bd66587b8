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
