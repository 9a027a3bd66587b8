#!/usr/bin/env bash
# Every binary: an unknown flag plus a wrongly typed value is a start-up
# error (exit 2) that names both problems; --help lists every option of the
# binary's declaration table; --version names the build.
source "$(dirname "$0")/lib.sh"

src_dir() { # the directory whose option table a binary is built from
	case $1 in
	cc-gameserver) echo "$TOP/gameserver" ;;
	cc-testkit-api) echo "$TOP/services/api" ;;
	cc-player) echo "$TOP/tests/player" ;;
	*) echo "$TOP/services/${1#cc-}" ;;
	esac
}

count=0
for bin in "$BIN"/cc-*; do
	name=$(basename "$bin")
	rc=0
	"$bin" --no-such-flag --port=abc >"$T_DIR/out" 2>"$T_DIR/err" </dev/null || rc=$?
	expect_eq "$name --no-such-flag --port=abc exit status" 2 "$rc"
	grep -q -- '--no-such-flag' "$T_DIR/err" || fail "$name did not name --no-such-flag; stderr: $(cat "$T_DIR/err")"
	grep -q -- '--port' "$T_DIR/err" || fail "$name did not name --port; stderr: $(cat "$T_DIR/err")"

	# The option names as declared in the binary's table.
	mapfile -t options < <(grep -ohE '\{ \.name = "[a-z0-9-]+"' "$(src_dir "$name")"/*.c | sed -E 's/.*"(.*)"/\1/' | sort -u)
	[[ ${#options[@]} -gt 0 ]] || fail "$name: no option table found under $(src_dir "$name")"
	"$bin" --help >"$T_DIR/help" 2>&1 || fail "$name --help exited non-zero: $(cat "$T_DIR/help")"
	for opt in "${options[@]}"; do
		grep -q -- "--$opt" "$T_DIR/help" || fail "$name --help does not list --$opt; help was: $(cat "$T_DIR/help")"
	done
	version=$("$bin" --version)
	[[ "$version" == "$name "*git* ]] || fail "$name --version printed '$version'"
	count=$((count + 1))
	pass "$name: exit 2 naming both problems, --help lists ${#options[@]} options, --version '$version'"
done
[[ $count -ge 2 ]] || fail "expected at least cc-api and cc-migrate in $BIN, found $count binaries"
