#!/usr/bin/env bash
# libcommon's layers (SPEC 1) hold in this tree, the check that guards them
# can fail, and each binary links only what it uses.
source "$(dirname "$0")/lib.sh"

out=$("$TOP/scripts/check-layers.sh" "$TOP" 2>&1) || fail "scripts/check-layers.sh $TOP failed on this tree: $out"
pass "$out"

# plant FILE LINE EXPECTED: a copy of the tree with LINE added to FILE must
# fail the check with a message containing EXPECTED.
plant() {
	local file=$1 line=$2 expected=$3 copy="$T_DIR/tree.$RANDOM" rc=0
	mkdir -p "$copy"
	cp -r "$TOP/libcommon" "$TOP/services" "$TOP/tests" "$TOP/migrations" "$copy/"
	printf '%s\n' "$line" >>"$copy/$file"
	out=$("$TOP/scripts/check-layers.sh" "$copy" 2>&1) || rc=$?
	expect_eq "check-layers exit with '$line' planted in $file" 1 "$rc"
	grep -qF -- "$expected" <<<"$out" || fail "check-layers with '$line' in $file said '$out', expected it to name '$expected'"
	rm -rf "$copy"
	pass "planted '$line' in $file: refused ($expected)"
}
plant libcommon/game/formation.c '#include "sys/pg.h"' 'game/ is pure rules and may not include sys/pg.h'
plant libcommon/game/glicko2.h '#include <libpq-fe.h>' 'may not include libpq-fe.h'
plant libcommon/game/tiers.c '#include <hiredis/hiredis.h>' 'may not include hiredis/hiredis.h'
plant libcommon/game/arenas.c '#include "store/proposals.h"' 'game/ may not include store/proposals.h'
# Spellings that reach the same headers another way (-Ilibcommon, relative paths, a libpq subfolder).
plant libcommon/game/formation.c '#include "../sys/pg.h"' 'game/ is pure rules and may not include sys/pg.h'
plant libcommon/game/tiers.c '#include "libcommon/store/tickets.h"' 'game/ may not include store/tickets.h'
plant libcommon/game/glicko2.c '#include <postgresql/libpq-fe.h>' 'may not include postgresql/libpq-fe.h'
plant libcommon/sys/log.c '#include "game/formation.h"' 'sys/ may not include game/formation.h'
plant libcommon/store/outbox.c '#include "pg.h"' 'must name its layer ("sys/pg.h")'
plant services/api/queue.c '#include "formation.h"' 'must name its layer ("game/formation.h")'
# Every statement on our tables lives in store/ (one owner per table).
plant services/api/operator.c 'static const char q[] = "SELECT banned_until FROM players WHERE id = $1";' 'SQL on our table (FROM players) outside libcommon/store'
plant services/matcher/pass.c 'static const char q[] = "UPDATE tickets SET state = '"'"'QUEUED'"'"'";' 'services/matcher/pass.c'
plant libcommon/game/formation.c '/* */ static const char q[] = "DELETE FROM public.outbox";' 'SQL on our table (FROM public.outbox)'
plant libcommon/sys/migrate.c 'static const char q[] = "INSERT INTO region_rtts VALUES (1)";' 'SQL on our table (INTO region_rtts)'

# Each binary links only the packages it uses: cc-migrate needs PostgreSQL,
# not Redis, not an HTTP server.
libs=$(ldd "$BIN/cc-migrate") || fail "ldd $BIN/cc-migrate failed"
grep -q 'libpq' <<<"$libs" || fail "cc-migrate does not link libpq; ldd says: $libs"
for lib in hiredis microhttpd curl; do
	if grep -q "$lib" <<<"$libs"; then fail "cc-migrate links $lib; ldd says: $libs"; fi
done
pass "cc-migrate links libpq and neither hiredis, libmicrohttpd nor libcurl"
libs=$(ldd "$BIN/cc-matcher") || fail "ldd $BIN/cc-matcher failed"
if grep -q curl <<<"$libs"; then fail "cc-matcher links libcurl; ldd says: $libs"; fi
pass "cc-matcher does not link libcurl"

