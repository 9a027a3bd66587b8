#!/usr/bin/env bash
# redis-ctl.sh start|stop
#
# The one way the harness and the tests start and stop the disposable Redis
# of tests/harness/with-services.sh (CC_TEST_REDIS_PORT, CC_TEST_REDIS_PIDFILE,
# CC_TEST_REDIS_DIR): a daemonized redis-server on that port, known by its
# pidfile, never by a PID remembered from an earlier start (a test may stop
# and start it, and the new server is nobody's child).
#
#   start  start on CC_TEST_REDIS_PORT and wait for PING (20 s deadline);
#          exit 1 when it does not answer (e.g. the port is taken)
#   stop   SHUTDOWN NOSAVE, then wait until the process is gone (10 s;
#          then SIGKILL); a server that is not running is no error
set -Eeuo pipefail

: "${CC_TEST_REDIS_PORT:?redis-ctl.sh: CC_TEST_REDIS_PORT is not set}"
: "${CC_TEST_REDIS_PIDFILE:?redis-ctl.sh: CC_TEST_REDIS_PIDFILE is not set}"
: "${CC_TEST_REDIS_DIR:?redis-ctl.sh: CC_TEST_REDIS_DIR is not set}"

alive() { # alive PID: the pidfile's process still runs (a zombie has exited: init reaps it in its own time)
	local stat
	[[ -n "$1" ]] || return 1
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	[[ ${stat:0:1} != Z ]]
}

case "${1:-}" in
start)
	redis-server --bind 127.0.0.1 --port "$CC_TEST_REDIS_PORT" --save '' --appendonly no \
		--daemonize yes --pidfile "$CC_TEST_REDIS_PIDFILE" --logfile "$CC_TEST_REDIS_DIR/redis.log" \
		--dir "$CC_TEST_REDIS_DIR"
	for _ in $(seq 1000); do
		[[ $(redis-cli -h 127.0.0.1 -p "$CC_TEST_REDIS_PORT" ping 2>/dev/null) == PONG ]] && exit 0
		pid=$(cat "$CC_TEST_REDIS_PIDFILE" 2>/dev/null || true)
		# Daemonized: the pidfile appears once it runs; gone again = it died.
		if [[ -n "$pid" ]] && ! alive "$pid"; then
			echo "redis-ctl.sh: redis-server (pid $pid) exited before answering on port $CC_TEST_REDIS_PORT" >&2
			exit 1
		fi
		sleep 0.02
	done
	echo "redis-ctl.sh: Redis did not answer PING on port $CC_TEST_REDIS_PORT within 20 s" >&2
	exit 1 ;;
stop)
	pid=$(cat "$CC_TEST_REDIS_PIDFILE" 2>/dev/null || true)
	alive "$pid" || exit 0
	redis-cli -h 127.0.0.1 -p "$CC_TEST_REDIS_PORT" shutdown nosave >/dev/null 2>&1 || kill "$pid" 2>/dev/null || true
	for _ in $(seq 200); do
		alive "$pid" || exit 0
		sleep 0.05
	done
	echo "redis-ctl.sh: redis-server (pid $pid) ignored SHUTDOWN for 10 s; killing it" >&2
	kill -9 "$pid" 2>/dev/null || true ;;
*) echo "usage: redis-ctl.sh start|stop" >&2; exit 2 ;;
esac
