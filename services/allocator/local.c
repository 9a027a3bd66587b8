/*
 * local.c - the local provider (SPEC 8, INTERFACES.md): a warm pool of
 * long-lived game-server processes on loopback ports, like an Agones fleet.
 *
 * At start-up it spawns --local-capacity children of --local-server-command
 * on ports --local-port-min.., one per port, and records each in
 * game_servers (IDLE, owner = this instance). An allocation claims one IDLE
 * row with FOR UPDATE SKIP LOCKED (a batch: one statement pairs the
 * claimed rows with as many servers) and writes the endpoint in the same
 * transaction; the server learns of it from its allocation file
 * (<state dir>/<server id>/allocation.json, one directory per server, written
 * in <state dir>/.tmp, then renamed,
 * mode 0600), which it
 * serves, then deletes after /shutdown. The sweep returns servers whose
 * allocation finished to IDLE and removes a file left behind.
 *
 * Children (fork + execve, never a shell): environment without any
 * COSMIC_CLASH_* variable of ours (the database URL must not leak) plus
 * COSMIC_CLASH_SERVER_ID, _GAME_PORT, _ALLOCATION_FILE and _API_URL; stdout
 * and stderr appended to <state dir>/<server id>.log; all other
 * descriptors closed; signals unblocked. PR_SET_PDEATHSIG (SIGTERM) ends
 * them with the thread that spawned them, the supervisor thread, which
 * lives as long as the process: the pool belongs to its allocator, and a
 * restarted allocator restarts its children, which resume the allocation
 * their file names. A child that exits is reaped and classified (code or
 * signal); an idle one is marked DEAD; either is restarted on its port
 * with a backoff (100 ms doubling up to --local-restart-max-ms; reset after
 * 30 s of life). An ALLOCATED server keeps its row and resumes its
 * allocation when restarted.
 *
 * Threads: start, tick and stop run on the supervisor thread only; the
 * workers' local_allocate_batch/local_deliver touch no child state (paths are
 * derived from the server id).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "allocator.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "game/workload_token.h"
#include "store/game_servers.h"
#include "sys/banned.h"

#define TMP_DIR ".tmp" /* under the state directory: allocation files being written */
#define ALLOCATION_FILE "allocation.json" /* in each server's directory under the state directory */
#define WAKE_FIFO "wake"                  /* beside it: a byte written there wakes that server's child */

extern char **environ;

#define MAX_ARGS 32
#define RESTART_BASE_MS 100
#define HEALTHY_AFTER_MS 30000 /* a child that lived this long restarts at the base delay again */
#define RELEASE_BATCH 64

struct local_child {
	int port;
	char id[CC_GAME_SERVER_ID_BUF];
	pid_t pid;              /* 0 while not running */
	int64_t started_ms;     /* monotonic */
	int64_t restart_at_ms;  /* monotonic; while pid == 0 */
	int restarts;           /* consecutive quick exits */
};

struct local_pool {
	struct allocator *a;
	size_t n;
	struct local_child *children;
	char *argv[MAX_ARGS + 1]; /* the command split on blanks (no shell) */
	char *argbuf;
	char **base_env;          /* environ without COSMIC_CLASH_* */
	size_t n_base_env;
	int *port_locks;          /* one locked <state dir>/local-<port>.lock per child; -1 when not held */
};

/* "<state dir>/<id><suffix>" into out; CC_ETOOBIG when it does not fit. */
static int server_path(const struct allocator *a, const char *id, const char *suffix, char *out, size_t cap)
{
	int w = snprintf(out, cap, "%s/%s%s", a->cfg->local_state_dir, id, suffix);
	return w < 0 || (size_t)w >= cap ? CC_ETOOBIG : 0;
}

/*
 * Server id's allocation file, "<state dir>/<id>/" ALLOCATION_FILE. One
 * directory per server: a child watching its directory (inotify) wakes for
 * its own allocations only. In one shared directory each rename woke all N
 * children of the pool: 400 wake-ups per allocation in the bench, a third
 * of the machine's CPU at 500 allocations/s (perf, 16:47).
 */
static int allocation_path(const struct allocator *a, const char *id, char *out, size_t cap)
{
	return server_path(a, id, "/" ALLOCATION_FILE, out, cap);
}

