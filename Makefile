# attngeom — build, test, demo, bench.
#   make          installs missing packages, builds the library
#                 (build/libattngeom.a, .so), CLI (build/attngeom) and examples
#   make test     installs missing Debian packages, builds, runs every test
#   make demo     installs missing packages, builds, runs the main job
#   make bench    benchmarks (speed and memory are measured here, never in tests)
#   make fuzz     libFuzzer harnesses of tests/fuzz/, FUZZ_SECONDS each (not in test)
#   make clean
# WERROR=1 turns warnings into errors (CI sets it).

CC      ?= cc
BUILD   := build
PKGS    := lapacke openblas gsl jansson libpcre2-8 libutf8proc
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes \
           -Wno-unused-parameter -fPIC -Iinclude -Isrc
ifeq ($(WERROR),1)
CFLAGS  += -Werror
endif
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
LDLIBS  = $(PKG_LIBS) -lm

LIB_SRCS  := $(wildcard src/*.c) $(wildcard src/tokenizer/*.c) $(wildcard analysis/*.c)
CLI_SRCS  := $(wildcard src/cli/*.c)
TEST_SRCS := $(wildcard tests/*.c)
EX_SRCS   := $(wildcard examples/*.c)
BENCH_SRCS:= $(wildcard bench/*.c)

LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/%.o)
CLI_OBJS  := $(CLI_SRCS:%.c=$(BUILD)/%.o)
TEST_OBJS := $(TEST_SRCS:%.c=$(BUILD)/%.o)
HEADERS   := $(wildcard include/*.h include/attngeom/*.h src/*.h src/tokenizer/*.h analysis/*.h src/cli/*.h tests/*.h)

LIB_A   := $(BUILD)/libattngeom.a
LIB_SO  := $(BUILD)/libattngeom.so
CLI     := $(BUILD)/attngeom
TESTBIN := $(BUILD)/tests/run_tests
EXAMPLES:= $(EX_SRCS:%.c=$(BUILD)/%)
BENCHES := $(BENCH_SRCS:%.c=$(BUILD)/%)

.PHONY: all build deps test unit cli-test ref-test valgrind demo bench examples fuzz clean

all: deps
	$(MAKE) build

# What `all` builds, without the package check.
build: $(LIB_A) $(LIB_SO) $(CLI) $(EXAMPLES)

deps:
	@sh scripts/install-deps.sh

$(BUILD)/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

$(LIB_A): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIB_SO): $(LIB_OBJS)
	$(CC) -shared -o $@ $^ $(LDLIBS)

$(CLI): $(CLI_OBJS) $(LIB_A)
	$(CC) -o $@ $(CLI_OBJS) $(LIB_A) $(LDLIBS)

$(BUILD)/examples/%: examples/%.c $(LIB_A) $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $< $(LIB_A) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(LIB_A) $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $< $(LIB_A) $(LDLIBS)

$(TESTBIN): $(TEST_OBJS) $(LIB_A)
	$(CC) -o $@ $(TEST_OBJS) $(LIB_A) $(LDLIBS) -lcriterion

examples: $(EXAMPLES)

# The README's test command. Every stage must pass.
test: deps
	$(MAKE) build $(TESTBIN)
	$(MAKE) unit cli-test ref-test valgrind

# The tokenizer families of tests/data/tokenizers/, written out in full
# (their vocabularies are stored once, compressed) for the unit tests.
TOK_FAMILIES := $(BUILD)/tokenizers
$(TOK_FAMILIES)/.stamp: tools/tokenize_ref/materialize.py $(shell find tests/data/tokenizers -type f 2>/dev/null)
	rm -rf $(TOK_FAMILIES)
	python3 tools/tokenize_ref/materialize.py $(TOK_FAMILIES) >/dev/null
	touch $@

unit: $(TESTBIN) $(TOK_FAMILIES)/.stamp
	AG_TEST_TOKENIZERS=$(TOK_FAMILIES) $(TESTBIN) --jobs 2

cli-test: $(CLI)
	@for t in tests/cli/*.sh; do echo "== $$t"; sh $$t $(CLI) || exit 1; done

ref-test: $(CLI) $(LIB_SO)
	/usr/bin/python3 -B tests/ref/check_matrix.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_models.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_weights.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_curvature.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_stability.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_npy_header.py $(CLI)
	/usr/bin/python3 -B tests/ref/check_tokenizers.py $(CLI)

valgrind: $(CLI)
	sh tests/valgrind.sh $(CLI)

# The README's main command: tokenize a built-in text with the embedded model
# (models/tiny-gpt2), run its forward pass, print every head's metrics.
DEMO_TEXT := In the beginning God created the heaven and the earth.
demo: deps
	$(MAKE) $(CLI)
	$(CLI) analyze models/tiny-gpt2 --text "$(DEMO_TEXT)"

bench: deps
	$(MAKE) $(BENCHES)
	@for b in $(BENCHES); do $$b || exit 1; done

# Fuzzing (tests/fuzz/README.md): clang + ASan/UBSan builds of the harnesses,
# each run for FUZZ_SECONDS, two at a time. Installs clang when missing.
FUZZ_SECONDS ?= 60
fuzz:
	sh tests/fuzz/run.sh $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD)
