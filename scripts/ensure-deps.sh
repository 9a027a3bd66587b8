#!/usr/bin/env bash
# Installs the Debian packages the build, tests and demo need, starting
# from a minimal Debian 12 (no make, gcc or git): .ci/run calls it with bash
# before `make test`. As root it runs a non-interactive apt-get for
# whatever is missing; otherwise it names exactly what is missing and
# fails. Node and npm are installed on demand by scripts/npm-tools.sh.
set -euo pipefail

packages=(
	gcc make pkg-config git ca-certificates
	libmicrohttpd-dev libcurl4-openssl-dev libpq-dev libhiredis-dev libcjson-dev
	libsodium-dev libenet-dev check libsubunit-dev
	libwslay-dev # sys/ws: RFC 6455 framing
	python3-websockets # tests: a real WebSocket client
	postgresql postgresql-client redis-server redis-tools
	prometheus curl jq procps iproute2 util-linux
	clang libclang-rt-14-dev # make fuzz: libFuzzer (tests/fuzz)
	python3 # /usr/bin/python3 runs tests/golden/tokens.py, the independent token implementation
	chromium fonts-dejavu-core # tests/integration/console_browser.sh: headless Chromium driven by puppeteer-core (no browser download)
	podman buildah mmdebstrap runc # make images, the image smoke test and the disposable stack (runc: scripts/containers.conf)
)

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
	echo "ensure-deps: missing Debian packages: ${missing[*]}" >&2
	echo "ensure-deps: run as root, or: sudo apt-get install -y ${missing[*]}" >&2
	exit 1
fi

echo "ensure-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# Package post-install scripts must not start system-wide servers: the
# tests start their own disposable ones.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [[ ! -e $policy ]]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy" && created_policy=1
fi
trap '[[ $created_policy -eq 1 ]] && rm -f "$policy"' EXIT
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
