#!/usr/bin/env bash
# npm-tools.sh: installs the project's pinned Node tools into build/node and
# exits 0 once they are usable; the one place that runs `npm ci`.
#
# The tools are listed in scripts/openapi-lint/package.json and pinned by its
# package-lock.json: Redocly CLI (scripts/lint-openapi.sh) and ajv +
# ajv-formats (tests/contract/contract-test.js), and @asyncapi/parser
# (scripts/openapi-lint/lint-asyncapi.js, for contracts/v1/events.json;
# puppeteer-core, tests/integration/console_browser.sh's browser driver;
# its Spectral packages want "^18.18 || >=20.17", inside the floor). The tree is reinstalled when
# build/node is missing, half-installed, or was installed from another
# lockfile. When npm is missing and we are root, Debian's nodejs and npm are
# installed with apt-get.
#
# Node floor: 18.19.0, the strictest engines field in the lockfile
# (@opentelemetry/*, pulled in by Redocly: "^18.19.0 || >=20.6.0"). Debian
# 12's own nodejs is 18.20. Redocly stays on 1.34.x because 2.x wants Node
# >= 20.19; jsep is pinned to 1.4.0 (overrides) because later ones want
# Node >= 20.16. ajv 8.20.0 and ajv-formats 3.0.1 declare no engines.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
tooldir=scripts/openapi-lint
prefix=build/node
stamp=$prefix/.installed-from.package-lock.json
min_node=18.19.0

say() { echo "npm-tools: $*" >&2; }

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

# node_ok: true when the installed Node meets min_node.
node_ok() {
	node -e '
		const want = process.argv[1].split(".").map(Number);
		const have = process.versions.node.split(".").map(Number);
		for (let i = 0; i < 3; i++)
			if (have[i] !== want[i]) process.exit(have[i] > want[i] ? 0 : 1);
	' "$min_node"
}

# ensure_tree: (re)installs the locked tree unless the stamp, written only
# after a successful `npm ci`, equals the lockfile. Under flock, so two test
# runs sharing the checkout do not install over each other.
ensure_tree() {
	mkdir -p build
	exec 9>build/.node.lock
	flock 9
	if cmp -s "$tooldir/package-lock.json" "$stamp"; then
		return 0
	fi
	say "installing the pinned Node tools into $prefix (npm ci)"
	rm -rf "$prefix"
	mkdir -p "$prefix"
	cp "$tooldir/package.json" "$tooldir/package-lock.json" "$prefix/"
	# --ignore-scripts: every tool is plain JavaScript; no package needs an
	# install script, so none gets to run.
	if ! npm ci --prefix "$prefix" --no-audit --no-fund --ignore-scripts --loglevel=error >&2; then
		rm -rf "$prefix"
		say "npm ci failed; see above"
		return 1
	fi
	cp "$tooldir/package-lock.json" "$stamp"
}

# puppeteer-core (tests/integration/console_browser.sh) drives Debian's
# Chromium; nothing here may fetch a browser of its own.
export PUPPETEER_SKIP_DOWNLOAD=1 PUPPETEER_SKIP_CHROMIUM_DOWNLOAD=1
ensure_npm
if ! node_ok; then
	say "node $(node --version 2>&1) is older than $min_node or does not run (output above)"
	exit 1
fi
ensure_tree