# cc-gameserver links sys without pg, redis and the HTTP server, plus game
# and ENet (SPEC 1): neither the libraries (ldd) nor our wrappers of them
# (nm: no cc_pg_, cc_redis_, cc_http_server_ or cc_admin_ code was pulled
# from libcc-sys.a), while it does carry the game layer and ENet.
gs="$BIN/cc-gameserver"
libs=$(ldd "$gs") || fail "ldd $gs failed"
grep -q 'libenet' <<<"$libs" || fail "cc-gameserver does not link ENet; ldd says: $libs"
for lib in libpq hiredis microhttpd; do
	if grep -q "$lib" <<<"$libs"; then fail "cc-gameserver links $lib; ldd says: $libs"; fi
done
syms=$(nm "$gs") || fail "nm $gs failed"
grep -q ' T cc_sim_step$' <<<"$syms" || fail "nm $gs shows no cc_sim_step: the check reads the wrong binary"
if bad=$(grep -E ' [TtDdBb] (cc_pg_|cc_redis_|cc_http_server_|cc_admin_|cc_migrate_)' <<<"$syms"); then
	fail "cc-gameserver carries pg/redis/HTTP-server code: $(tr '\n' ' ' <<<"$bad")"
fi
pass "cc-gameserver links ENet, the game layer and sys without pg, redis or the HTTP server (ldd and nm)"

# The service skeleton forces no library on a binary that does not declare
# it (cc-gameserver will link sys without pg, redis and the HTTP server):
# service.o calls no PostgreSQL, Redis, HTTP or admin code.
obj="$TOP/build/rel/libcommon/sys/service.o"
[[ -f $obj ]] || fail "$obj is missing (make builds it)"
undefined=$(nm -u "$obj") || fail "nm -u $obj failed"
grep -q 'cc_config_load_or_exit' <<<"$undefined" || fail "nm -u $obj lists no cc_config_load_or_exit, so this check reads the wrong file: $undefined"
if bad=$(grep -E ' (cc_pg_|PQ|cc_redis|redis|cc_http_|MHD_|cc_admin_|curl_)' <<<"$undefined"); then
	fail "sys/service.o needs $(tr '\n' ' ' <<<"$bad")- a binary using the skeleton would have to link them"
fi
pass "sys/service.o calls no pg, redis, HTTP or admin code ($(wc -l <<<"$undefined") undefined symbols, all libc/sys)"

# The includes are one half; the linker sees the other. A game/ file that
# declares a store or I/O function itself (no #include) passes the include
# check, so the archives' symbols are checked too: game's undefined symbols
# name nothing that store/ or sys/'s I/O modules define and no libpq,
# hiredis, microhttpd or curl function; sys's name nothing of game/ or store/.
rel="$TOP/build/rel"
for a in sys game store; do [[ -f $rel/libcc-$a.a ]] || fail "$rel/libcc-$a.a is missing (make builds it)"; done
defined() { nm -g --defined-only "$@" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u; }
undefined() { nm -u "$@" 2>/dev/null | awk 'NF == 2 { print $2 }' | sort -u; }
io_objs=()
for m in pg redis http_server http_client admin migrate; do
	[[ -f $rel/libcommon/sys/$m.o ]] || fail "$rel/libcommon/sys/$m.o is missing (make builds it)"
	io_objs+=("$rel/libcommon/sys/$m.o")
done
game_undef=$(undefined "$rel/libcc-game.a")
grep -q 'cc_hash_fnv1a32' <<<"$game_undef" || fail "nm -u libcc-game.a lists no cc_hash_fnv1a32, so this check reads the wrong archive: $game_undef"
bad=$(comm -12 <(echo "$game_undef") <({ defined "$rel/libcc-store.a"; defined "${io_objs[@]}"; } | sort -u))
bad+=$(grep -E '^(PQ|pg_|redis|MHD_|curl_)' <<<"$game_undef" || true)
[[ -z $bad ]] || fail "libcc-game.a calls store/ or I/O code: $(tr '\n' ' ' <<<"$bad")"
pass "libcc-game.a calls no store/ or I/O code ($(wc -l <<<"$game_undef") undefined symbols)"
bad=$(comm -12 <(undefined "$rel/libcc-sys.a") <({ defined "$rel/libcc-game.a"; defined "$rel/libcc-store.a"; } | sort -u))
[[ -z $bad ]] || fail "libcc-sys.a calls game/ or store/ code: $(tr '\n' ' ' <<<"$bad")"
pass "libcc-sys.a calls no game/ or store/ code"