struct local_pool *local_pool_create(struct allocator *a)
{
	struct local_pool *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->a = a;
	p->n = (size_t)a->cfg->local_capacity;
	p->children = calloc(p->n, sizeof *p->children);
	p->argbuf = strdup(a->cfg->local_server_command);
	size_t env_n = 0;
	while (environ && environ[env_n])
		env_n++;
	p->base_env = calloc(env_n + 1, sizeof *p->base_env);
	p->port_locks = calloc(p->n, sizeof *p->port_locks);
	if (!p->children || !p->argbuf || !p->base_env || !p->port_locks) {
		local_pool_free(p);
		return NULL;
	}
	for (size_t i = 0; i < env_n; i++)
		if (strncmp(environ[i], "COSMIC_CLASH_", 13) != 0)
			p->base_env[p->n_base_env++] = environ[i];
	int argc = 0;
	for (char *save = NULL, *tok = strtok_r(p->argbuf, " \t", &save); tok && argc < MAX_ARGS;
	     tok = strtok_r(NULL, " \t", &save))
		p->argv[argc++] = tok;
	p->argv[argc] = NULL;
	for (size_t i = 0; i < p->n; i++) {
		p->port_locks[i] = -1;
		p->children[i].port = (int)a->cfg->local_port_min + (int)i;
		snprintf(p->children[i].id, sizeof p->children[i].id, "local-%d", p->children[i].port);
	}
	return p;
}

void local_pool_free(struct local_pool *p)
{
	if (!p)
		return;
	for (size_t i = 0; p->port_locks && i < p->n; i++)
		if (p->port_locks[i] >= 0)
			close(p->port_locks[i]);
	free(p->port_locks);
	free(p->children);
	free(p->argbuf);
	free(p->base_env);
	free(p);
}

/*
 * Two allocators started with the same flags on one host would share the
 * ports, the game_servers rows (ids are local-<port>) and the allocation
 * files: the second one's children fail to bind and each restart flips the
 * first one's rows between DEAD and IDLE, so capacity silently vanishes.
 * Each port of the range is therefore held with an exclusive lock on
 * <state dir>/local-<port>.lock for the life of the process (the kernel
 * drops it when we die, however we die). Returns 0, or CC_ECONFLICT /
 * CC_EIO with err naming the port and the lock file.
 */
int local_pool_lock(struct local_pool *p, char *err, size_t errlen)
{
	const char *dir = p->a->cfg->local_state_dir;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "--local-state-dir: cannot create %s: %s", dir, strerror(errno));
		return CC_EIO;
	}
	for (size_t i = 0; i < p->n; i++) {
		char path[512];
		if (server_path(p->a, p->children[i].id, ".lock", path, sizeof path) != 0) {
			snprintf(err, errlen, "--local-state-dir: path too long");
			return CC_EIO;
		}
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0) {
			snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
			return CC_EIO;
		}
		/* An open-file-description lock: flock's semantics (<sys/file.h> is
		 * shadowed by libcommon's sys/file.h on our include path). */
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		if (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
			int e = errno;
			close(fd);
			if (e == EAGAIN || e == EACCES) {
				snprintf(err, errlen,
					 "port %d is already served by another cc-allocator on this host (%s is locked); give each "
					 "replica its own --local-port-min/--local-port-max",
					 p->children[i].port, path);
				return CC_ECONFLICT;
			}
			snprintf(err, errlen, "cannot lock %s: %s", path, strerror(e));
			return CC_EIO;
		}
		p->port_locks[i] = fd;
	}
	return 0;
}

/* Closes every descriptor above 2 in a child (async-signal-safe). */
static void close_inherited(void)
{
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 3u, ~0u, 0u) == 0)
		return;
#endif
	for (int fd = 3; fd < 65536; fd++)
		(void)close(fd);
}

/*
 * Forks and execs the command for child c. Everything the child needs is
 * built before fork: after it, only async-signal-safe calls. Returns 0 with
 * c->pid set, or CC_ENOMEM / CC_EIO (logged).
 */
