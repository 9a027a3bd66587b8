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
# Redocly comes from npm, pinned with a lockfile (scripts/openapi-lint/),
# and is installed into build/node/ the first time or when the lockfile
# changes. Version 1.34.20 because it supports Node >= 18.17: Debian 12's
# own nodejs is 18.20; the 2.x line wants Node >= 20.19. When npm is missing
# and we are root, Debian's nodejs and npm are installed with apt-get.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
spec=${1:-contracts/v1/openapi.json}
config=contracts/v1/redocly.yaml
tooldir=scripts/openapi-lint
prefix=build/node
redocly=$prefix/node_modules/.bin/redocly
min_node=18.17.0

say() { echo "lint-openapi: $*" >&2; }

ensure_npm() {
	command -v npm >/dev/null && command -v node >/dev/null && return 0
	if [[ $(id -u) -ne 0 ]]; then
		say "node and npm are missing; run as root, or: sudo apt-get install -y nodejs npm"
		return 1
	fi
	say "installing Debian packages nodejs npm"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
	if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
		say "apt-get ran, yet node or npm is still not on PATH"
		return 1
	fi
}

# node_ok: true when the installed Node meets the linter's engines field.
node_ok() {
	node -e '
		const want = process.argv[1].split(".").map(Number);
		const have = process.versions.node.split(".").map(Number);
		for (let i = 0; i < 3; i++)
			if (have[i] !== want[i]) process.exit(have[i] > want[i] ? 0 : 1);
	' "$min_node"
}

# ensure_redocly: (re)installs the locked tree when build/node is missing or
# was installed from another lockfile. Under flock, so two test runs sharing
# the checkout do not install over each other.
ensure_redocly() {
	mkdir -p build
	exec 9>build/.node.lock
	flock 9
	if [[ -x $redocly ]] && cmp -s "$tooldir/package-lock.json" "$prefix/package-lock.json"; then
		return 0
	fi
	say "installing the pinned Redocly CLI into $prefix (npm ci)"
	rm -rf "$prefix"
	mkdir -p "$prefix"
	cp "$tooldir/package.json" "$tooldir/package-lock.json" "$prefix/"
	# --ignore-scripts: the linter is plain JavaScript; no package needs an
	# install script, so none gets to run.
	if ! npm ci --prefix "$prefix" --no-audit --no-fund --ignore-scripts --loglevel=error >&2; then
		rm -rf "$prefix"
		say "npm ci failed; see above"
		return 1
	fi
}

ensure_npm
if ! node_ok; then
	say "node $(node --version) is too old: the linter needs >= $min_node"
	exit 1
fi
ensure_redocly

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
