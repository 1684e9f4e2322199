# clrtap build. GNU make.
#
#   make            build build/clrtap (warnings are errors)
#   make demo       install deps, build, start the sample app and run clrtap on it
#   make check      install deps, build fixtures, run every test (unit, ASan+UBSan, fuzz, integration)
#
# Variables: O=<dir> output directory (default build), SAN=1 sanitizer build
# (clang, ASan+UBSan), V=1 verbose.

O ?= build
SAN ?=
V ?=

ifeq ($(V),)
Q := @
else
Q :=
endif

ifeq ($(SAN),1)
CC := clang
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
OPT ?= -O1 -g
else
CC ?= cc
SANFLAGS :=
OPT ?= -O2 -g
endif

WARNINGS := -Wall -Wextra -Werror -Wshadow -Wmissing-prototypes -Wstrict-prototypes \
	-Wformat=2 -Wvla -Wpointer-arith -Wundef -Wno-unused-parameter -Wno-format-nonliteral
CFLAGS ?= $(OPT)
ALL_CFLAGS := -std=gnu11 $(WARNINGS) $(CFLAGS) $(SANFLAGS) -Ilib -MMD -MP -D_FILE_OFFSET_BITS=64
LDLIBS := -lelf -ldw -lz -lpthread -ldl -lm
ifeq ($(SAN),1)
# The runtime's DAC (dump analyze) throws C++ exceptions inside itself: ASan's
# __cxa_throw interceptor needs libstdc++ loaded before it starts.
LDLIBS += -Wl,--no-as-needed -lstdc++ -Wl,--as-needed
endif
ALL_LDFLAGS := $(LDFLAGS) $(SANFLAGS)

