#!/usr/bin/env bash
# The 60 Hz match code is pure arithmetic: game/sim, game/match_lifecycle
# and game/chase call nothing but the few libc functions listed here and
# each other. So no tick allocates (no malloc/free), blocks (no I/O), or
# depends on anything but its inputs (no clock, no rand): what makes the
# simulation deterministic and cheap enough for 100 matches per core
# (issue 11). A whitelist, not a blacklist: any new callee must be added
# here on purpose.
source "$(dirname "$0")/lib.sh"

rel="$TOP/build/rel/libcommon/game"
allowed='^(sqrtf|memset|memcpy|memcmp|strlen|strcmp|snprintf|cc__bug|cc_sim_[a-z_]+|cc_match_[a-z_]+|cc_chase_[a-z_]+)$'
for m in sim match_lifecycle chase; do
	obj="$rel/$m.o"
	[[ -f $obj ]] || fail "$obj is missing (make builds it)"
	calls=$(nm -u "$obj" | awk 'NF == 2 { print $2 }') || fail "nm -u $obj failed"
	# A file that calls nothing would pass any rule: each of these calls something we know.
	case $m in
	sim) grep -qx sqrtf <<<"$calls" || fail "nm -u $obj lists no sqrtf, so this check reads the wrong file: $calls" ;;
	match_lifecycle) grep -qx strcmp <<<"$calls" || fail "nm -u $obj lists no strcmp: $calls" ;;
	chase) grep -qx cc_sim_rotate <<<"$calls" || fail "nm -u $obj lists no cc_sim_rotate: $calls" ;;
	esac
	bad=$(grep -Ev "$allowed" <<<"$calls" || true)
	[[ -z $bad ]] || fail "game/$m.o calls $(tr '\n' ' ' <<<"$bad")- the match tick must not allocate, do I/O, read a clock or draw random numbers"
done
echo "game_tick_pure: sim, match_lifecycle and chase call only arithmetic and string helpers"
