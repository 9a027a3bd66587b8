#!/usr/bin/env bash
# .ci/run works on a minimal Debian 12 without make: it runs
# scripts/ensure-deps.sh (with bash) before make, and ensure-deps.sh asks
# for make, gcc, git, curl and jq among the rest. Run against stand-ins on
# a PATH holding only bash and dirname: dpkg-query (nothing installed, or
# everything), id (not root, so nothing is installed for real) and make
# (records its call).
source "$(dirname "$0")/lib.sh"

fake="$T_DIR/bin"
mkdir -p "$fake"
ln -s "$(command -v bash)" "$fake/bash"
ln -s "$(command -v dirname)" "$fake/dirname"
printf '#!%s\necho 1000\n' "$(command -v bash)" >"$fake/id"
printf '#!%s\n[[ -e "%s/all-installed" ]] && printf "install ok installed" && exit 0\nexit 1\n' \
	"$(command -v bash)" "$T_DIR" >"$fake/dpkg-query"
chmod +x "$fake"/id "$fake"/dpkg-query # no make yet: a minimal Debian has none
ci() { env -i PATH="$fake" HOME="$T_DIR" "$fake/bash" "$TOP/.ci/run" >"$T_DIR/out" 2>"$T_DIR/err"; }

# 1. Nothing installed, not root: ensure-deps names what is missing and
# stops the run before make is looked for.
rc=0; ci || rc=$?
expect_eq ".ci/run with nothing installed (not root): exit status" 1 "$rc"
grep -q 'ensure-deps: missing Debian packages:' "$T_DIR/err" ||
	fail ".ci/run did not run ensure-deps.sh first; stderr: $(cat "$T_DIR/err")"
missing=" $(sed -n 's/^ensure-deps: missing Debian packages: //p' "$T_DIR/err") "
for p in make gcc git curl jq ca-certificates pkg-config postgresql redis-server podman buildah mmdebstrap runc; do
	[[ "$missing" == *" $p "* ]] || fail "ensure-deps.sh does not install $p; it asked for:$missing"
done
if grep -q 'command not found' "$T_DIR/err"; then fail ".ci/run called a missing tool: $(cat "$T_DIR/err")"; fi

# 2. Everything installed (make too): .ci/run goes on to `make test`.
touch "$T_DIR/all-installed"
printf '#!%s\necho "make $*" >>"%s/make.calls"\n' "$(command -v bash)" "$T_DIR" >"$fake/make"
chmod +x "$fake/make"
rc=0; ci || rc=$?
expect_eq ".ci/run with everything installed: exit status" 0 "$rc"
expect_eq ".ci/run's make calls" "make test" "$(cat "$T_DIR/make.calls")"
pass ".ci/run runs ensure-deps.sh before make; it asks for make, gcc, git, curl, jq"
