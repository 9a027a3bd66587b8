# Cosmic Clash backend. Plain make: `make`, `make test`, `make demo`,
# `make bench`, `make install PREFIX=...`, `make clean`. V=1 shows commands.

.DEFAULT_GOAL := all
.SUFFIXES:
.SECONDARY:

PREFIX ?= /usr/local
B      := build
Q      := $(if $(filter 1,$(V)),,@)
VERSION := 0.1.0

# Recursive (=) so pkg-config is asked only when a rule needs it, after
# scripts/ensure-deps.sh had its chance to install the packages.
PKGS      = libmicrohttpd libcurl libpq hiredis libcjson libsodium
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
# libwslay (sys/ws, the WebSocket framer) ships no pkg-config file in Debian 12.
WSLAY_LIBS := -lwslay
PKG_LIBS   = $(shell pkg-config --libs $(PKGS)) $(WSLAY_LIBS) -lm -lpthread
# Each binary links only the packages it uses (SPEC 1): pkg_libs_for takes a
# binary's name and reads PKGS_<name>, defaulting to all of PKGS.
# tests/integration/link_lists.sh proves cc-migrate carries neither hiredis
# nor libmicrohttpd.
PKGS_cc-migrate := libpq libsodium libcjson
PKGS_cc-matcher := libmicrohttpd libpq hiredis libcjson libsodium
PKGS_cc-allocator := libmicrohttpd libcurl libpq libcjson libsodium
# cc-maintenance: PostgreSQL, the admin port, Redis (the candidate index it refreshes after a batch) and no HTTP client.
PKGS_cc-maintenance := libmicrohttpd libpq hiredis libcjson libsodium
PKGS_cc-testkit-allocator := $(PKGS_cc-allocator)
# cc-gameserver: sys without pg, redis and the HTTP server, plus ENet (SPEC 1);
# tests/integration/layers.sh proves it with ldd and nm.
PKGS_cc-gameserver := libenet libcurl libcjson libsodium
# sys/http_server answers WebSocket upgrades into sys/ws: whoever links libmicrohttpd links libwslay.
pkg_libs_for = $(shell pkg-config --libs $(or $(PKGS_$(1)),$(PKGS))) \
	$(if $(filter libmicrohttpd,$(or $(PKGS_$(1)),$(PKGS))),$(WSLAY_LIBS)) -lm -lpthread
CHECK_LIBS = $(shell pkg-config --libs check)

WARN := -Wall -Wextra -Werror -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes \
        -Wvla -Wwrite-strings -Wshadow
BASE_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) -Ilibcommon -Itests/support $(PKG_CFLAGS) -MMD -MP $(EXTRA_CFLAGS)
REL_CFLAGS   = $(BASE_CFLAGS) -O2 -g
ASAN_FLAGS  := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ASAN_CFLAGS  = $(BASE_CFLAGS) -O1 -g $(ASAN_FLAGS)

# libcommon is three layers (SPEC 1), one archive each: sys (infrastructure,
# no game words) < game (pure rules, no I/O) < store (all SQL on our
# tables). A binary links the archives from the top down, so a layer can
# use only those below it; scripts/check-layers.sh enforces the includes.
LAYERS   := sys game store
LIB_SRCS := $(foreach l,$(LAYERS),$(wildcard libcommon/$(l)/*.c))
layer_srcs = $(wildcard libcommon/$(1)/*.c)
REL_LIBS  := $(B)/rel/libcc-store.a $(B)/rel/libcc-game.a $(B)/rel/libcc-sys.a
ASAN_LIBS := $(B)/asan/libcc-store.a $(B)/asan/libcc-game.a $(B)/asan/libcc-sys.a

# Every services/<name>/main.c is a binary cc-<name>; gameserver/ is
# cc-gameserver. Files named testkit_*.c belong only to test-only binaries.
SERVICE_DIRS := $(patsubst %/main.c,%,$(wildcard services/*/main.c gameserver/main.c))
bin_name = $(if $(filter gameserver,$(1)),cc-gameserver,cc-$(notdir $(1)))
BINS := $(foreach d,$(SERVICE_DIRS),$(call bin_name,$(d)))
# cc-replay-dump prints cc-gameserver's replay log (gameserver/replay.h); its
# main is gameserver/tools/replay_dump.c, outside cc-gameserver's sources.
BINS += cc-replay-dump
PKGS_cc-replay-dump := libcjson libsodium