static int spawn(struct local_pool *p, struct local_child *c)
{
	const struct allocator_config *cfg = p->a->cfg;
	char file[4096], log[4096], e_id[192], e_port[64], e_file[4200], e_api[4200];
	char **envp = NULL;
	int rc = 0, logfd = -1;

	if (allocation_path(p->a, c->id, file, sizeof file) != 0 ||
	    server_path(p->a, c->id, ".log", log, sizeof log) != 0)
		return CC_ETOOBIG;
	snprintf(e_id, sizeof e_id, "COSMIC_CLASH_SERVER_ID=%s", c->id);
	snprintf(e_port, sizeof e_port, "COSMIC_CLASH_GAME_PORT=%d", c->port);
	snprintf(e_file, sizeof e_file, "COSMIC_CLASH_ALLOCATION_FILE=%s", file);
	snprintf(e_api, sizeof e_api, "COSMIC_CLASH_API_URL=%s", cfg->api_url);
	envp = calloc(p->n_base_env + 5, sizeof *envp);
	if (!envp)
		return CC_ENOMEM;
	memcpy(envp, p->base_env, p->n_base_env * sizeof *envp);
	envp[p->n_base_env + 0] = e_id;
	envp[p->n_base_env + 1] = e_port;
	envp[p->n_base_env + 2] = e_file;
	envp[p->n_base_env + 3] = e_api;
	logfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (logfd < 0) {
		cc_log_error("child_log_open_failed", CC_LOG_STR("path", log), CC_LOG_STR("error", strerror(errno)));
		rc = CC_EIO;
		goto out;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		cc_log_error("fork_failed", CC_LOG_STR("server_id", c->id), CC_LOG_STR("error", strerror(errno)));
		rc = CC_EIO;
		goto out;
	}
	if (pid == 0) {
		sigset_t none;
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		(void)prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127); /* the allocator died before the line above */
		sigemptyset(&none);
		(void)sigprocmask(SIG_SETMASK, &none, NULL);
		(void)sigaction(SIGPIPE, &dfl, NULL);
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(logfd, 1) < 0 || dup2(logfd, 2) < 0)
			_exit(126);
		close_inherited();
		execve(p->argv[0], p->argv, envp);
		_exit(127);
	}
	c->pid = pid;
	c->started_ms = cc_clock_ms();
out:
	if (logfd >= 0)
		close(logfd);
	free(envp);
	return rc;
}

struct register_tx {
	struct local_pool *p;
	struct local_child *c;
	struct cc_game_server out;
};

static int register_tx(struct cc_pg *pg, void *arg)
{
	struct register_tx *t = arg;
	const struct allocator_config *cfg = t->p->a->cfg;
	return cc_game_server_register_local(pg, t->c->id, cfg->local_region, cfg->local_address, t->c->port,
					     t->p->a->instance, (int)t->c->pid, &t->out);
}

/* Spawns c and records it; on failure schedules another try. */
static void start_child(struct local_pool *p, struct local_child *c, struct cc_pg *pg)
{
	int rc = spawn(p, c);
	if (rc == 0) {
		struct register_tx t = { .p = p, .c = c };
		rc = cc_pg_run_locked(pg, register_tx, &t);
		if (rc == 0) {
			cc_log_info("child_started", CC_LOG_STR("server_id", c->id), CC_LOG_INT("port", c->port),
				    CC_LOG_INT("pid", c->pid), CC_LOG_STR("state", t.out.state),
				    CC_LOG_STR("allocation_id", t.out.allocation_id));
			return;
		}
		/* Running but unrecorded: it would never be allocated. Stop it and try again later. */
		cc_log_warn("child_register_failed", CC_LOG_STR("server_id", c->id), CC_LOG_STR("error", cc_errname(rc)),
			    CC_LOG_STR("message", cc_pg_error_message(pg)));
		kill(c->pid, SIGKILL);
		(void)waitpid(c->pid, NULL, 0);
		c->pid = 0;
	}
	c->restarts++;
	int64_t delay = RESTART_BASE_MS;
	for (int i = 1; i < c->restarts && delay < p->a->cfg->local_restart_max_ms; i++)
		delay *= 2;
	if (delay > p->a->cfg->local_restart_max_ms)
		delay = p->a->cfg->local_restart_max_ms;
	c->restart_at_ms = cc_clock_ms() + delay;
}

