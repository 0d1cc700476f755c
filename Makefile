# attngeom — build, test, demo, bench.
#   make           installs missing packages, builds the library
#                  (build/libattngeom.a, .so), CLI (build/attngeom) and examples
#   make test      installs missing Debian packages, builds, runs every test
#                  (the Python package's too: make python-test)
#   make arch-test the structure checks of tests/arch/ (part of test; tests/README.md)
#   make sanitize  ASan + UBSan build in build-san/ (build/ is untouched), then
#                  unit, CLI, reference and Python tests under it (not valgrind)
#   make mpi       attngeom-mpi (build/attngeom-mpi): the corpus and weight
#                  commands over the ranks of an MPI job (docs/scaling.md);
#                  needs Open MPI (libopenmpi-dev, which make installs)
#   make demo      installs missing packages, builds, runs the main job
#   make bench     benchmarks (speed and memory are measured here, never in tests):
#                  bench/*.c, then attngeom side by side with numpy/scipy and
#                  PyTorch (bench/peers.py; BENCH_REPS=N runs each, default 3);
#                  BENCH_8B=1 adds bench-8b
#   make bench-8b  a LLaMA-3-8B-shaped BF16 model (16 GB of disk): peak RSS, tokens/s
#   make fuzz      libFuzzer harnesses of tests/fuzz/, FUZZ_SECONDS each (not in test)
#   make adversarial  hostile inputs of every known class (tests/adversarial/):
#                  builds build/ and build-san/, runs every case on each, prints
#                  a table of verdicts (not in test; ADV_FILTER=TEXT picks cases)
#   make install   PREFIX=/usr/local (default) DESTDIR= : the CLI, the shared
#                  and static library, headers, attngeom.pc, man pages, and the
#                  Python package when PYTHONDIR is given (docs/library.md)
#   make uninstall the same variables: removes exactly what install installed
#   make clean
# WERROR=1 turns warnings into errors (CI sets it). CPPFLAGS, CFLAGS and
# LDFLAGS from the command line or the environment are added after the
# project's own flags (AG_*), never instead of them: `make CFLAGS='-O0 -g'`
# keeps -std=c11 -Iinclude ... and builds at -O0. CC=clang works too.

CC      ?= cc
BUILD   := build
PKGS    := lapacke openblas gsl jansson libpcre2-8 libutf8proc cairo fontconfig sndfile libpng libjpeg \
           igraph
# -Iinclude only: the CLI, the MPI driver, the examples and the benchmarks see
# the public API and nothing else (tests/cli/build.sh checks make -n). The
# library's objects and the unit tests add -Isrc below (INTERNAL_CPPFLAGS).
AG_CPPFLAGS := -D_GNU_SOURCE -Iinclude
INTERNAL_CPPFLAGS := -Isrc
# Header dependencies: every compile writes a .d file next to its output
# (-MP: a deleted header is no error); see "Dependencies" below.
DEPFLAGS    := -MMD -MP
AG_CFLAGS   := -O2 -g -std=c11 -Wall -Wextra -Wshadow -Wstrict-prototypes \
               -Wno-unused-parameter -fPIC -pthread
AG_LDFLAGS  := -pthread
ifeq ($(WERROR),1)
AG_CFLAGS   += -Werror
endif
ifeq ($(SANITIZE),1)
# float-cast-overflow: part of clang's "undefined", not of gcc's
SAN_FLAGS   := -fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer \
               -fno-sanitize-recover=all
AG_CFLAGS   += $(SAN_FLAGS)
AG_LDFLAGS  += $(SAN_FLAGS)
endif
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
LDLIBS  = $(PKG_LIBS) -lm
# What every compile and link line gets; the user's flags come last and win.
COMPILE = $(CC) $(AG_CPPFLAGS) $(PKG_CFLAGS) $(CPPFLAGS) $(AG_CFLAGS) $(CFLAGS)
LINK    = $(CC) $(AG_LDFLAGS) $(CFLAGS) $(LDFLAGS)

