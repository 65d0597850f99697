# Shoal on a fresh Debian 12 machine:
#   make run    installs what it needs, builds, and runs the main job
#   make test   installs what it needs, builds, and runs every test
PRESET ?= release
BUILD := build/$(PRESET)
SHOAL := $(BUILD)/src/cli/shoal

.PHONY: all deps configure build run sim test perf sanitize fuzz format format-check clean

# ccache hashes paths relative to the checkout, so that a clone in another
# folder (CI's) reuses what a build here compiled.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := true

all: build

deps:
	@./scripts/install-deps.sh

configure: deps
	@cmake --preset $(PRESET) > /dev/null

build: configure
	@cmake --build --preset $(PRESET)

# The main job: a local cluster (a server and 4 agents with 8 simulated H100
# GPUs each, on loopback) running a small demonstration workload, left up
# for exploring with the CLI and the dashboard until Ctrl-C. UP_FLAGS adds
# to it, e.g. UP_FLAGS="--nodes 8 --profile hgx-h200" or UP_FLAGS=--real.
UP_FLAGS ?=
run: build
	$(SHOAL) up --demo $(UP_FLAGS)

# The shipped Microsoft ITP trace replayed through the scheduler under six
# policies on a 128-GPU cluster.
sim: build
	$(SHOAL) sim --cluster examples/clusters/itp-16x8-a100.toml \
	  --trace data/traces/microsoft-itp-2021/raw/cluster01.csv \
	  --policy fifo,backfill,multifactor,las,gittins,oracle

# Every test, then the totals and each skipped test with its reason
# (scripts/test-summary.sh; with CI=true a skip without an allowed tag fails).
test: build
	@ctest --preset $(PRESET) -j 2 --output-junit $(CURDIR)/$(BUILD)/junit.xml; rc=$$?; \
	  ./scripts/test-summary.sh $(BUILD)/junit.xml || rc=1; exit $$rc

# The same tests under AddressSanitizer and UndefinedBehaviorSanitizer.
sanitize:
	@$(MAKE) --no-print-directory PRESET=asan-ubsan test

# The parsers of batch scripts and JSON job specs under libFuzzer (clang),
# each for FUZZ_SECONDS.
FUZZ_SECONDS ?= 60
fuzz: deps
	@./fuzz/run.sh $(FUZZ_SECONDS)

# C++ formatting as .clang-format says: format-check fails on any difference
# (CI runs it); format rewrites the files.
format-check: deps
	@./scripts/check-format.sh

format: deps
	@./scripts/check-format.sh --fix

perf: build
	@./perf/run.sh $(BUILD)

clean:
	rm -rf build
