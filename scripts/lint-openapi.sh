#!/usr/bin/env bash
# lint-openapi.sh [FILE]: checks the REST contract, contracts/v1/openapi.json
# by default, and exits non-zero with every problem printed if it is wrong.
#
# Two passes: scripts/openapi-lint/check-conventions.js (our own rules: the
# file is canonical pretty-printed JSON, every route lists its error codes,
# request bodies refuse unknown fields, ...) and Redocly CLI's `lint` with
# contracts/v1/redocly.yaml (OpenAPI 3.1 structure, refs, examples against
# schemas, required headers).
#
# Redocly is installed, pinned by scripts/openapi-lint/package-lock.json,
# into build/node by scripts/npm-tools.sh (shared with the contract test).
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
spec=${1:-contracts/v1/openapi.json}
config=contracts/v1/redocly.yaml
tooldir=scripts/openapi-lint
redocly=build/node/node_modules/.bin/redocly

say() { echo "lint-openapi: $*" >&2; }

scripts/npm-tools.sh || { say "could not install the pinned Node tools (above)"; exit 1; }

[[ -f $spec ]] || { say "$spec: no such file"; exit 1; }
status=0
node "$tooldir/check-conventions.js" "$spec" || status=1
# No telemetry and no update check: tests talk to nothing outside.
REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
	"$redocly" lint --config "$config" --format=codeframe "$spec" || status=1
if [[ $status -ne 0 ]]; then
	say "$spec: FAILED (problems above)"
else
	say "$spec: ok"
fi
exit $status
