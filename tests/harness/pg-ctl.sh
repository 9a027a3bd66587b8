#!/usr/bin/env bash
# pg-ctl.sh start|stop|restart|kill [pg_ctl options...]
#
# The one way the harness and the tests start, stop and restart the
# disposable PostgreSQL of tests/harness/with-services.sh: pg_ctl on its data
# directory (CC_TEST_PG_DATA, CC_TEST_PG_BIN, CC_TEST_PG_LOG), as the
# "postgres" user when we are root. Every setting (port, socket directory,
# fsync off, ...) lives in the data directory's postgresql.conf, so a plain
# start brings the same server back on the same port.
#
# Why pg_ctl and not a PID: after a restart the postmaster is a new process
# that is nobody's child, and the PID the harness had started is stale (and
# may belong to something else by then). pg_ctl reads postmaster.pid, which
# the running postmaster owns.
#
#   start    start and wait until it accepts connections (30 s deadline)
#   stop     fast shutdown (clients are disconnected), wait until gone
#   restart  stop (fast) then start, waiting for both (what an operator runs)
#   kill     immediate shutdown: nothing is kept (the harness at exit)
# Extra arguments go to pg_ctl. Exit status is pg_ctl's; its output goes to
# stderr.
set -Eeuo pipefail

: "${CC_TEST_PG_BIN:?pg-ctl.sh: CC_TEST_PG_BIN is not set (run inside tests/harness/with-services.sh)}"
: "${CC_TEST_PG_DATA:?pg-ctl.sh: CC_TEST_PG_DATA is not set (run inside tests/harness/with-services.sh)}"
: "${CC_TEST_PG_LOG:?pg-ctl.sh: CC_TEST_PG_LOG is not set (run inside tests/harness/with-services.sh)}"
[[ $# -ge 1 ]] || { echo "usage: pg-ctl.sh start|stop|restart|kill [pg_ctl options...]" >&2; exit 2; }
action=$1; shift

as_pg() {
	if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# pg_ctl's wait ends when postmaster.pid is gone, which an immediate
# shutdown removes before the postmaster itself has exited: wait for the
# process too, so "stopped" means its port and files are free. The
# postmaster is nobody's child here (pg_ctl daemonizes it), so init reaps
# it, in its own time: a zombie has exited.
postmaster=$(head -n 1 "$CC_TEST_PG_DATA/postmaster.pid" 2>/dev/null || true)
running() { # running PID: exists and is not a zombie
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	[[ ${stat:0:1} != Z ]]
}
gone() {
	[[ -z "$postmaster" ]] && return 0
	for _ in $(seq 200); do
		running "$postmaster" || return 0
		sleep 0.05
	done
	echo "pg-ctl.sh: postmaster $postmaster still runs 10 s after pg_ctl stopped it" >&2
	return 1
}

ctl=("$CC_TEST_PG_BIN/pg_ctl" -D "$CC_TEST_PG_DATA" -w -t 30)
case "$action" in
start) as_pg "${ctl[@]}" start -l "$CC_TEST_PG_LOG" "$@" >&2 ;;
stop) as_pg "${ctl[@]}" stop -m fast "$@" >&2 && gone ;;
restart) as_pg "${ctl[@]}" restart -m fast -l "$CC_TEST_PG_LOG" "$@" >&2 ;;
kill) as_pg "${ctl[@]}" stop -m immediate "$@" >&2 && gone ;;
*) echo "pg-ctl.sh: unknown action '$action' (start|stop|restart|kill)" >&2; exit 2 ;;
esac