/*
 * Wakes server id's child: one byte into the FIFO beside its allocation
 * file, which the child holds open (read and write, so it never sees an
 * end of file) and polls. Why not inotify: an inotify instance per child
 * runs into fs.inotify.max_user_instances (128 by default), and the
 * children past it fell back to polling every 20 ms (400 stand-ins: 20,000
 * opens per second, a third of the machine during the bench). No reader
 * (ENXIO: the child is not up yet) or a full pipe (EAGAIN: a wake is
 * already pending) needs nothing: the child looks at its file when it
 * starts, and at least once a second anyway.
 */
static void wake_child(const struct allocator *a, const char *id)
{
	char path[4096];
	if (server_path(a, id, "/" WAKE_FIFO, path, sizeof path) != 0)
		return;
	int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	(void)!write(fd, "w", 1);
	close(fd);
}

/* Removes what a finished allocation left for server id (its file), if anything. */
static void remove_allocation_file(const struct allocator *a, const char *id)
{
	char file[4096];
	if (allocation_path(a, id, file, sizeof file) != 0)
		return;
	if (unlink(file) == 0)
		wake_child(a, id);
	else if (errno != ENOENT)
		cc_log_warn("allocation_file_unlink_failed", CC_LOG_STR("path", file), CC_LOG_STR("error", strerror(errno)));
}

struct release_tx {
	const struct allocator *a;
	char ids[RELEASE_BATCH][CC_GAME_SERVER_ID_BUF];
	size_t n;
};

/*
 * Files are removed inside the transaction, before COMMIT: once the row is
 * IDLE a worker may allocate the server and write a new file, which a
 * removal after the commit could destroy. A removal whose transaction then
 * fails only removes the file of an allocation that is over anyway.
 */
static int release_tx(struct cc_pg *pg, void *arg)
{
	struct release_tx *t = arg;
	t->n = 0;
	int rc = cc_game_servers_release_finished(pg, t->a->instance, t->ids, RELEASE_BATCH, &t->n);
	for (size_t i = 0; rc == 0 && i < t->n; i++)
		remove_allocation_file(t->a, t->ids[i]);
	return rc;
}

static int release_with(struct cc_pg *pg, const struct allocator *a, size_t *n)
{
	struct release_tx *t = calloc(1, sizeof *t);
	if (!t)
		return CC_ENOMEM;
	t->a = a;
	int rc = cc_pg_run_locked(pg, release_tx, t);
	for (size_t i = 0; rc == 0 && i < t->n; i++)
		cc_log_info("server_released", CC_LOG_STR("server_id", t->ids[i]));
	if (rc == 0)
		*n = t->n;
	free(t);
	return rc;
}

int local_release_finished(struct allocator_worker *w)
{
	size_t n = 0;
	return release_with(w->pg, w->a, &n);
}

/*
 * The allocation files are a copy of the database: before any child
 * starts, every live allocation of our servers gets its file again (the
 * same bytes), so one lost in a machine crash, or never written because we
 * died right after the endpoint was persisted, is there when its server
 * restarts.
 */
static int redeliver(struct local_pool *p, struct cc_pg *pg)
{
	size_t n = 0;
	struct cc_allocation *live = calloc(p->n, sizeof *live);
	if (!live)
		return CC_ENOMEM;
	struct allocator_worker w = { .a = p->a, .index = ALLOCATOR_MAX_WORKERS, .pg = pg };
	int rc = cc_allocations_live_local(pg, p->a->instance, live, p->n, &n);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		rc = local_deliver(&w, &live[i]);
		if (rc == 0)
			cc_log_info("redelivered", CC_LOG_STR("allocation_id", live[i].id),
				    CC_LOG_STR("server_id", live[i].server_id), CC_LOG_STR("state", live[i].state));
	}
	free(live);
	return rc;
}