# Libraries: every lib/<name>/*.c except unit tests (*_test.c) and fuzz harnesses (*_fuzz.c).
# LIBS narrows the build to some libraries (e.g. LIBS="common proc ipc").
LIBS ?= $(notdir $(patsubst %/,%,$(sort $(dir $(wildcard lib/*/*.c)))))
LIB_SRCS := $(filter-out %_test.c %_fuzz.c,$(foreach d,$(LIBS),$(wildcard lib/$(d)/*.c)))
LIB_OBJS := $(LIB_SRCS:%.c=$(O)/%.o)
LIBA := $(O)/libclrtap.a

CLI_SRCS := $(filter-out %_test.c,$(wildcard src/*.c src/cmd/*.c))
CLI_OBJS := $(CLI_SRCS:%.c=$(O)/%.o)
# Only the CLI sees src/ headers: libraries must not depend on it.
$(CLI_OBJS): ALL_CFLAGS += -Isrc

TEST_SRCS := $(foreach d,$(LIBS),$(wildcard lib/$(d)/*_test.c))
TEST_BINS := $(TEST_SRCS:%.c=$(O)/%) $(if $(filter common,$(LIBS)),$(O)/src/cli_test)

FUZZ_SRCS := $(foreach d,$(LIBS),$(wildcard lib/$(d)/*_fuzz.c))
FUZZ_BINS := $(patsubst %.c,$(O)/fuzz/%,$(FUZZ_SRCS))

TOOL_SRCS := $(wildcard tests/tools/*.c)
TOOL_BINS := $(TOOL_SRCS:%.c=$(O)/%)

# VERSION is the commit (git describe); SEMVER the release (the file VERSION).
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo unknown)
SEMVER := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

.PHONY: all deps fixtures unit test-bins unit-san fuzz integration check demo bench clean tools lint \
	gendocs install dist deb
.DEFAULT_GOAL := all

all: $(O)/clrtap tools profiler $(O)/tests/clrtap-tdef

# The in-process profiler (profiler/): plain C, only libc, one export. Built
# twice: with gcc for glibc targets and with musl-gcc (musl-tools) for Alpine.
# clrtap finds them at <dir of clrtap>/profiler/<libc>/libclrtap-profiler.so.
PROF_SRCS := profiler/profiler.c profiler/rejit.c profiler/natmem.c lib/agent/ilrw.c
PROF_CFLAGS := -std=c11 -O2 -g -fPIC -fno-omit-frame-pointer -fvisibility=hidden $(WARNINGS) -Ilib \
	-DCLRTAP_PROFILER_VERSION='"$(VERSION)"'
PROF_LDFLAGS := -shared -Wl,--version-script=profiler/libclrtap-profiler.map \
	-Wl,-z,nodelete -Wl,-z,now -Wl,--no-undefined
PROF_DEPS := $(PROF_SRCS) profiler/corprof_c.h profiler/callbacks.h lib/agent/agent_proto.h \
	profiler/internal.h lib/agent/ilrw.h lib/agent/natmem_proto.h \
	profiler/libclrtap-profiler.map
MUSL_CC ?= musl-gcc
.PHONY: profiler
profiler: $(O)/profiler/glibc/libclrtap-profiler.so $(O)/profiler/musl/libclrtap-profiler.so \
	$(O)/profiler/glibc/profload $(O)/profiler/musl/profload
# profload: loads a build the way the runtime does, under that libc's own loader.
$(O)/profiler/glibc/profload: profiler/test/profload.c lib/agent/agent_proto.h
	@mkdir -p $(@D)
	$(Q)gcc -std=c11 -O1 -g $(WARNINGS) -Ilib -o $@ $< -ldl
$(O)/profiler/musl/profload: profiler/test/profload.c lib/agent/agent_proto.h
	@mkdir -p $(@D)
	$(Q)$(MUSL_OK); $(MUSL_CC) -std=c11 -O1 -g $(WARNINGS) -Ilib -o $@ $<
$(O)/profiler/glibc/libclrtap-profiler.so: $(PROF_DEPS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  SO      $@")
	$(Q)gcc $(PROF_CFLAGS) $(PROF_LDFLAGS) -o $@ $(PROF_SRCS) -lpthread
# Without musl-gcc (scripts/install-deps.sh installs it) the musl build is
# skipped with a note; t-agent.sh then fails on its absence.
MUSL_OK = command -v $(MUSL_CC) >/dev/null 2>&1 || { echo "note: $(MUSL_CC) not found: no musl build of the profiler"; exit 0; }
$(O)/profiler/musl/libclrtap-profiler.so: $(PROF_DEPS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  SO/MUSL $@")
	$(Q)$(MUSL_OK); $(MUSL_CC) $(PROF_CFLAGS) $(PROF_LDFLAGS) -o $@ $(PROF_SRCS)

$(O)/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -DCLRTAP_VERSION='"$(VERSION)"' -DCLRTAP_SEMVER='"$(SEMVER)"' -c -o $@ $<

$(LIBA): $(LIB_OBJS) $(O)/gen/flamepage.o
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

# lib/flame's HTML page draws with the UI's own flame graph (web/util.js, flame.js, flame.css).
$(O)/gen/flamepage.c: scripts/embed-web.sh web/util.js web/flame.js web/flame.css | $(O)/gen/.dir
	$(Q)scripts/embed-web.sh --strings $@ ct_util_js web/util.js ct_flame_js web/flame.js \
		ct_flame_css web/flame.css
$(O)/gen/flamepage.o: $(O)/gen/flamepage.c
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(O)/clrtap: $(CLI_OBJS) $(O)/gen/webassets.o $(LIBA)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJS) $(O)/gen/webassets.o $(LIBA) $(LDLIBS)

# clrtap serve embeds web/ (the UI) and its OpenAPI document (scripts/embed-web.sh).
# (the directories too: a file removed from web/ changes its directory's time)
WEB_FILES := $(shell find web 2>/dev/null)
$(O)/gen/webassets.c: scripts/embed-web.sh lib/serve/openapi.json $(WEB_FILES) | $(O)/gen/.dir
	$(Q)scripts/embed-web.sh $@ web lib/serve/openapi.json
$(O)/gen/webassets.o: $(O)/gen/webassets.c
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<
$(O)/gen/.dir:
	@mkdir -p $(@D) && touch $@

# clrtap with one default of the task table changed (doctor's duration 10 -> 7),
# for tests/integration/t-tasks.sh: --help, openapi.json and the UI must follow.
# Only lib/task/table.c differs; the linker takes it before the archive's.
TDEF := -DTASK_TEST_DEFAULT='"doctor","duration","7"'
$(O)/tests/table-tdef.o: lib/task/table.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(TDEF) -c -o $@ $<
$(O)/tests/clrtap-tdef: $(CLI_OBJS) $(O)/gen/webassets.o $(O)/tests/table-tdef.o $(LIBA)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJS) $(O)/gen/webassets.o $(O)/tests/table-tdef.o $(LIBA) $(LDLIBS)

tools: $(TOOL_BINS)
$(O)/tests/tools/%: tests/tools/%.c $(LIBA)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIBA) $(LDLIBS)

# The CLI's shared parser (src/cli.c) is tested alone, linked with the libraries.
$(O)/src/cli_test: src/cli_test.c $(O)/src/cli.o $(LIBA)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  TEST    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -Isrc $(ALL_LDFLAGS) -o $@ $< $(O)/src/cli.o $(LIBA) -lcmocka $(LDLIBS)

$(O)/lib/%_test: lib/%_test.c $(LIBA)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  TEST    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -DCT_SRCDIR='"$(CURDIR)"' $(ALL_LDFLAGS) -o $@ $< $(LIBA) -lcmocka $(LDLIBS)

# Fuzz harnesses always build with clang's libFuzzer plus ASan+UBSan. The
# libraries are compiled once with coverage (fuzzer-no-link) into one archive
# that every harness links.
FUZZ_CFLAGS := -std=gnu11 -g -O1 -Ilib -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_LIB_OBJS := $(LIB_SRCS:%.c=$(O)/fuzz/obj/%.o)
FUZZ_LIBA := $(O)/fuzz/libclrtap-fuzz.a
$(O)/fuzz/obj/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC/FUZZ $<")
	$(Q)clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -D_FILE_OFFSET_BITS=64 -c -o $@ $<
$(O)/fuzz/obj/gen/flamepage.o: $(O)/gen/flamepage.c
	@mkdir -p $(@D)
	$(Q)clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<
$(FUZZ_LIBA): $(FUZZ_LIB_OBJS) $(O)/fuzz/obj/gen/flamepage.o
	$(Q)rm -f $@ && ar rcs $@ $^
$(O)/fuzz/lib/%_fuzz: lib/%_fuzz.c $(FUZZ_LIBA)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  FUZZ    $@")
	$(Q)clang $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIBA) $(LDLIBS)

lint: all
	$(Q)O=$(O) scripts/lint.sh

deps:
	$(Q)scripts/install-deps.sh

fixtures:
	$(Q)scripts/build-fixtures.sh

test-bins: $(TEST_BINS)

unit: $(TEST_BINS)
	$(Q)scripts/run-unit.sh $(TEST_BINS)

# The sanitizer build also makes an ASan+UBSan clrtap, which integration tests
# feed damaged input (SAN_CLRTAP).
unit-san:
	$(Q)$(MAKE) --no-print-directory O=$(O)/san SAN=1 unit $(O)/san/clrtap

fuzz: $(FUZZ_BINS)
	$(Q)scripts/run-fuzz.sh $(O)/fuzz $(FUZZ_BINS)

integration: all
	$(Q)CLRTAP=$(CURDIR)/$(O)/clrtap TOOLS=$(CURDIR)/$(O)/tests/tools \
		SAN_CLRTAP=$(wildcard $(CURDIR)/$(O)/san/clrtap) tests/integration/run.sh

# The README's test command.
# Builds use every CPU (CI calls plain `make check`); tests run in order.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
check: deps
	$(Q)$(MAKE) --no-print-directory fixtures
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) all
	$(Q)O=$(O) scripts/lint.sh
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) $(TEST_BINS)
	$(Q)$(MAKE) --no-print-directory unit
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) O=$(O)/san SAN=1 $(O)/san/clrtap test-bins
	$(Q)$(MAKE) --no-print-directory unit-san
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) $(FUZZ_BINS)
	$(Q)$(MAKE) --no-print-directory fuzz
	$(Q)$(MAKE) --no-print-directory integration

# The README's first command: the main job on the bundled sample app.
demo: deps
	$(Q)$(MAKE) --no-print-directory fixtures all
	$(Q)CLRTAP=$(CURDIR)/$(O)/clrtap scripts/demo.sh

bench: all fixtures
	$(Q)CLRTAP=$(CURDIR)/$(O)/clrtap bench/run.sh

# ----- shipping (docs/install.md) -----
# Man pages and completions from the binary's own tables (scripts/gen-docs.sh).
gendocs: $(O)/share/.stamp
$(O)/share/.stamp: $(O)/clrtap scripts/gen-docs.sh docs/cmd/exit-codes.md
	$(Q)rm -rf $(O)/share && scripts/gen-docs.sh $(O)/clrtap $(O)/share && touch $@

# make install [PREFIX=/usr/local] [DESTDIR=]: the binary, the profiler
# libraries where it finds them (PREFIX/lib/clrtap/<libc>/, beside
# PREFIX/bin), man pages, bash/zsh/fish completions.
PREFIX ?= /usr/local
DESTDIR ?=
# where: a root directory (DESTDIR + PREFIX); used by install, dist, deb
define install_tree
	install -d $(1)/bin $(1)/lib/clrtap/glibc $(1)/share/man/man1 \
		$(1)/share/bash-completion/completions $(1)/share/zsh/site-functions \
		$(1)/share/fish/vendor_completions.d $(1)/share/doc/clrtap
	install -m 755 $(2) $(1)/bin/clrtap
	install -m 644 $(O)/profiler/glibc/libclrtap-profiler.so $(1)/lib/clrtap/glibc/
	if [ -f $(O)/profiler/musl/libclrtap-profiler.so ]; then install -d $(1)/lib/clrtap/musl && \
		install -m 644 $(O)/profiler/musl/libclrtap-profiler.so $(1)/lib/clrtap/musl/; fi
	install -m 644 $(O)/share/man/man1/*.1 $(1)/share/man/man1/
	install -m 644 $(O)/share/completion/clrtap.bash $(1)/share/bash-completion/completions/clrtap
	install -m 644 $(O)/share/completion/_clrtap $(1)/share/zsh/site-functions/_clrtap
	install -m 644 $(O)/share/completion/clrtap.fish $(1)/share/fish/vendor_completions.d/clrtap.fish
	install -m 644 README.md docs/install.md $(1)/share/doc/clrtap/
endef
install: $(O)/clrtap profiler gendocs
	$(call install_tree,$(DESTDIR)$(PREFIX),$(O)/clrtap)

# make dist: build/dist/clrtap-VERSION-linux-x64.tar.gz, one folder to unpack
# anywhere. It bundles the shared libraries clrtap links and the ones it
# loads when needed (capstone, libmicrohttpd, SQLite, libcrypto, libcurl, and what
# they link), found through an RPATH of $ORIGIN/../lib/clrtap/deps; only the
# C library (glibc 2.36 or newer) must be on the machine.
DIST_NAME := clrtap-$(SEMVER)-linux-x64
DIST_DLOPEN := libcapstone.so.4 libmicrohttpd.so.12 libsqlite3.so.0 libcrypto.so.3 libcurl.so.4 libdebuginfod.so.1
$(O)/dist/clrtap-rpath: $(CLI_OBJS) $(O)/gen/webassets.o $(LIBA)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_LDFLAGS) -Wl,--disable-new-dtags,-rpath,'$$ORIGIN/../lib/clrtap/deps' -o $@ \
		$(CLI_OBJS) $(O)/gen/webassets.o $(LIBA) $(LDLIBS)
dist: $(O)/dist/clrtap-rpath profiler gendocs
	$(Q)rm -rf $(O)/dist/$(DIST_NAME) && mkdir -p $(O)/dist/$(DIST_NAME)/lib/clrtap/deps
	$(Q)$(call install_tree,$(O)/dist/$(DIST_NAME),$(O)/dist/clrtap-rpath)
	$(Q)scripts/bundle-libs.sh $(O)/dist/$(DIST_NAME)/lib/clrtap/deps $(O)/clrtap $(DIST_DLOPEN)
	$(Q)tar -C $(O)/dist -czf $(O)/dist/$(DIST_NAME).tar.gz --owner=0 --group=0 $(DIST_NAME)
	@echo "$(O)/dist/$(DIST_NAME).tar.gz"

# make deb: build/dist/clrtap_VERSION_amd64.deb (dpkg-deb), installed in /usr.
# Depends: what clrtap links; Recommends: what probe, serve, fleet and the symbol
# cache load when used.
DEB_DEPENDS := libc6 (>= 2.36), libelf1, libdw1, zlib1g
DEB_RECOMMENDS := libcapstone4, libmicrohttpd12, libsqlite3-0, libssl3, libcurl4, libdebuginfod1
deb: $(O)/clrtap profiler gendocs
	$(Q)rm -rf $(O)/deb && mkdir -p $(O)/deb/root/DEBIAN $(O)/dist
	$(Q)$(call install_tree,$(O)/deb/root/usr,$(O)/clrtap)
	$(Q)mv $(O)/deb/root/usr/share/man/man1 $(O)/deb/man1 && mkdir $(O)/deb/root/usr/share/man/man1 && \
		for f in $(O)/deb/man1/*.1; do gzip -9n <$$f >$(O)/deb/root/usr/share/man/man1/$${f##*/}.gz; done
	$(Q)printf '%s\n' "Package: clrtap" "Version: $(SEMVER)" "Architecture: amd64" \
		"Maintainer: clrtap developers <clrtap@localhost>" "Section: devel" "Priority: optional" \
		"Depends: $(DEB_DEPENDS)" "Recommends: $(DEB_RECOMMENDS)" \
		"Installed-Size: $$(du -sk $(O)/deb/root/usr | cut -f1)" \
		"Description: diagnostics for running .NET processes, no restart" \
		" CPU profiles, method probes, EventPipe traces, counters, heap snapshots," \
		" dumps and a web UI for .NET (CoreCLR) processes on Linux, host or container." \
		>$(O)/deb/root/DEBIAN/control
	$(Q)dpkg-deb --root-owner-group -Zgzip --build $(O)/deb/root $(O)/dist/clrtap_$(SEMVER)_amd64.deb >/dev/null
	@echo "$(O)/dist/clrtap_$(SEMVER)_amd64.deb"

clean:
	rm -rf $(O)

-include $(shell find $(O) -name '*.d' -type f 2>/dev/null)
