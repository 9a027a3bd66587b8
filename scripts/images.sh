#!/usr/bin/env bash
# images.sh [build [TARGET...] | base | sizes | list] - the container images
# (`make images` = images.sh build): every target of the top-level Dockerfile
# built with podman from the Debian archive alone, then each image's size.
#
#   base   the FROM image, localhost/cosmic-clash/debian:bookworm-minbase: a
#          bookworm root filesystem made by `mmdebstrap --variant=minbase`
#          (merged /usr without the usrmerge package and its perl; man pages,
#          info and translations left out, copyright files kept)
#          and `podman import`ed. The tarball is cached in $CC_IMAGE_CACHE
#          (default ${XDG_CACHE_HOME:-~/.cache}/cosmic-clash/images) under a
#          key of everything that shapes it; the image carries the key as a
#          label, so a matching image is reused without even reading it.
#   build  base, then `podman build --isolation=chroot --pull=never` per
#          target (layer cache: after the first target the builder stage is
#          reused), OCI labels from the Makefile's VERSION and git; then sizes.
#   sizes  each image's size, and the floor: the base plus the binaries.
#   list   the targets, one per line.
#
# Containers run with scripts/containers.conf (runc, explicit ulimits: crun
# fails on this kind of host's hybrid cgroups); CONTAINERS_CONF points at it
# unless the caller set one.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
export CONTAINERS_CONF=${CONTAINERS_CONF:-$top/scripts/containers.conf}

REPO=localhost/cosmic-clash
BASE=$REPO/debian:bookworm-minbase
SERVICE_TARGETS=(cc-api cc-matcher cc-allocator cc-maintenance cc-migrate cc-gameserver)
DEV_TARGETS=(fake-steam stack-postgres stack-redis)
MIRROR=${CC_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY=${CC_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
CACHE=${CC_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cosmic-clash/images}

say() { echo "images: $*" >&2; }
need() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null || { say "$t is not installed (scripts/ensure-deps.sh installs podman, buildah, mmdebstrap, runc)"; exit 1; }
	done
}

# Everything that shapes the base; its hash is the cache key.
mmdebstrap_args() {
	# merged /usr through mmdebstrap's hook (usr-is-merged) rather than the
	# usrmerge package, which would pull the whole of perl (55 MB) into every image.
	printf '%s\n' --variant=minbase --components=main --format=tar \
		--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
		'--dpkgopt=path-exclude=/usr/share/man/*' '--dpkgopt=path-exclude=/usr/share/info/*' \
		'--dpkgopt=path-exclude=/usr/share/locale/*' '--dpkgopt=path-include=/usr/share/locale/locale.alias' \
		'--dpkgopt=path-exclude=/usr/share/doc/*' '--dpkgopt=path-include=/usr/share/doc/*/copyright' \
		bookworm
}
mirrors() {
	printf '%s\n' "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
		"deb $SECURITY bookworm-security main"
}

base() {
	need podman mmdebstrap
	local key tar have
	key=$( { mmdebstrap_args; mirrors; mmdebstrap --version; } | sha256sum | cut -c1-16)
	have=$(podman image inspect --format '{{index .Labels "cosmic-clash.base-key"}}' "$BASE" 2>/dev/null || true)
	if [[ "$have" == "$key" ]]; then
		say "base $BASE is current (key $key)"
		return 0
	fi
	tar="$CACHE/bookworm-minbase-$key.tar"
	if [[ ! -s "$tar" ]]; then
		mkdir -p "$CACHE"
		say "mmdebstrap: bookworm minbase from $MIRROR into $tar"
		local t0=$SECONDS args
		mapfile -t args < <(mmdebstrap_args)
		local srcs; mapfile -t srcs < <(mirrors)
		mmdebstrap --quiet "${args[@]}" - "${srcs[@]}" >"$tar.part"
		mv "$tar.part" "$tar"
		# Older keys' tarballs are dead weight.
		find "$CACHE" -name 'bookworm-minbase-*.tar' ! -name "$(basename "$tar")" -delete
		say "mmdebstrap took $((SECONDS - t0)) s, $(du -m "$tar" | cut -f1) MB"
	fi
	podman import --quiet --change 'CMD ["/bin/bash"]' --change "LABEL cosmic-clash.base-key=$key" \
		"$tar" "$BASE" >/dev/null
	say "imported $BASE (key $key)"
}

build() {
	need podman
	base
	local targets=("$@")
	((${#targets[@]})) || targets=("${SERVICE_TARGETS[@]}" "${DEV_TARGETS[@]}")
	local version revision source
	version=$(sed -n 's/^VERSION := *//p' Makefile)
	revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
	[[ -z $(git status --porcelain --untracked-files=no 2>/dev/null) ]] || revision="$revision-dirty"
	source=$(git config --get remote.origin.url 2>/dev/null || echo "file://$top")
	# The labels are also given on the command line: the Dockerfile's LABEL
	# lines fill them from the build args, but podman 4.3's layer cache reuses a
	# LABEL step whose build-arg value changed (seen: a new commit's image kept
	# the last one's revision); a command-line label is set on the final image.
	local t t0
	for t in "${targets[@]}"; do
		t0=$SECONDS
		say "building $REPO/$t"
		podman build --quiet --isolation=chroot --pull=never --layers --target="$t" \
			--build-arg=BASE="$BASE" --build-arg=VERSION="$version" \
			--build-arg=REVISION="$revision" --build-arg=SOURCE="$source" \
			--label=cosmic-clash.target="$t" \
			--label=org.opencontainers.image.version="$version" \
			--label=org.opencontainers.image.revision="$revision" \
			--label=org.opencontainers.image.source="$source" \
			-t "$REPO/$t:latest" -t "$REPO/$t:$version" -f Dockerfile . >&2 # RUN output: a failing check says why
		say "built $REPO/$t in $((SECONDS - t0)) s"
	done
	# The images these tags pointed at before (only ours carry the target label).
	podman image prune -f --filter label=cosmic-clash.target >/dev/null 2>&1 || true
	sizes "${targets[@]}"
}

# size_mb IMAGE: its size in MB (podman's, uncompressed layers).
size_mb() { podman image inspect --format '{{.Size}}' "$1" | awk '{printf "%.1f", $1 / 1e6}'; }

sizes() {
	local targets=("$@") t base_mb bins_mb
	((${#targets[@]})) || targets=("${SERVICE_TARGETS[@]}" "${DEV_TARGETS[@]}")
	base_mb=$(size_mb "$BASE")
	printf '%-16s %9s %9s  %s\n' image size_MB floor_MB "(floor: base $base_mb MB + the image's own binaries)"
	for t in "${targets[@]}"; do
		podman image exists "$REPO/$t" || { printf '%-16s %9s\n' "$t" missing; continue; }
		bins_mb=$(podman run --rm --entrypoint /usr/bin/du "$REPO/$t" -sb /usr/local/bin | awk '{printf "%.1f", $1 / 1e6}')
		printf '%-16s %9s %9s\n' "$t" "$(size_mb "$REPO/$t")" "$(awk -v a="$base_mb" -v b="$bins_mb" 'BEGIN {printf "%.1f", a + b}')"
	done
}

case "${1:-build}" in
base) base ;;
build) shift || true; build "$@" ;;
sizes) shift; sizes "$@" ;;
list) printf '%s\n' "${SERVICE_TARGETS[@]}" "${DEV_TARGETS[@]}" ;;
*) echo "usage: images.sh [build [TARGET...] | base | sizes [TARGET...] | list]" >&2; exit 2 ;;
esac