int local_pool_start(struct local_pool *p, struct cc_pg *pg)
{
	size_t n = 0;
	if (mkdir(p->a->cfg->local_state_dir, 0700) != 0 && errno != EEXIST) {
		cc_log_error("state_dir_failed", CC_LOG_STR("path", p->a->cfg->local_state_dir),
			     CC_LOG_STR("error", strerror(errno)));
		return CC_EIO;
	}
	char tmpdir[4096];
	if (snprintf(tmpdir, sizeof tmpdir, "%s/" TMP_DIR, p->a->cfg->local_state_dir) >= (int)sizeof tmpdir ||
	    (mkdir(tmpdir, 0700) != 0 && errno != EEXIST)) {
		cc_log_error("state_dir_failed", CC_LOG_STR("path", tmpdir), CC_LOG_STR("error", strerror(errno)));
		return CC_EIO;
	}
	/* Each server's directory, before redeliver writes into it and before its child watches it. */
	for (size_t i = 0; i < p->n; i++) {
		char sdir[4096], legacy[4096];
		if (server_path(p->a, p->children[i].id, "", sdir, sizeof sdir) != 0 ||
		    (mkdir(sdir, 0700) != 0 && errno != EEXIST)) {
			cc_log_error("state_dir_failed", CC_LOG_STR("path", sdir), CC_LOG_STR("error", strerror(errno)));
			return CC_EIO;
		}
		/* A file of the layout before per-server directories: nobody reads it
		 * any more, and redeliver below rewrites a live one where it belongs. */
		if (server_path(p->a, p->children[i].id, ".json", legacy, sizeof legacy) == 0)
			(void)unlink(legacy);
		char fifo[4096];
		struct stat sb;
		if (server_path(p->a, p->children[i].id, "/" WAKE_FIFO, fifo, sizeof fifo) != 0)
			return CC_ETOOBIG;
		if (lstat(fifo, &sb) == 0 && !S_ISFIFO(sb.st_mode))
			(void)unlink(fifo);
		if (mkfifo(fifo, 0600) != 0 && errno != EEXIST) {
			cc_log_error("state_dir_failed", CC_LOG_STR("path", fifo), CC_LOG_STR("error", strerror(errno)));
			return CC_EIO;
		}
	}
	/* Before any child reads a file: those of allocations that ended while we were away go. */
	int rc = release_with(pg, p->a, &n);
	if (rc != 0)
		cc_log_warn("release_sweep_failed", CC_LOG_STR("error", cc_errname(rc)));
	if ((rc = redeliver(p, pg)) != 0)
		return rc;
	for (size_t i = 0; i < p->n; i++)
		start_child(p, &p->children[i], pg);
	return 0;
}

struct dead_tx {
	const char *id, *owner;
	bool changed;
};

static int dead_tx(struct cc_pg *pg, void *arg)
{
	struct dead_tx *t = arg;
	return cc_game_server_mark_dead(pg, t->id, t->owner, &t->changed);
}

/* Logs and records the exit of child c (status st), and schedules its restart. */
static void child_exited(struct local_pool *p, struct local_child *c, int st, struct cc_pg *pg)
{
	struct allocator *a = p->a;
	int64_t lived = cc_clock_ms() - c->started_ms;
	struct dead_tx t = { .id = c->id, .owner = a->instance };
	int rc = cc_pg_run_locked(pg, dead_tx, &t);
	const char *state = rc != 0 ? "unknown" : t.changed ? "idle" : "allocated";
	const char *l[] = { state };
	cc_metric_add(a->metrics.children, l, 1);
	cc_log_warn("child_exited", CC_LOG_STR("server_id", c->id), CC_LOG_INT("pid", c->pid),
		    CC_LOG_INT("exit_code", WIFEXITED(st) ? WEXITSTATUS(st) : -1),
		    CC_LOG_INT("signal", WIFSIGNALED(st) ? WTERMSIG(st) : 0), CC_LOG_BOOL("core", WIFSIGNALED(st) && WCOREDUMP(st)),
		    CC_LOG_INT("lived_ms", lived), CC_LOG_STR("was", state),
		    CC_LOG_STR("log", "see <state dir>/<server id>.log"));
	c->pid = 0;
	if (lived >= HEALTHY_AFTER_MS)
		c->restarts = 0;
	c->restarts++;
	int64_t delay = RESTART_BASE_MS;
	for (int i = 1; i < c->restarts && delay < a->cfg->local_restart_max_ms; i++)
		delay *= 2;
	if (delay > a->cfg->local_restart_max_ms)
		delay = a->cfg->local_restart_max_ms;
	c->restart_at_ms = cc_clock_ms() + delay;
}

