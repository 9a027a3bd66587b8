#!/usr/bin/env bash
# check-layers.sh [ROOT]
#
# Enforces libcommon's layers (SPEC 1) over ROOT (default: this tree):
#   sys/   infrastructure, no game words: includes only sys/ headers;
#   game/  pure rules, no I/O: includes sys/ and game/ headers, but none of
#          sys/'s I/O modules (pg, redis, http_server, http_client, admin,
#          migrate) and no libpq, hiredis, microhttpd or curl header;
#   store/ all SQL on our tables: includes sys/, game/ and store/.
# And every SQL statement on one of our tables (a table some
# migrations/*.up.sql creates) is in libcommon/store: a FROM, JOIN, INTO,
# UPDATE or TABLE naming one in libcommon/sys, libcommon/game, services or
# gameserver is a violation (tests may query what they check; SQL that
# touches no table of ours, e.g. an advisory lock or SELECT 1, may stay).
# Every include of a libcommon header names its layer ("sys/pg.h"), in
# libcommon, services, gameserver and tests alike. Prints one line per
# violation (file:line: what is wrong) and exits 1 when there is any.
set -euo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$root"

bad=0
violation() { echo "check-layers: $1"; bad=1; }

# The headers each layer holds, by bare name, to catch un-prefixed includes.
declare -A layer_of=()
for layer in sys game store; do
	for h in libcommon/$layer/*.h; do
		[[ -e $h ]] && layer_of[$(basename "$h")]=$layer
	done
done

allowed() { # allowed FILE_LAYER INCLUDED_LAYER
	case $1 in
	sys) [[ $2 == sys ]] ;;
	game) [[ $2 == sys || $2 == game ]] ;;
	store) [[ $2 == sys || $2 == game || $2 == store ]] ;;
	*) true ;; # services, gameserver and tests sit above every layer
	esac
}

# Matched anywhere after a '/' too: <postgresql/libpq-fe.h> is the same libpq.
game_io_headers='(^|/)(sys/(pg|redis|http_server|http_client|admin|migrate)\.h|libpq-fe\.h|libpq/.*|hiredis/.*|microhttpd\.h|curl/.*)$'

while IFS= read -r file; do
	case $file in
	libcommon/sys/*) mine=sys ;;
	libcommon/game/*) mine=game ;;
	libcommon/store/*) mine=store ;;
	libcommon/*) violation "$file: outside libcommon's layers (put it in sys/, game/ or store/)"; continue ;;
	*) mine=top ;;
	esac
	while IFS=: read -r line inc; do
		name=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]([^">]+)[">].*/\1/' <<<"$inc")
		# "../sys/pg.h" and "libcommon/store/x.h" reach the same headers as
		# "sys/pg.h" (-Ilibcommon, -I.): judge them by the layer they reach.
		if [[ $inc =~ \" ]]; then
			name=$(sed -E 's#^(\./|\.\./)+##; s#^libcommon/##' <<<"$name")
		fi
		if [[ $inc =~ \" && $name != */* && -n ${layer_of[$name]:-} ]]; then
			violation "$file:$line: #include \"$name\" must name its layer (\"${layer_of[$name]}/$name\")"
			continue
		fi
		if [[ $name =~ ^(sys|game|store)/ ]]; then
			if ! allowed "$mine" "${name%%/*}"; then
				violation "$file:$line: $mine/ may not include $name (a layer uses only the layers below it)"
				continue
			fi
		fi
		if [[ $mine == game && $name =~ $game_io_headers ]]; then
			violation "$file:$line: game/ is pure rules and may not include $name (I/O)"
		fi
	done < <(grep -nE '^[[:space:]]*#[[:space:]]*include' "$file" | sed -E 's/^([0-9]+):/\1:/')
done < <(find libcommon services gameserver tests -name '*.[ch]' 2>/dev/null | sort)

# SQL on our tables outside store/. The table list comes from the
# migrations, so a new table is covered the day it is created; an empty
# list means this check reads the wrong tree and would pass anything.
tables=$(cat migrations/*.up.sql 2>/dev/null |
	grep -oiE 'CREATE[[:space:]]+TABLE([[:space:]]+IF[[:space:]]+NOT[[:space:]]+EXISTS)?[[:space:]]+([a-z_][a-z0-9_]*\.)?[a-z_][a-z0-9_]*' |
	awk '{print tolower($NF)}' | sed -E 's/^.*\.//' | sort -u | paste -sd'|' || true)
if [[ -z $tables ]]; then
	violation "migrations/: no CREATE TABLE found, so SQL on our tables cannot be checked"
else
	sql_on_table="(^|[^A-Za-z0-9_])(FROM|JOIN|INTO|UPDATE|TABLE)[[:space:]]+(ONLY[[:space:]]+)?(public\.)?($tables)([^A-Za-z0-9_]|\$)"
	while IFS=: read -r file line text; do
		table=$(grep -oE "$sql_on_table" <<<"$text" | head -n1 | sed -E 's/^[^A-Z]*//; s/[^a-z0-9_]*$//')
		violation "$file:$line: SQL on our table ($table) outside libcommon/store (move it into the table's owner module)"
	done < <(find libcommon/sys libcommon/game services gameserver -name '*.[ch]' 2>/dev/null | sort |
		xargs -r grep -nE "$sql_on_table" /dev/null || true)
fi

if [[ $bad -ne 0 ]]; then
	exit 1
fi
echo "check-layers: ok ($(find libcommon -name '*.[ch]' | wc -l) libcommon files, layers sys < game < store; SQL on $(tr '|' '\n' <<<"$tables" | wc -l) tables only in store/)"