# The library: every source of src/'s module folders (src/ holds no files of
# its own) and of analysis/ but the CLI's and the MPI driver's, so moving a
# file between its folders never touches this Makefile.
LIB_SRCS  := $(filter-out src/cli/% src/mpi/%,$(wildcard src/*/*.c analysis/*.c))
CLI_SRCS  := $(wildcard src/cli/*.c)
# tests/util/*.c: helpers the unit tests share (xz_file.c reads the
# xz-compressed test data with liblzma).
TEST_SRCS := $(wildcard tests/*/test_*.c) $(wildcard tests/util/*.c)
# analysis/vlog.c again, once per clone of its target_clones under another
# name, for tests/analysis/test_vlog.c to compare them (vlog_clone.h).
TEST_SRCS += $(wildcard tests/analysis/vlog_clone_*.c)
EX_SRCS   := $(wildcard examples/*.c)
BENCH_SRCS:= $(wildcard bench/*.c)

LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/%.o)
CLI_OBJS  := $(CLI_SRCS:%.c=$(BUILD)/%.o)
TEST_OBJS := $(TEST_SRCS:%.c=$(BUILD)/%.o)

# The version has one home, include/attngeom/core.h (AG_VERSION_MAJOR, ...).
VERSION_PART = $(shell sed -n 's/^\#define AG_VERSION_$(1) \([0-9][0-9]*\)$$/\1/p' include/attngeom/core.h)
VERSION_MAJOR := $(call VERSION_PART,MAJOR)
VERSION       := $(VERSION_MAJOR).$(call VERSION_PART,MINOR).$(call VERSION_PART,PATCH)
# The shared library: the file libattngeom.so.MAJOR.MINOR.PATCH, its SONAME
# libattngeom.so.MAJOR (what programs record and the loader looks for) and the
# link-time name libattngeom.so, both symlinks to the file (ABI rule: core.h).
SONAME      := libattngeom.so.$(VERSION_MAJOR)
LIB_SO_FILE := $(BUILD)/libattngeom.so.$(VERSION)
LIB_SO_MAJ  := $(BUILD)/$(SONAME)

LIB_A   := $(BUILD)/libattngeom.a
LIB_SO  := $(BUILD)/libattngeom.so
CLI     := $(BUILD)/attngeom
TESTBIN := $(BUILD)/tests/run_tests
EXAMPLES:= $(EX_SRCS:%.c=$(BUILD)/%)
BENCHES := $(BENCH_SRCS:%.c=$(BUILD)/%)

.PHONY: all build deps mpi test unit cli-test ref-test arch-test python-test valgrind sanitize demo bench bench-8b examples fuzz clean \
        adversarial docs-options \
        install uninstall

all: deps
	$(MAKE) build

# What `all` builds, without the package check.
build: $(LIB_A) $(LIB_SO) $(LIB_SO_MAJ) $(CLI) $(EXAMPLES)

deps:
	@sh scripts/install-deps.sh

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) $(DEPFLAGS) -c $< -o $@

# Only the library's objects and the unit tests may include src/'s private
# headers.
$(LIB_OBJS) $(TEST_OBJS): AG_CPPFLAGS += $(INTERNAL_CPPFLAGS)

# The library exports only what its headers mark AG_EXPORT (the public ag_
# API); internal functions stay inside it. Static linking (the CLI, tests,
# examples use libattngeom.a) sees every symbol regardless.
$(LIB_OBJS): AG_CFLAGS += -fvisibility=hidden
# Pillow's resampling and HF's float32 normalisation are matched bit for bit:
# no multiply-add may be fused there (docs/vision.md).
$(BUILD)/src/media/%.o: AG_CFLAGS += -ffp-contract=off

$(LIB_A): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIB_SO_FILE): $(LIB_OBJS)
	$(LINK) -shared -Wl,-soname,$(SONAME) -o $@ $^ $(LDLIBS)

$(LIB_SO_MAJ) $(LIB_SO): $(LIB_SO_FILE)
	ln -sf $(notdir $<) $@

$(CLI): $(CLI_OBJS) $(LIB_A)
	$(LINK) -o $@ $(CLI_OBJS) $(LIB_A) $(LDLIBS)

# Examples and benchmarks compile and link in one step; their .d is $@.d.
$(BUILD)/examples/%: examples/%.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(COMPILE) $(DEPFLAGS) -MF $@.d -MT $@ $(AG_LDFLAGS) $(LDFLAGS) -o $@ $< $(LIB_A) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(COMPILE) $(DEPFLAGS) -MF $@.d -MT $@ $(AG_LDFLAGS) $(LDFLAGS) -o $@ $< $(LIB_A) $(LDLIBS)

$(TESTBIN): $(TEST_OBJS) $(LIB_A)
	$(LINK) -o $@ $(TEST_OBJS) $(LIB_A) $(LDLIBS) -lcriterion $(shell pkg-config --libs liblzma)

examples: $(EXAMPLES)

# attngeom-mpi (docs/scaling.md): the CLI's objects but main.o, and src/mpi/,
# against Open MPI (pkg-config ompi-c). MPI stays out of the library and
# of attngeom: src/mpi/ gives the library an ag_run_dist (attngeom/run.h)
# and runs the commands through cli_command (src/cli/driver.h).
MPI_PKGS  := ompi-c
MPI_CLI   := $(BUILD)/attngeom-mpi
MPI_SRCS  := $(wildcard src/mpi/*.c)
MPI_OBJS  := $(MPI_SRCS:%.c=$(BUILD)/%.o)
HAVE_MPI   = $(shell pkg-config --exists $(MPI_PKGS) 2>/dev/null && echo 1)
$(MPI_OBJS): AG_CFLAGS += $(shell pkg-config --cflags $(MPI_PKGS) 2>/dev/null)
$(MPI_CLI): $(filter-out $(BUILD)/src/cli/main.o,$(CLI_OBJS)) $(MPI_OBJS) $(LIB_A)
	$(LINK) -o $@ $(filter %.o,$^) $(LIB_A) $(LDLIBS) $(shell pkg-config --libs $(MPI_PKGS))

# Dependencies. Each output's .d (written by the compiler, DEPFLAGS) lists the
# headers it includes, so touching a header rebuilds exactly its includers.
# An output that exists without its .d (a build/ from before -MMD, a deleted
# .d) is rebuilt once (FORCE), as its headers are unknown. (Not by making the
# .d a prerequisite: clang writes it after the object, which would then never
# be up to date.)
DEPFILES := $(patsubst %.o,%.d,$(LIB_OBJS) $(CLI_OBJS) $(TEST_OBJS) $(MPI_OBJS)) \
            $(EXAMPLES:=.d) $(BENCHES:=.d)
include $(wildcard $(DEPFILES))
NO_DEPFILE := $(foreach d,$(DEPFILES),$(if $(wildcard $(d)),,$(wildcard $(d:.d=.o) $(d:.d=))))
$(NO_DEPFILE): FORCE
.PHONY: FORCE
FORCE:

mpi: deps
	@pkg-config --exists $(MPI_PKGS) || { echo "make mpi: Open MPI not found (pkg-config $(MPI_PKGS)); scripts/install-deps.sh installs it" >&2; exit 1; }
	$(MAKE) $(MPI_CLI)

# make install / uninstall (scripts/install.sh; docs/library.md, "Install").
PREFIX       ?= /usr/local
BINDIR       ?= $(PREFIX)/bin
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
MANDIR       ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
PYTHONDIR    ?=
LDCONFIG     ?= ldconfig
# attngeom.pc: the dependencies whose .pc files are complete go to
# Requires.private; LAPACKE and OpenBLAS are written out in Libs.private in
# static link order because Debian 12's openblas.pc omits libquadmath, which
# its libgfortran.a needs (pkg-config puts Libs.private before the libraries
# of Requires.private, so nothing could be appended after them). Shared
# linking uses neither: libattngeom.so records its own dependencies.
# sndfile is left out too: Debian 12 ships no static libsndfile (nor
# libmp3lame.a, which its .pc names), so `-static` could not link anything;
# a static program that leaves attngeom/audio.h alone never needs it, one
# that calls it cannot be static (docs/library.md, docs/audio.md).
# igraph likewise: its .pc's Libs.private names glpk, arpack and plfit, of
# which Debian 12 ships no static archives; only attention flow
# (analysis/flow.c, attngeom/layers.h) needs it.
PC_REQUIRES     := $(filter-out lapacke openblas sndfile igraph,$(PKGS))
PC_LIBS_PRIVATE  = $(shell pkg-config --libs-only-L openblas 2>/dev/null) -llapacke -lopenblas \
                   -lgfortran -lquadmath -lm -pthread
INSTALL_ENV = DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" BINDIR="$(BINDIR)" LIBDIR="$(LIBDIR)" \
    INCLUDEDIR="$(INCLUDEDIR)" MANDIR="$(MANDIR)" PKGCONFIGDIR="$(PKGCONFIGDIR)" \
    PYTHONDIR="$(PYTHONDIR)" BUILD="$(BUILD)" VERSION="$(VERSION)" SONAME="$(SONAME)" \
    PC_REQUIRES="$(PC_REQUIRES)" PC_LIBS_PRIVATE="$(strip $(PC_LIBS_PRIVATE))" LDCONFIG="$(LDCONFIG)"

install: $(CLI) $(LIB_SO_FILE) $(LIB_A) $(if $(HAVE_MPI),$(MPI_CLI))
	@echo "install: into $(DESTDIR)$(PREFIX)"
	@$(INSTALL_ENV) sh scripts/install.sh install

uninstall:
	@echo "uninstall: from $(DESTDIR)$(PREFIX)"
	@$(INSTALL_ENV) sh scripts/install.sh uninstall

# The README's test command. Every stage must pass.
test: deps
	$(MAKE) build $(TESTBIN) $(if $(HAVE_MPI),$(MPI_CLI))
	$(MAKE) arch-test unit cli-test ref-test python-test valgrind

# The tokenizer families of tests/data/tokenizers/, written out in full
# (their vocabularies are stored once, compressed) for the unit tests.
TOK_FAMILIES := $(BUILD)/tokenizers
$(TOK_FAMILIES)/.stamp: tools/tokenize_ref/materialize.py $(shell find tests/data/tokenizers -type f 2>/dev/null)
	rm -rf $(TOK_FAMILIES)
	python3 tools/tokenize_ref/materialize.py $(TOK_FAMILIES) >/dev/null
	touch $@

unit: $(TESTBIN) $(TOK_FAMILIES)/.stamp
	AG_TEST_TOKENIZERS=$(TOK_FAMILIES) $(TESTBIN) --jobs 2

# Every command's option list in the man page and docs/cli.md, made from the
# option tables its parser and --help use (src/cli/options.c, attngeom
# options-doc); tests/cli/help.sh fails when the committed files differ.
docs-options: $(CLI)
	/usr/bin/python3 -B scripts/options_docs.py $(CLI) docs/man/attngeom.1 docs/cli.md

# The structure checks (tests/arch/, tests/README.md): no -Isrc outside the
# library and the tests, no dependency cycle across folders (the objects of
# the build give the symbol edges), no per-head, per-layer or selection loop
# outside src/run/. A few seconds; their baselines only shrink.
arch-test: $(CLI)
	sh tests/arch/isrc.sh
	/usr/bin/python3 -B tests/arch/cycles.py $(BUILD)
	sh tests/arch/loops.sh

cli-test: $(CLI) $(if $(HAVE_MPI),$(MPI_CLI))
	@for t in tests/cli/*.sh; do [ $$t = tests/cli/lib.sh ] && continue; \
	    echo "== $$t"; sh $$t $(CLI) || exit 1; done

ref-test: $(CLI) $(LIB_SO) $(BUILD)/examples/image_pixels
	/usr/bin/python3 -B tests/ref/check_matrix.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_models.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_archs.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_weights.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_curvature.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_axioms.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_cross.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_stability.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_values.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_similarity.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_alti.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_flow.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_scores.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_normalizers.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_lens.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_npy_header.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_tokenizers.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_vocab.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_clip_tokenizer.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_aggregate.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_whisper_features.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_encoders.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_seq2seq.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_media_cli.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_image.py $(BUILD)/examples/image_pixels

# The Python package (python/attngeom, docs/python.md) against the library
# and the CLI just built: Debian's python3-pytest and python3-pandas; torch optional.
python-test: $(CLI) $(LIB_SO)
	ATTNGEOM_LIB=$(CURDIR)/$(LIB_SO) ATTNGEOM_CLI=$(CURDIR)/$(CLI) $(PY_SAN_ENV) \
	    /usr/bin/python3 -B -m pytest -q -p no:cacheprovider tests/python

valgrind: $(CLI)
	sh tests/valgrind.sh $(CLI)

# ASan + UBSan over everything `make test` runs but valgrind (which cannot run
# ASan binaries), built in $(SAN_BUILD)/ so build/ stays a normal build.
# AG_SANITIZE makes the tests that cannot run under ASan (ulimit -v) skip.
# Leaks are errors. A report exits 86 (ASan, LSan) or 87 (UBSan), never the
# CLI's own statuses 0-3, so no test takes it for an expected failure; ASan
# and LSan reports also go to $(SAN_BUILD)/reports/, and any file there fails
# the run even if a test ignored the exit status (Criterion does, for the
# process of a test that passed: a leak there shows only in the file; UBSan
# writes to stderr and its exit status fails the test). ASAN_OPTIONS and
# UBSAN_OPTIONS from the environment are appended.
SAN_BUILD := build-san
SAN_LOG   := $(CURDIR)/$(SAN_BUILD)/reports
SAN_ENV   := AG_SANITIZE=1 \
    ASAN_OPTIONS="detect_leaks=1:exitcode=86:log_path=$(SAN_LOG)/asan:$$ASAN_OPTIONS" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=87:$$UBSAN_OPTIONS"
# The Python tests load $(SAN_BUILD)/libattngeom.so into an uninstrumented
# python3: the ASan runtime must come first (LD_PRELOAD, gcc's libasan and
# libubsan, which the library needs). Leaks are not looked for in that
# process (CPython keeps memory to the end by design), every other report is
# (they go to $(SAN_LOG)/ and fail the run as above; UBSan halts pytest).
ifeq ($(SANITIZE),1)
SAN_RUNTIMES = $(foreach r,libasan.so libubsan.so,$(shell $(CC) -print-file-name=$(r)))
PY_SAN_ENV   = LD_PRELOAD="$(SAN_RUNTIMES)" ASAN_OPTIONS="$$ASAN_OPTIONS:detect_leaks=0"
endif
sanitize: deps
	$(MAKE) BUILD=$(SAN_BUILD) SANITIZE=1 build $(SAN_BUILD)/tests/run_tests
	rm -rf $(SAN_LOG) && mkdir -p $(SAN_LOG)
	$(SAN_ENV) $(MAKE) BUILD=$(SAN_BUILD) SANITIZE=1 unit cli-test ref-test python-test; st=$$?; \
	if [ -n "$$(ls $(SAN_LOG))" ]; then cat $(SAN_LOG)/*; \
	    echo "sanitize: sanitizer reports (above, in $(SAN_LOG)/)"; exit 1; fi; \
	exit $$st

# The adversarial runner (tests/adversarial/README.md): hostile inputs of every
# class of issue 24 and of the earlier reliability work, against the plain
# build and the sanitizer one (the same ASan/UBSan build as `make sanitize`;
# SAN_ENV's options, each case's reports sent to a folder of its own, which
# must stay empty; the Python cases run with the sanitizer runtime preloaded
# and leak checking off, as Python itself never frees everything). Both runs
# always happen; the target fails when either table holds a failure.
ADV_FILTER ?=
ADV_ARGS = $(if $(ADV_FILTER),--filter '$(ADV_FILTER)')
adversarial: deps
	$(MAKE) build
	$(MAKE) BUILD=$(SAN_BUILD) SANITIZE=1 build
	@st=0; /usr/bin/python3 -B tests/adversarial/run.py --build $(BUILD) $(ADV_ARGS) || st=1; \
	rm -rf $(SAN_LOG) && mkdir -p $(SAN_LOG); \
	$(SAN_ENV) /usr/bin/python3 -B tests/adversarial/run.py --build $(SAN_BUILD) $(ADV_ARGS) || st=1; \
	if [ -n "$$(ls $(SAN_LOG))" ]; then cat $(SAN_LOG)/*; \
	    echo "adversarial: sanitizer reports outside the cases' folders (above, in $(SAN_LOG)/)"; st=1; fi; \
	exit $$st

# The README's main command: tokenize a built-in text with the embedded model
# (models/tiny-gpt2), run its forward pass, print every head's metrics.
DEMO_TEXT := In the beginning God created the heaven and the earth.
demo: deps
	$(MAKE) $(CLI)
	$(CLI) analyze models/tiny-gpt2 --text "$(DEMO_TEXT)"

# bench/*.c, then bench/peers.py: attngeom against numpy/scipy and PyTorch
# (Debian packages, scripts/install-bench-deps.sh; `make test` needs neither),
# whole processes, alternating, BENCH_REPS runs each (default 3), one table
# (docs/performance.md).
bench: deps
	@sh scripts/install-bench-deps.sh
	$(MAKE) $(BENCHES) $(CLI)
	@for b in $(BENCHES); do $$b || exit 1; done
	/usr/bin/python3 -B bench/lens.py $(CLI)
	/usr/bin/python3 -B bench/peers.py $(CLI)
	@if command -v mpirun > /dev/null && command -v mpicc > /dev/null; then \
	    $(MAKE) mpi && sh bench/mpi_speedup.sh $(CLI) $(BUILD)/attngeom-mpi; \
	else echo "bench: mpirun not installed, attngeom-mpi's speed-up not measured"; fi
	@if [ "$(BENCH_8B)" = 1 ]; then $(MAKE) bench-8b; fi

# LLaMA-3-8B's shape in BF16 (16 GB written to TMPDIR or /tmp, removed at the
# end): analyze's peak RSS (limit 17 GB) and tokens/s beside the sgemm floor.
# Minutes and 16 GB of disk, so `make bench` runs it only with BENCH_8B=1.
bench-8b: deps
	$(MAKE) $(BUILD)/bench/bench_model_memory $(CLI)
	$(BUILD)/bench/bench_model_memory 8b $(CLI)

# Fuzzing (tests/fuzz/README.md): clang + ASan/UBSan builds of the harnesses,
# each run for FUZZ_SECONDS, two at a time. Installs clang when missing.
# run.sh adds CPPFLAGS, CFLAGS and LDFLAGS (exported by make) to its own.
FUZZ_SECONDS ?= 60
fuzz:
	sh tests/fuzz/run.sh $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) $(SAN_BUILD)
