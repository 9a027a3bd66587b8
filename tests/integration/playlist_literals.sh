#!/usr/bin/env bash
# Playlists are data (issue 8): no playlist name is spelled as a string
# literal ("casual", 'ranked', ...) in services/ or libcommon/ outside
# libcommon/game/playlist.c, nor in a migration after 0007 (which seeds the
# table and whose down file restores the old lists). Code that needs a
# playlist asks game/playlist.h; SQL reads the playlists table. The names
# come from the list itself, so a new playlist is covered too. A planted
# literal must be found (the check can fail).
source "$(dirname "$0")/lib.sh"

names=$(sed -nE 's/.*\.name = "([a-z][a-z0-9_]*)".*/\1/p' "$TOP/libcommon/game/playlist.c" | paste -sd'|')
[[ -n "$names" && "$names" == *casual* && "$names" == *ranked* ]] ||
	fail "could not read the playlist names from libcommon/game/playlist.c (saw '$names')"

# literals ROOT: prints file:line of each literal under ROOT.
literals() {
	local root=$1 f later=()
	for f in "$root"/migrations/*.sql; do
		[[ $(basename "$f") > 0007_playlists.up.sql ]] && later+=("$f")
	done
	grep -rnE "[\"'](${names})[\"']" "$root/services" "$root/libcommon" "${later[@]}" \
		--include='*.c' --include='*.h' --include='*.sql' |
		grep -v "^$root/libcommon/game/playlist\.c:" |
		# A log field or JSON key named after the playlist attribute (the `ranked` column), not a playlist.
		grep -vE 'CC_LOG_BOOL\("ranked", m->params\.ranked\)' |
		grep -vE "'ranked', pl\.ranked" || true
}

found=$(literals "$TOP")
[[ -z "$found" ]] || fail "playlist names spelled outside libcommon/game/playlist.c (use game/playlist.h or the playlists table):
$found"
pass "no literal of ($names) in services/, libcommon/ or migrations after 0007"

copy="$T_DIR/tree"
mkdir -p "$copy"
cp -r "$TOP/services" "$TOP/libcommon" "$TOP/migrations" "$copy/"
printf 'static const char planted[] = "ranked";\n' >>"$copy/services/api/queue.c"
printf "SELECT 'casual';\n" >"$copy/migrations/9999_planted.up.sql"
found=$(literals "$copy")
grep -q "services/api/queue.c" <<<"$found" || fail "a planted \"ranked\" in queue.c was not found: '$found'"
grep -q "9999_planted.up.sql" <<<"$found" || fail "a planted 'casual' in a later migration was not found: '$found'"
pass "planted literals in services/api/queue.c and a migration after 0007 are found"