# Test-only binaries: cc-testkit-api is cc-api plus services/api/testkit_*.c;
# cc-testkit-allocator is cc-allocator plus services/allocator/testkit_*.c.
TESTKIT_BINS := $(if $(wildcard services/api/testkit_*.c),cc-testkit-api) \
	$(if $(wildcard services/allocator/testkit_*.c),cc-testkit-allocator)

SUPPORT_SRCS := $(wildcard tests/support/*.c)
UNIT_SRCS    := $(wildcard tests/unit/test_*.c)
INTEG_SRCS   := $(wildcard tests/integration/test_*.c)
BENCH_SRCS   := $(wildcard tests/bench/*.c)
FAKE_SRCS    := $(wildcard tests/fakes/*.c)
FAKE_BINS    := $(patsubst tests/fakes/%.c,$(B)/fakes/%,$(FAKE_SRCS))
UNIT_BINS    := $(patsubst %.c,$(B)/asan/%,$(UNIT_SRCS))
INTEG_BINS   := $(patsubst %.c,$(B)/asan/%,$(INTEG_SRCS))
BENCH_BINS   := $(patsubst tests/bench/%.c,$(B)/bench/%,$(BENCH_SRCS))

.PHONY: all tools test test-unit test-integration demo demo-community bench install clean deps tests-build

all: $(addprefix $(B)/bin/,$(BINS) $(TESTKIT_BINS))

# ---- objects -------------------------------------------------------------
$(B)/rel/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(REL_CFLAGS) -c -o $@ $<

$(B)/asan/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC-ASAN $<")
	$(Q)$(CC) $(ASAN_CFLAGS) -c -o $@ $<

# Only cc.o carries the build id, so a new commit rebuilds one file.
$(B)/rel/libcommon/sys/cc.o $(B)/asan/libcommon/sys/cc.o: \
	EXTRA_CFLAGS = -DCC_BUILD_VERSION='"$(VERSION) (git $(CC_GIT_REV))"'
# The image build has no .git: the Dockerfile passes the revision.
CC_GIT_REV ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)

# ... and is rebuilt when a commit moves HEAD.
$(B)/rel/libcommon/sys/cc.o $(B)/asan/libcommon/sys/cc.o: $(wildcard .git/HEAD .git/refs/heads/*)

define layer_rule
$(B)/rel/libcc-$(1).a: $(patsubst %.c,$(B)/rel/%.o,$(call layer_srcs,$(1)))
	$$(Q)rm -f $$@ && ar rcs $$@ $$^
$(B)/asan/libcc-$(1).a: $(patsubst %.c,$(B)/asan/%.o,$(call layer_srcs,$(1)))
	$$(Q)rm -f $$@ && ar rcs $$@ $$^
endef
$(foreach l,$(LAYERS),$(eval $(call layer_rule,$(l))))

# ---- binaries ------------------------------------------------------------
define bin_rule
$(B)/bin/$(call bin_name,$(1)): $(patsubst %.c,$(B)/rel/%.o,$(filter-out $(1)/testkit_%.c,$(wildcard $(1)/*.c))) $(REL_LIBS)
	@mkdir -p $$(@D)
	@$$(if $$(Q),echo "  LD      $$@")
	$$(Q)$$(CC) -o $$@ $$^ $$(call pkg_libs_for,$(call bin_name,$(1)))
endef
$(foreach d,$(SERVICE_DIRS),$(eval $(call bin_rule,$(d))))

$(B)/bin/cc-replay-dump: $(B)/rel/gameserver/tools/replay_dump.o $(B)/rel/gameserver/replay.o $(REL_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(call pkg_libs_for,cc-replay-dump)

$(B)/bin/cc-testkit-api: $(patsubst %.c,$(B)/rel/%.o,$(wildcard services/api/*.c)) $(REL_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(PKG_LIBS)

$(B)/bin/cc-testkit-allocator: $(patsubst %.c,$(B)/rel/%.o,$(wildcard services/allocator/*.c)) $(REL_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(call pkg_libs_for,cc-testkit-allocator)

# ---- the operator console's assets ------------------------------------------------
# scripts/embed.sh turns services/api/console/* into one C fragment that
# services/api/console.c includes: cc-api carries the page, nothing to deploy beside it.
CONSOLE_ASSETS := $(wildcard services/api/console/*)
$(B)/gen/console_assets.inc: scripts/embed.sh $(CONSOLE_ASSETS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  EMBED   $@")
	$(Q)scripts/embed.sh services/api/console $@
CONSOLE_OBJS := $(B)/rel/services/api/console.o $(B)/asan/services/api/console.o $(B)/fuzz/services/api/console.o
$(CONSOLE_OBJS): $(B)/gen/console_assets.inc
$(CONSOLE_OBJS): EXTRA_CFLAGS = -I$(B)/gen

# ---- a third playlist, for one test ------------------------------------------
# tests/integration/third_playlist.sh proves that adding a playlist is one
# entry in libcommon/game/playlist.c: it runs cc-matcher and cc-testkit-api
# linked from the stock objects and archives plus that one file compiled
# again with tests/integration/third_playlist.h (a 2v2 ranked "duo" in
# CC_PLAYLISTS_TEST_ENTRIES). The object comes before the archives, so the
# linker never takes the stock playlist.o from libcc-game.a.
THIRD      := $(B)/third-playlist
THIRD_BINS := $(THIRD)/bin/cc-matcher $(THIRD)/bin/cc-testkit-api

$(THIRD)/playlist.o: libcommon/game/playlist.c tests/integration/third_playlist.h
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $< (+ third playlist)")
	$(Q)$(CC) $(REL_CFLAGS) -include tests/integration/third_playlist.h -c -o $@ $<

$(THIRD)/bin/cc-matcher: $(THIRD)/playlist.o $(patsubst %.c,$(B)/rel/%.o,$(wildcard services/matcher/*.c)) $(REL_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(call pkg_libs_for,cc-matcher)

$(THIRD)/bin/cc-testkit-api: $(THIRD)/playlist.o $(patsubst %.c,$(B)/rel/%.o,$(wildcard services/api/*.c)) $(REL_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(PKG_LIBS)

# ---- tools -----------------------------------------------------------------
# cc-player, the simulated players and load generator (SPEC 1 puts it under
# tests/). Test tooling like the fakes: `tools` builds it for tests-build,
# demo and bench; `all` stays the service binaries and `install` never
# sees it.
PLAYER_SRCS := $(wildcard tests/player/*.c)
TOOL_BINS   := $(if $(PLAYER_SRCS),$(B)/bin/cc-player)

tools: $(TOOL_BINS)

# Its community mode (tests/player/community.c) drives the game-server test client's
# community client and play code (tests/gameserver/lobbyc.c, gsconn.c) rather than a copy.
PLAYER_GS_OBJS := $(B)/rel/tests/gameserver/lobbyc.o $(B)/rel/tests/gameserver/gsconn.o
$(B)/bin/cc-player: $(patsubst %.c,$(B)/rel/%.o,$(PLAYER_SRCS)) $(PLAYER_GS_OBJS) $(REL_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(PKG_LIBS) $(shell pkg-config --libs libenet)

# ---- tests -----------------------------------------------------------------
# A test binary links the real library objects (ASan build) plus the shared
# test support code; services' sources are linked minus main.c where a test
# names them in its TEST_LINK_<name> variable.
SUPPORT_OBJS = $(patsubst %.c,$(B)/asan/%.o,$(SUPPORT_SRCS))
$(B)/asan/tests/%: $(B)/asan/tests/%.o $(SUPPORT_OBJS) $(ASAN_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD-ASAN $@")
	$(Q)$(CC) $(ASAN_FLAGS) -o $@ $(filter-out %.a,$^) $(filter %.a,$^) $(CHECK_LIBS) $(PKG_LIBS)

# test_steam drives services/api/steam.c against the fake Steam server. Extra
# objects like this one are linked before the archive (see the recipe above).
$(B)/asan/tests/integration/test_steam: $(B)/asan/services/api/steam.o
# test_outbox_dispatch drives cc-maintenance's dispatcher (services/maintenance/dispatch.c) directly.
$(B)/asan/tests/integration/test_outbox_dispatch: $(B)/asan/services/maintenance/dispatch.o
$(B)/asan/tests/unit/test_player_latency: $(B)/asan/tests/player/latency.o
# test_player_events: cc-player's decoding of the event stream's messages.
$(B)/asan/tests/unit/test_player_events: $(B)/asan/tests/player/events.o
$(B)/asan/tests/unit/test_gs_input: $(B)/asan/gameserver/input.o $(B)/asan/gameserver/wire_glue.o $(B)/asan/gameserver/match.o
$(B)/asan/tests/unit/test_gs_admission: $(B)/asan/gameserver/admission.o $(B)/asan/gameserver/wire_glue.o $(B)/asan/gameserver/match.o
# test_player_game plays cc-player's game stage against a game server in the test, over real ENet.
$(B)/asan/tests/unit/test_player_game: $(B)/asan/tests/player/game.o $(B)/asan/tests/player/predict.o \
	$(B)/asan/tests/player/clocksync.o $(B)/asan/tests/player/latency.o
# test_player_predict: own-ship prediction, reconciliation and its error; clock sync from pongs.
$(B)/asan/tests/unit/test_player_predict: $(B)/asan/tests/player/predict.o $(B)/asan/tests/player/clocksync.o \
	$(B)/asan/tests/player/latency.o
$(B)/asan/tests/unit/test_player_game: PKG_LIBS += $(shell pkg-config --libs libenet)
$(B)/asan/tests/unit/test_replay: $(B)/asan/gameserver/replay.o
# test_gs_community drives community mode (gameserver/community.c) in-process over real ENet on loopback.
$(B)/asan/tests/unit/test_gs_community: $(B)/asan/gameserver/community.o $(B)/asan/gameserver/pace.o $(B)/asan/gameserver/play.o \
	$(B)/asan/gameserver/match.o $(B)/asan/gameserver/input.o $(B)/asan/gameserver/wire_glue.o $(B)/asan/gameserver/replay.o
$(B)/asan/tests/unit/test_gs_community: PKG_LIBS += $(shell pkg-config --libs libenet)
# test_gs_reporter: the reporter's queue under a receipt flood (its API a closed port).
$(B)/asan/tests/unit/test_gs_reporter: $(B)/asan/gameserver/reporter.o
# test_netsim drives sys/netsim over real ENet on loopback.
$(B)/asan/tests/unit/test_netsim: PKG_LIBS += $(shell pkg-config --libs libenet)

# The game-server bench links cc-gameserver's objects minus main.c, and ENet.
$(B)/bench/gameserver: tests/bench/gameserver.c $(patsubst %.c,$(B)/rel/%.o,$(filter-out gameserver/main.c,$(wildcard gameserver/*.c))) $(REL_LIBS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(REL_CFLAGS) -o $@ $^ $(PKG_LIBS) -lenet

$(B)/bench/%: tests/bench/%.c $(REL_LIBS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(REL_CFLAGS) -o $@ $^ $(PKG_LIBS)

# Fakes stand in for what cannot run here (Steam's Web API, Agones); tests
# and the demo talk to them over real HTTP.
$(B)/fakes/%: tests/fakes/%.c $(REL_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(REL_CFLAGS) -o $@ $^ $(PKG_LIBS)

# gsclient: the game-server test client (mints rosters and join tokens, plays,
# misbehaves), driven by tests/integration/gameserver_*.sh over real ENet.
GSCLIENT := $(if $(wildcard tests/gameserver/*.c),$(B)/tests/gsclient)
$(B)/tests/gsclient: $(patsubst %.c,$(B)/rel/%.o,$(wildcard tests/gameserver/*.c)) $(REL_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(PKG_LIBS) -lenet

# ---- fuzzing (libFuzzer from clang; issue 13) ---------------------------------
# Every tests/fuzz/fuzz_<name>.c is one libFuzzer target, build/fuzz/fuzz_<name>,
# linked against the library and cc-api's objects compiled a third time by clang
# with coverage and ASan/UBSan (make test runs each briefly through
# tests/integration/fuzz_brief.sh; `make fuzz` runs a campaign, FUZZ_SECONDS per
# target). Seeds: tests/fuzz/corpus/<name>/. How to add one: tests/fuzz/README.md.
FUZZ_CC     ?= clang
FUZZ_SAN    := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
# clang (not gcc) flags the one vsnprintf of a library-supplied format in http_server.c.
FUZZ_CFLAGS  = $(BASE_CFLAGS) -Wno-format-nonliteral -O1 -g $(FUZZ_SAN) -fsanitize=fuzzer-no-link
FUZZ_SRCS   := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS   := $(patsubst tests/fuzz/%.c,$(B)/fuzz/%,$(FUZZ_SRCS))
FUZZ_LIBS   := $(B)/fuzz/libcc-store.a $(B)/fuzz/libcc-game.a $(B)/fuzz/libcc-sys.a
# cc-api's request decoders live beside its handlers: link its objects minus main.
FUZZ_API_OBJS := $(patsubst %.c,$(B)/fuzz/%.o,$(filter-out services/api/main.c services/api/testkit_%.c,$(wildcard services/api/*.c)))
FUZZ_SECONDS ?= 60

$(B)/fuzz/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC-FUZZ $<")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

define fuzz_layer_rule
$(B)/fuzz/libcc-$(1).a: $(patsubst %.c,$(B)/fuzz/%.o,$(call layer_srcs,$(1)))
	$$(Q)rm -f $$@ && ar rcs $$@ $$^
endef
$(foreach l,$(LAYERS),$(eval $(call fuzz_layer_rule,$(l))))

$(B)/fuzz/fuzz_%: $(B)/fuzz/tests/fuzz/fuzz_%.o $(FUZZ_API_OBJS) $(FUZZ_LIBS)
	@$(if $(Q),echo "  LD-FUZZ $@")
	$(Q)$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $(filter-out %.a,$^) $(filter %.a,$^) $(PKG_LIBS)

# fuzz_replay_file reads cc-gameserver's replay log with the reader cc-replay-dump uses.
$(B)/fuzz/fuzz_replay_file: $(B)/fuzz/gameserver/replay.o
# fuzz_wire_to_server also runs community mode's reading of refused packets (gameserver/play.h).
$(B)/fuzz/fuzz_wire_to_server: $(B)/fuzz/gameserver/play.o $(B)/fuzz/gameserver/match.o $(B)/fuzz/gameserver/wire_glue.o

fuzz-build: $(FUZZ_BINS)

.PHONY: fuzz fuzz-build
fuzz:
	$(Q)scripts/ensure-deps.sh
	$(Q)$(MAKE) --no-print-directory fuzz-build
	$(Q)FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh

tests-build: all tools $(UNIT_BINS) $(INTEG_BINS) $(FAKE_BINS) $(BENCH_BINS) $(THIRD_BINS) $(FUZZ_BINS) $(GSCLIENT)

deps:
	$(Q)scripts/ensure-deps.sh

# make test: install what is missing, build, unit tests under ASan/UBSan,
# then integration tests against a disposable PostgreSQL and Redis.
test:
	$(Q)scripts/ensure-deps.sh
	$(Q)$(MAKE) --no-print-directory tests-build
	$(Q)scripts/run-tests.sh

test-unit: tests-build
	$(Q)scripts/run-tests.sh unit
test-integration: tests-build
	$(Q)scripts/run-tests.sh integration

demo:
	$(Q)scripts/ensure-deps.sh
	$(Q)$(MAKE) --no-print-directory all tools
	$(Q)scripts/demo.sh

# make demo-community: community mode on loopback (issue 23), about 20 s, one summary line.
demo-community:
	$(Q)scripts/ensure-deps.sh
	$(Q)$(MAKE) --no-print-directory all tools
	$(Q)scripts/demo-community.sh

# make bench: every part (scripts/bench-all.sh: heartbeat, matcher, allocator,
# events, gameserver, and the density part once scripts/bench-density.sh is
# there), then one summary table of every figure beside its same-run
# reference and target (scripts/bench-summary.sh print). Fails when a part
# failed; BENCH_STRICT=1 also fails on a missed target. BENCH_PARTS picks parts.
bench:
	$(Q)scripts/ensure-deps.sh
	$(Q)$(MAKE) --no-print-directory all tools $(BENCH_BINS) $(GSCLIENT) $(FAKE_BINS)
	$(Q)scripts/bench-all.sh

# ---- images and the disposable stack (issue 21) ----------------------------------
# make images: every Dockerfile target built with podman from the Debian archive
# (scripts/images.sh; the base tarball is cached), then each image's size.
# make stack-up / stack-down: the whole system as containers on loopback ports
# it prints (scripts/stack.sh; STACK=name runs another one beside it).
.PHONY: images stack-up stack-down stack-status
STACK ?= cc-stack
images:
	$(Q)scripts/images.sh build

stack-up: images
	$(Q)scripts/stack.sh up $(STACK)

stack-down:
	$(Q)scripts/stack.sh down $(STACK)

stack-status:
	$(Q)scripts/stack.sh status $(STACK)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/cosmic-clash/migrations \
		$(DESTDIR)$(PREFIX)/share/cosmic-clash/contracts/v1
	install -m 0755 $(addprefix $(B)/bin/,$(BINS)) $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 migrations/*.sql $(DESTDIR)$(PREFIX)/share/cosmic-clash/migrations/
	install -m 0644 contracts/v1/*.json $(DESTDIR)$(PREFIX)/share/cosmic-clash/contracts/v1/

clean:
	rm -rf $(B)

-include $(shell find $(B) -name '*.d' 2>/dev/null)