void local_pool_tick(struct local_pool *p, struct cc_pg *pg)
{
	int st = 0;
	pid_t pid;
	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (size_t i = 0; i < p->n; i++)
			if (p->children[i].pid == pid)
				child_exited(p, &p->children[i], st, pg);
	}
	int64_t now = cc_clock_ms();
	for (size_t i = 0; i < p->n; i++) {
		struct local_child *c = &p->children[i];
		if (c->pid == 0 && now >= c->restart_at_ms)
			start_child(p, c, pg);
	}
}

void local_pool_stop(struct local_pool *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		if (p->children[i].pid > 0)
			kill(p->children[i].pid, SIGTERM);
	int64_t end = cc_clock_ms() + 3000;
	for (size_t i = 0; i < p->n; i++) {
		struct local_child *c = &p->children[i];
		while (c->pid > 0) {
			pid_t r = waitpid(c->pid, NULL, WNOHANG);
			if (r == c->pid || (r < 0 && errno == ECHILD)) {
				c->pid = 0;
			} else if (cc_clock_ms() >= end) {
				kill(c->pid, SIGKILL);
				(void)waitpid(c->pid, NULL, 0);
				c->pid = 0;
			} else {
				(void)usleep(10000); /* a bounded wait for a reap, not a synchronisation */
			}
		}
	}
}

/* ---- allocation ------------------------------------------------------------ */

struct allocate_tx {
	struct allocator_worker *w;
	struct cc_allocation **items;
	size_t n;
	enum alloc_outcome *out;
	struct cc_allocation *res; /* the ALLOCATED rows by item, copied into items after the commit */
	struct cc_allocation *rows; /* the statement's rows, in its order */
};

#define ALLOCATE_MAX 1024 /* items per batch: 2 * the --batch maximum, and more */

/*
 * One transaction, one statement for the batch
 * (cc_allocations_allocate_local: claimed rows paired with idle servers).
 * Allocations left without a server are the no-capacity outcome (nothing
 * written for them); a claim lost to another replica fails the whole
 * transaction (CC_ECONFLICT: the servers paired with the others must not
 * stay taken), and the caller retries one by one.
 */
static int allocate_tx(struct cc_pg *pg, void *arg)
{
	struct allocate_tx *t = arg;
	const char *ids[ALLOCATE_MAX];
	size_t got = 0, held = 0;
	if (t->n > ALLOCATE_MAX)
		return CC_EINVAL;
	for (size_t i = 0; i < t->n; i++) {
		ids[i] = t->items[i]->id;
		t->out[i] = ALLOC_NO_CAPACITY;
	}
	int rc = cc_allocations_allocate_local(pg, t->w->a->instance, t->w->replica, ids, t->n, t->rows, t->n, &got,
					       &held);
	if (rc != 0)
		return rc;
	if (held < t->n)
		return CC_ECONFLICT;
	for (size_t k = 0; k < got; k++)
		for (size_t i = 0; i < t->n; i++)
			if (strcmp(t->rows[k].id, ids[i]) == 0) {
				t->res[i] = t->rows[k];
				t->out[i] = ALLOC_OK;
				break;
			}
	return 0;
}

/* Runs allocate_tx over items[0..n); the outcome of a failed transaction is every allocation's. */
static int allocate_run(struct allocator_worker *w, struct cc_allocation **items, size_t n, enum alloc_outcome *out,
			char *why, size_t whylen)
{
	struct cc_allocation *res = calloc(2 * n, sizeof *res);
	if (!res) {
		for (size_t i = 0; i < n; i++)
			out[i] = ALLOC_RETRY;
		snprintf(why, whylen, "out of memory");
		return CC_ENOMEM;
	}
	struct allocate_tx t = { .w = w, .items = items, .n = n, .out = out, .res = res, .rows = res + n };
	int rc = cc_pg_run_locked(w->pg, allocate_tx, &t);
	enum alloc_outcome all = ALLOC_RETRY;
	switch (rc) {
	case 0:
		for (size_t i = 0; i < n; i++)
			if (out[i] == ALLOC_OK)
				*items[i] = res[i];
		snprintf(why, whylen, "no idle local server among %lld", (long long)w->a->cfg->local_capacity);
		break;
	case CC_ECONFLICT:
		all = ALLOC_LOST;
		break;
	case CC_ERETRY_EXHAUSTED:
		all = ALLOC_CONTENTION;
		snprintf(why, whylen, "retries exhausted");
		break;
	default:
		snprintf(why, whylen, "%s %s", cc_errname(rc), cc_pg_error_message(w->pg));
		break;
	}
	if (rc != 0)
		for (size_t i = 0; i < n; i++)
			out[i] = all;
	free(res);
	return rc;
}

