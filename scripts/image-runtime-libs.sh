#!/bin/sh
# image-runtime-libs.sh BASE_PKGS OUT BINARY... - runs in the Dockerfile's
# builder stage. Copies into the tree OUT (later COPY'd onto an image's /)
# exactly the shared libraries the binaries link (as ldd resolves them,
# transitive ones included) that the Debian base lacks, each from the Debian
# package dpkg says owns it, with that package's copyright file. BASE_PKGS
# lists the base image's packages (dpkg-query, recorded before the builder
# installed anything): their libraries are already in every image.
# Writes OUT/usr/share/doc/cosmic-clash/runtime-packages (package version
# library per line) and fails if ldd reports anything "not found".
set -eu
base_pkgs=$1 out=$2
shift 2
list=$(mktemp)
for bin in "$@"; do
	if ldd "$bin" | grep -q 'not found'; then
		echo "image-runtime-libs: $bin: a library is missing:" >&2
		ldd "$bin" >&2
		exit 1
	fi
	# "libfoo.so.1 => /lib/x86_64-linux-gnu/libfoo.so.1 (0x...)" and the loader's "/lib64/ld-linux-x86-64.so.2 (0x...)"
	ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' >>"$list"
done
mkdir -p "$out/usr/share/doc/cosmic-clash"
: >"$out/usr/share/doc/cosmic-clash/runtime-packages"
for lib in $(sort -u "$list"); do
	# dpkg knows a file by the path its package ships (/usr/lib/... or, for
	# libc6 in bookworm, /lib/...); ldd may name either through the /lib symlink.
	pkg=""
	for p in "$lib" "/usr${lib#/usr}" "${lib#/usr}"; do
		pkg=$(dpkg-query -S "$p" 2>/dev/null | head -n 1 | cut -d: -f1) && [ -n "$pkg" ] && break
	done
	[ -n "$pkg" ] || { echo "image-runtime-libs: no Debian package owns $lib" >&2; exit 1; }
	grep -qx "$pkg" "$base_pkgs" && continue
	dir=$(realpath "$(dirname "$lib")") # /usr/lib/...: never a real /lib over the image's /lib symlink
	mkdir -p "$out$dir"
	cp -L "$lib" "$out$dir/$(basename "$lib")"
	if [ -f "/usr/share/doc/$pkg/copyright" ]; then
		mkdir -p "$out/usr/share/doc/$pkg"
		cp "/usr/share/doc/$pkg/copyright" "$out/usr/share/doc/$pkg/copyright"
	fi
	echo "$pkg $(dpkg-query -W -f='${Version}' "$pkg") $dir/$(basename "$lib")" >>"$out/usr/share/doc/cosmic-clash/runtime-packages"
done
rm -f "$list"
