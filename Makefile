# Shoal on a fresh Debian 12 machine:
#   make run    installs what it needs, builds, and runs the main job
#   make test   installs what it needs, builds, and runs every test
PRESET ?= release
BUILD := build/$(PRESET)
SHOAL := $(BUILD)/src/cli/shoal

.PHONY: all deps configure build run sim test perf bench sanitize tsan fuzz format format-check \
  function-length clean deb

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

# The tests of the threaded modules (server and net, state, agent, the node
# test's sampler) under ThreadSanitizer: any report fails its test
# (TSAN_OPTIONS in CMakePresets.json). This TSan cannot map its shadow memory
# with more than 28 bits of mmap randomisation ("unexpected memory mapping"),
# so on such kernels the build (gtest lists its cases by running the binary)
# and the tests run with randomisation off (setarch -R).
TSAN_TESTS := shoal_server_tests shoal_state_tests shoal_agent_tests shoal_acceptance_tests
TSAN_RUN = $(shell [ "$$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 0)" -gt 28 ] && \
  echo setarch $$(uname -m) -R)
tsan: deps
	@cmake --preset tsan > /dev/null
	@$(TSAN_RUN) cmake --build --preset tsan --target $(TSAN_TESTS)
	@$(TSAN_RUN) ctest --preset tsan -j 2 -R "^($$(echo $(TSAN_TESTS) | tr ' ' '|'))\." \
	  --output-junit $(CURDIR)/build/tsan/junit.xml; rc=$$?; \
	  ./scripts/test-summary.sh build/tsan/junit.xml || rc=1; exit $$rc

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

# No function in src/ over 150 lines (STYLE.md): fails listing those that are.
function-length: deps
	@./scripts/check-function-length.sh

perf: build
	@./perf/run.sh $(BUILD)

bench: perf

# The Debian package (cmake/ShoalPackage.cmake, docs/deploy.md): $(BUILD)/shoal_<version>_amd64.deb.
deb: build
	@cd $(BUILD) && cpack -G DEB

clean:
	rm -rf build