void local_allocate_batch(struct allocator_worker *w, struct cc_allocation **items, size_t n, enum alloc_outcome *out,
			  char *why, size_t whylen)
{
	if (allocate_run(w, items, n, out, why, whylen) != CC_ECONFLICT || n == 1)
		return;
	/* Someone took one of ours over: find which, one allocation per transaction. */
	for (size_t i = 0; i < n; i++)
		(void)allocate_run(w, &items[i], 1, &out[i], why, whylen);
}

/* The allocation file's JSON (INTERFACES.md), malloc'd; NULL on failure. */
static char *allocation_json(const struct allocator *a, const struct cc_allocation *al)
{
	char token[CC_WORKLOAD_TOKEN_BUF];
	char *text = NULL;
	if (allocator_workload_token(a, al, token, sizeof token) != 0)
		return NULL;
	cJSON *o = cJSON_CreateObject();
	if (o && cJSON_AddNumberToObject(o, "version", 1) && cJSON_AddStringToObject(o, "allocation_id", al->id) &&
	    cJSON_AddStringToObject(o, "match_id", al->match_id) && cJSON_AddStringToObject(o, "server_id", al->server_id) &&
	    cJSON_AddStringToObject(o, "address", al->address) && cJSON_AddNumberToObject(o, "port", al->port) &&
	    cJSON_AddStringToObject(o, "workload_token", token) && cJSON_AddStringToObject(o, "playlist", al->playlist) &&
	    cJSON_AddStringToObject(o, "arena", al->arena) && cJSON_AddStringToObject(o, "region", al->region) &&
	    cJSON_AddStringToObject(o, "build", al->build) &&
	    cJSON_AddNumberToObject(o, "protocol_version", al->protocol_version))
		text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	sodium_memzero(token, sizeof token);
	return text;
}

int local_deliver(struct allocator_worker *w, const struct cc_allocation *al)
{
	char file[4096], tmp[4200];
	int rc = 0, fd = -1;
	char *text = NULL;

	/*
	 * The temporary file lives in a subdirectory: a child waiting on the
	 * state directory (inotify) then sees one event per allocation, the
	 * rename, instead of the write and two moves, and every child of the
	 * pool wakes for each of them.
	 */
	if (allocation_path(w->a, al->server_id, file, sizeof file) != 0 ||
	    snprintf(tmp, sizeof tmp, "%s/" TMP_DIR "/%s.json.%d", w->a->cfg->local_state_dir, al->server_id,
		     w->index) >= (int)sizeof tmp)
		return CC_ETOOBIG;
	text = allocation_json(w->a, al);
	if (!text)
		return CC_ENOMEM;
	size_t len = strlen(text);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = CC_EIO;
		goto out;
	}
	for (size_t off = 0; off < len;) {
		ssize_t k = write(fd, text + off, len - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			rc = CC_EIO;
			goto out;
		}
		off += (size_t)k;
	}
	/*
	 * No fsync: rename makes the file whole or absent for every reader,
	 * and after a machine crash local_pool_start writes every live
	 * allocation's file again from the database before any child starts.
	 * (An fsync per allocation was the largest step: 5 ms of 13.)
	 */
	if (close(fd) != 0) {
		fd = -1;
		rc = CC_EIO;
		goto out;
	}
	fd = -1;
	if (rename(tmp, file) != 0)
		rc = CC_EIO;
	else
		wake_child(w->a, al->server_id);
out:
	if (rc != 0)
		cc_log_error("allocation_file_failed", CC_LOG_STR("path", file), CC_LOG_STR("error", strerror(errno)));
	if (fd >= 0)
		close(fd);
	if (rc != 0)
		(void)unlink(tmp);
	if (text) {
		sodium_memzero(text, len);
		free(text);
	}
	return rc;
}
