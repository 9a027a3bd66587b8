#!/usr/bin/env bash
# The REST contract (contracts/v1/openapi.json) passes the OpenAPI lint and
# our conventions check, and tests/integration/openapi_doc_checks.js: every
# operation lists the refusals that come before routing (429
# too_many_connections; 400 invalid_path where the path has a parameter), and
# the README's example request bodies match the documented schemas, and the
# README's rating example equals glicko2_ref.py (--self-test). Needs no
# database; it lives with the integration tests because its first run
# installs the linter from npm.
set -uo pipefail
top=${CC_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
status=0
if "$top/scripts/lint-openapi.sh"; then
	echo "openapi_lint: contracts/v1/openapi.json passes"
else
	echo "openapi_lint: FAILED: contracts/v1/openapi.json has lint errors (listed above)" >&2
	status=1
fi
if node "$top/tests/integration/openapi_doc_checks.js" "$top/contracts/v1/openapi.json" "$top/README.md"; then
	echo "openapi_lint: pre-routing refusals listed on every operation; README examples match the contract"
else
	echo "openapi_lint: FAILED: node tests/integration/openapi_doc_checks.js (problems above)" >&2
	status=1
fi
# The rating rules as README.md states them (composite opponent, the 350 cap),
# reproduced by the independent Glicko-2 that server_routes.sh compares cc-api with.
if python3 "$top/tests/integration/glicko2_ref.py" --self-test "$top/README.md"; then
	echo "openapi_lint: README.md's rating example equals tests/integration/glicko2_ref.py"
else
	echo "openapi_lint: FAILED: python3 tests/integration/glicko2_ref.py --self-test README.md (above)" >&2
	status=1
fi
exit $status
