#!/usr/bin/env bash
# make install lays out a working system: the service binaries (never the
# testkit), the migrations and contracts; the installed cc-migrate finds its
# migrations without being told where they are.
source "$(dirname "$0")/lib.sh"
prefix="$T_DIR/prefix"
make -C "$TOP" --no-print-directory install PREFIX="$prefix" >"$T_DIR/install.log" 2>&1 || fail "make install failed: $(cat "$T_DIR/install.log")"
for b in cc-api cc-matcher cc-migrate; do [[ -x "$prefix/bin/$b" ]] || fail "$b not installed"; done
[[ ! -e "$prefix/bin/cc-testkit-api" ]] || fail "the testkit was installed"
ls "$prefix/share/cosmic-clash/migrations/"*.up.sql >/dev/null || fail "no migrations installed"
[[ -f "$prefix/share/cosmic-clash/contracts/v1/openapi.json" ]] || fail "no contract installed"
db="inst_$RANDOM$RANDOM"
psql -qAtX "$CC_TEST_PG_ADMIN_DSN" -c "CREATE DATABASE $db" >/dev/null
dsn="${CC_TEST_PG_ADMIN_DSN%/postgres}/$db"
(cd "$T_DIR" && COSMIC_CLASH_DATABASE_URL="$dsn" "$prefix/bin/cc-migrate" up) >"$T_DIR/migrate.out" 2>"$T_DIR/migrate.err" ||
	fail "installed cc-migrate up failed (run outside the source tree): $(cat "$T_DIR/migrate.err")"
applied=$(psql -qAtX "$dsn" -c "SELECT count(*) FROM schema_migrations")
expect_eq "migrations applied by the installed cc-migrate" "$(ls "$TOP"/migrations/*.up.sql | wc -l)" "$applied"
psql -qAtX "$CC_TEST_PG_ADMIN_DSN" -c "DROP DATABASE $db" >/dev/null
pass "installed binaries and data; installed cc-migrate applied $applied migrations from its own share dir"
