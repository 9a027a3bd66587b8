#!/usr/bin/env bash
# The REST contract (contracts/v1/openapi.json) passes the OpenAPI lint and
# our conventions check. Needs no database; it lives with the integration
# tests because its first run installs the linter from npm.
set -uo pipefail
top=${CC_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
if "$top/scripts/lint-openapi.sh"; then
	echo "openapi_lint: contracts/v1/openapi.json passes"
	exit 0
fi
echo "openapi_lint: FAILED: contracts/v1/openapi.json has lint errors (listed above)" >&2
exit 1
