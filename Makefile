# Thin wrapper around CMake. `make run` starts the demo, `make test` runs
# every test. Build trees live under build/.
CMAKE ?= cmake
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD := build/release
SAN := build/sanitize
FUZZ := build/fuzz
FUZZ_LONG := build/fuzz-long
PREFIX ?= /usr/local


.PHONY: inspect
.PHONY: all help build run samples test sanitize tsan coverage valgrind bench bench-docs fuzz \
	fuzz-long dist install clean deps

all: build

help:
	@echo "make              build the library, the demo and the samples (release, $(BUILD));"
	@echo "                  also make all, make build"
	@echo "make deps         install cmocka and python3, the test dependencies (as root)"
	@echo "make run          build and run the demo (ARGS='--help' lists its options)"
	@echo "make samples      build and run the nine samples in examples/"
	@echo "make inspect      build and run the inspector demo (needs libcivetweb-dev, libcjson-dev)"
	@echo "make test         build and run every test (installs cmocka as root)"
	@echo "make sanitize     every test under ASan + UBSan, with TES_DEBUG on"
	@echo "make tsan         the threaded tests under ThreadSanitizer"
	@echo "make coverage     line and branch coverage of src/ over the tests (gcovr)"
	@echo "make valgrind     the test programs under valgrind memcheck"
	@echo "make bench        the benchmarks (ARGS='--filter W4' runs one workload)"
	@echo "make bench-docs   copy build/bench results into docs/bench and the tables of docs/bench.md and the guide"
	@echo "make fuzz         libFuzzer, 60 s per target (needs clang)"
	@echo "make fuzz-long    the differential fuzzer at length (FUZZ_LONG_OPS=...)"
	@echo "make dist         the single-file build: dist/tessera.h and dist/tessera.c"
	@echo "make install      install to PREFIX (default $(PREFIX))"
	@echo "make clean        remove build/ and dist/"
	@echo "make help         this list"

build:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DTES_BUILD_TESTS=OFF
	$(CMAKE) --build $(BUILD) -j $(JOBS)

run:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DTES_BUILD_TESTS=OFF
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target demo
	./$(BUILD)/examples/demo $(ARGS)

SAMPLES := sample_hello sample_storage sample_stable sample_prefab sample_defer sample_snapshot sample_systems sample_hierarchy sample_changes
samples:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DTES_BUILD_TESTS=OFF
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target $(SAMPLES)
	@for s in $(SAMPLES); do echo "== $$s"; ./$(BUILD)/examples/$$s || exit 1; done

# The inspector demo: 100k entities at 60 fps with the inspector on
# 127.0.0.1; it prints the URL to open (ARGS='--help' lists its options).
inspect:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DTES_BUILD_TESTS=OFF
	@grep -q '^TES_HAVE_INSPECT_BUILT:INTERNAL=ON' $(BUILD)/CMakeCache.txt || { \
	  echo "make inspect needs civetweb and cJSON: apt-get install libcivetweb-dev libcjson-dev"; exit 1; }
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target inspect_demo
	./$(BUILD)/inspect/inspect_demo $(ARGS)

# The single-file build (tools/amalgamate.sh; also written to
# $(BUILD)/dist by every build). dist/ is not kept in git.
dist:
	sh tools/amalgamate.sh . dist
	@echo "wrote dist/tessera.h and dist/tessera.c"

# $(call need,TEST,PACKAGE): when the shell test TEST fails, installs the
# Debian package PACKAGE as root, and otherwise says exactly what to run.
define need
	@if ! { $(1); }; then \
	  if [ "$$(id -u)" = "0" ]; then \
	    echo "installing $(2)"; \
	    (apt-get install -y $(2) || (apt-get update && apt-get install -y $(2))); \
	  else \
	    echo "$(2) is missing: run 'sudo apt-get install $(2)' and retry"; exit 1; \
	  fi; \
	fi
endef

# cmocka and python3 are the test dependencies (python3 runs the layers
# check, tools/layers.py, and the JSON round trip). As root we install
# them; otherwise we say exactly what to run.
deps:
	$(call need,[ -f /usr/include/cmocka.h ] || [ -f /usr/local/include/cmocka.h ],libcmocka-dev)
	$(call need,command -v python3 >/dev/null 2>&1,python3)

# FUZZ_RANGE_OPS: operations over the fuzzer's commit-derived seed range
# (ctest fuzz_commit_range, 16 seeds; about 15 s in Debug).
FUZZ_RANGE_OPS ?= 500000
TEST := build/test
TEST_CONFIG = -DCMAKE_BUILD_TYPE=Debug -DTES_BUILD_TESTS=ON -DTES_FUZZ_RANGE_OPS=$(FUZZ_RANGE_OPS)
test: deps
	$(CMAKE) -S . -B $(TEST) $(TEST_CONFIG)
	$(CMAKE) --build $(TEST) -j $(JOBS)
	cd $(TEST) && ctest --output-on-failure -j $(JOBS)

# The suite with assertions, ASan and UBSan on (and TES_DEBUG's fresh-memory
# moves): the differential fuzzer runs here too, over its fixed seeds and
# over the commit-derived range (ctest fuzz_commit_range), with SAN_FUZZ_OPS
# operations for the range and SAN_FIXED_OPS for the fixed seeds. A
# sanitized operation costs about five plain ones, so this build runs a
# fraction of make test's operations (make test runs the full counts): the
# sanitizers look for memory and undefined-behaviour errors, which the
# same code paths show after fewer operations. SAN_CHANGES_SEEDS is the
# change-detection fuzzer's seed count here (64 in make test).
SAN_FUZZ_OPS ?= 80000
SAN_FIXED_OPS ?= 60000
SAN_CHANGES_SEEDS ?= 8
SAN_FAULT_STRIDE ?= 4
sanitize: deps
	$(CMAKE) -S . -B $(SAN) -DCMAKE_BUILD_TYPE=Debug -DTES_SANITIZE=ON -DTES_DEBUG=ON -DTES_BUILD_BENCH=OFF -DTES_DEBUG_LIBRARY=OFF -DTES_FUZZ_RANGE_OPS=$(SAN_FUZZ_OPS) -DTES_FUZZ_FIXED_OPS=$(SAN_FIXED_OPS) -DTES_FUZZ_CHANGES_SEEDS=$(SAN_CHANGES_SEEDS) -DTES_FAULT_STRIDE=$(SAN_FAULT_STRIDE)
	$(CMAKE) --build $(SAN) -j $(JOBS)
	cd $(SAN) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

# ThreadSanitizer over the tests that use threads (systems on worker
# threads, and a system with a change filter: test_changes; concurrent reads
# and iteration: threads_read, two threads
# iterating and reading one world; the demo on 3 threads): any report
# fails the target. CI runs it.
# Only the programs those tests run are built (TSAN_TARGETS; the other
# test programs would take most of the build and never run here).
TSAN := build/tsan
# The inspector's hostile test too when the inspector is built (its server
# threads hand requests to the application's thread).
TSAN_INSPECT := $(shell [ -f /usr/include/civetweb.h ] && [ -f /usr/include/cjson/cJSON.h ] && echo inspect_demo)
TSAN_TESTS ?= test_system|threads|test_changes|^test_hierarchy$$$(if $(TSAN_INSPECT),|inspect_hostile)
TSAN_TARGETS ?= test_system test_system_calls test_system_stats test_changes test_hierarchy threads_read threads_last_error demo $(TSAN_INSPECT)
tsan: deps
	$(CMAKE) -S . -B $(TSAN) -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g" -DTES_TSAN=ON -DTES_BUILD_BENCH=OFF -DTES_DEBUG_LIBRARY=OFF -DTES_BUILD_EXAMPLES=ON
	$(CMAKE) --build $(TSAN) -j $(JOBS) --target $(TSAN_TARGETS)
	cd $(TSAN) && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/inspect/tsan.supp" ctest --output-on-failure -R '$(TSAN_TESTS)'

# Line and branch coverage of src/ over the whole ctest suite (gcovr). The
# suite includes fault_alloc_sites, which reports how many allocation call
# sites the fault sweep reaches with a failing allocation (its own run, so
# the suite's counters stay whole); the report is printed at the end.
# (install_consumer is not registered in coverage builds.)
COV := build/coverage
GCOVR_ARGS = -r . --object-directory $(COV) --filter src/ --sort-percentage $(COV)
coverage: deps
	$(call need,command -v gcovr >/dev/null 2>&1,gcovr)
	$(CMAKE) -S . -B $(COV) -DCMAKE_BUILD_TYPE=Debug -DTES_COVERAGE=ON -DTES_BUILD_BENCH=OFF -DTES_DEBUG_LIBRARY=OFF -DTES_BUILD_EXAMPLES=OFF
	$(CMAKE) --build $(COV) -j $(JOBS)
	find $(COV) -name '*.gcda' -delete
	@st=0; (cd $(COV) && ctest --output-on-failure) || st=$$?; \
	gcovr $(GCOVR_ARGS) | tee $(COV)/coverage_lines.txt; \
	{ gcovr $(GCOVR_ARGS) --txt-metric branch 2>/dev/null || gcovr $(GCOVR_ARGS) --branches; } | tee $(COV)/coverage_branches.txt; \
	gcovr $(GCOVR_ARGS) --print-summary -o /dev/null; \
	cat $(COV)/alloc_sites.txt 2>/dev/null || true; \
	if [ $$st -ne 0 ]; then echo "coverage: some tests failed (see above); the figures cover what ran"; exit $$st; fi

# The test suite under valgrind memcheck (Debug, no sanitizers): every test
# program built under tests/ (unit tests, API misuse, fault sweep), the fuzz
# runner with VG_OPS operations instead of the suite's 600,000, and the fault sweep
# failing every VG_FAULT_STRIDEth allocation (make test fails each one).
# Fails on any error or definite/indirect leak; each program's log is left next to it
# ($(VG)/tests/NAME.valgrind.log). JOBS programs run at a time
# (tools/valgrind_suite.sh): the fault sweep takes minutes, the rest run
# beside it. The programs are those of `make test`, from its build tree and
# configuration (memcheck needs no instrumented build), so after `make test`
# nothing is rebuilt.
VG := $(TEST)
VG_OPS ?= 100000
VG_FAULT_STRIDE ?= 3
# Programs to leave out (names, space-separated): CI leaves out the fault
# sweep, which make sanitize runs failing every allocation.
VG_SKIP ?=
VALGRIND_FLAGS := --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect --quiet
valgrind: deps
	@command -v valgrind >/dev/null || { echo "make valgrind needs valgrind (apt-get install valgrind)"; exit 1; }
	$(CMAKE) -S . -B $(VG) $(TEST_CONFIG)
	$(CMAKE) --build $(VG) -j $(JOBS)
	VG_SKIP='$(VG_SKIP)' sh tools/valgrind_suite.sh $(VG)/tests $(VG_OPS) $(VG_FAULT_STRIDE) $(JOBS) $(VALGRIND_FLAGS)

# glibc: keep freed memory in the process so warm runs do not pay for fresh
# pages (see docs/bench.md). Besides the table on
# stdout, the results go to $(BENCH_OUT)/bench_results.csv (and
# bench_results_memory.csv), and, when gnuplot is installed, to the chart
# $(BENCH_OUT)/bench_results.svg (bench/plot.gp). ARGS passes driver flags,
# e.g. make bench ARGS='--filter W4 --runs 3'.
BENCH_OUT := build/bench
bench:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DTES_BUILD_TESTS=OFF
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target tessera_bench
	mkdir -p $(BENCH_OUT)
	MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=4294967296 MALLOC_TOP_PAD_=268435456 ./$(BUILD)/bench/tessera_bench --csv $(BENCH_OUT)/bench_results.csv $(ARGS)
	@echo "wrote $(BENCH_OUT)/bench_results.csv and $(BENCH_OUT)/bench_results_memory.csv"
	@if command -v gnuplot >/dev/null 2>&1; then \
	  rm -f $(BENCH_OUT)/bench_results.svg; \
	  gnuplot -e "csv='$(BENCH_OUT)/bench_results.csv'; out='$(BENCH_OUT)/bench_results.svg'; label='make bench, $$(date -u +%Y-%m-%d)'" bench/plot.gp; \
	  if [ -s $(BENCH_OUT)/bench_results.svg ]; then echo "wrote $(BENCH_OUT)/bench_results.svg"; \
	  else echo "chart not drawn (see the gnuplot message above)"; fi; \
	else \
	  echo "chart skipped: gnuplot is missing (apt-get install gnuplot-nox to get $(BENCH_OUT)/bench_results.svg)"; \
	fi

# The benchmark figures quoted in docs/bench.md and docs/guide.md come from
# docs/bench/ only: this copies the last `make bench` results there and
# rewrites both documents' tables (tools/bench_figures.sh).
bench-docs:
	@[ -f $(BENCH_OUT)/bench_results.csv ] || { echo "run make bench first"; exit 1; }
	sh tools/bench_figures.sh --from $(BENCH_OUT)

# libFuzzer starts from the seed corpus tests/fuzz/corpus (read only); what
# it finds goes to $(FUZZ)/corpus, a crash or divergence to $(FUZZ)/crash-*.
# Then the snapshot loader target, from tests/fuzz/snapshot_corpus, into
# $(FUZZ)/snapshot_corpus (crashes: $(FUZZ)/snapshot-crash-*). Then, when
# the inspector is built (civetweb and cJSON installed), its routes under
# hostile requests, from tests/inspect/corpus into $(FUZZ)/inspect_corpus
# (crashes: $(FUZZ)/inspect-crash-*; replay one with
# inspect_corpus_replay FILE from a make test tree).
FUZZ_TIME ?= 60
fuzz: deps
	@command -v clang >/dev/null || { echo "make fuzz needs clang (apt-get install clang)"; exit 1; }
	CC=clang $(CMAKE) -S . -B $(FUZZ) -DCMAKE_BUILD_TYPE=Debug -DTES_LIBFUZZER=ON -DTES_BUILD_BENCH=OFF -DTES_DEBUG_LIBRARY=OFF -DTES_BUILD_EXAMPLES=OFF
	$(CMAKE) --build $(FUZZ) -j $(JOBS) --target fuzz_libfuzzer fuzz_snapshot_load
	mkdir -p $(FUZZ)/corpus $(FUZZ)/snapshot_corpus
	./$(FUZZ)/tests/fuzz_libfuzzer -max_total_time=$(FUZZ_TIME) -artifact_prefix=$(FUZZ)/ $(FUZZ)/corpus tests/fuzz/corpus
	./$(FUZZ)/tests/fuzz_snapshot_load -max_total_time=$(FUZZ_TIME) -artifact_prefix=$(FUZZ)/snapshot- $(FUZZ)/snapshot_corpus tests/fuzz/snapshot_corpus
	@if grep -q '^TES_HAVE_INSPECT_BUILT:INTERNAL=ON' $(FUZZ)/CMakeCache.txt; then \
	  $(CMAKE) --build $(FUZZ) -j $(JOBS) --target fuzz_inspect_api && \
	  mkdir -p $(FUZZ)/inspect_corpus && \
	  ./$(FUZZ)/inspect/fuzz_inspect_api -max_total_time=$(FUZZ_TIME) -dict=tests/inspect/fuzz_inspect_api.dict -artifact_prefix=$(FUZZ)/inspect- $(FUZZ)/inspect_corpus tests/inspect/corpus; \
	else echo "fuzz: the inspector's target skipped (install libcivetweb-dev and libcjson-dev)"; fi

# The differential fuzzer at length: fuzz_runner optimised (-O2) with
# assertions kept, FUZZ_LONG_OPS ops spread evenly over FUZZ_LONG_SEEDS
# consecutive seeds from FUZZ_LONG_FIRST, in FUZZ_LONG_JOBS processes on
# disjoint seed ranges. Each process logs to $(FUZZ_LONG)/fuzz-long.N.log;
# a divergence prints the fuzz_runner --seed line that replays it (add it to
# tests/fuzz/regress_seeds.txt). Fails on any divergence or crash.
# FUZZ_LONG_FIRST=4611686018427387905 (bit 62 set) runs the cells variant.
FUZZ_LONG_OPS ?= 100000000
FUZZ_LONG_SEEDS ?= 1000
FUZZ_LONG_FIRST ?= 1001
FUZZ_LONG_JOBS ?= $(JOBS)
fuzz-long:
	$(CMAKE) -S . -B $(FUZZ_LONG) -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g -UNDEBUG" -DTES_BUILD_TESTS=ON -DTES_BUILD_BENCH=OFF -DTES_DEBUG_LIBRARY=OFF -DTES_BUILD_EXAMPLES=OFF
	$(CMAKE) --build $(FUZZ_LONG) -j $(JOBS) --target fuzz_runner
	@ops=$(FUZZ_LONG_OPS); seeds=$(FUZZ_LONG_SEEDS); first=$(FUZZ_LONG_FIRST); jobs=$(FUZZ_LONG_JOBS); \
	[ "$$jobs" -ge 1 ] || jobs=1; [ "$$jobs" -le "$$seeds" ] || jobs=$$seeds; \
	rm -f $(FUZZ_LONG)/fuzz-long.*.log; start=$$(date +%s.%N); pids=""; j=0; \
	while [ $$j -lt $$jobs ]; do \
	  a=$$((j * seeds / jobs)); b=$$(((j + 1) * seeds / jobs)); \
	  n=$$((ops * b / seeds - ops * a / seeds)); \
	  echo "fuzz-long: process $$j: seeds $$((first + a))..$$((first + b - 1)), $$n ops"; \
	  ./$(FUZZ_LONG)/tests/fuzz_runner --ops $$n --seeds $$((b - a)) --first-seed $$((first + a)) \
	    > $(FUZZ_LONG)/fuzz-long.$$j.log 2>&1 & pids="$$pids $$!"; \
	  j=$$((j + 1)); \
	done; \
	j=0; crashed=0; for p in $$pids; do \
	  if ! wait $$p; then \
	    if ! grep -q '^fuzz: [0-9]* ops, [0-9]* seeds, [1-9]' $(FUZZ_LONG)/fuzz-long.$$j.log; then \
	      echo "fuzz-long: process $$j crashed (see $(FUZZ_LONG)/fuzz-long.$$j.log):"; \
	      tail -n 20 $(FUZZ_LONG)/fuzz-long.$$j.log; crashed=$$((crashed + 1)); \
	    fi; \
	  fi; \
	  grep -h -A1 'DIVERGENCE' $(FUZZ_LONG)/fuzz-long.$$j.log || true; \
	  j=$$((j + 1)); \
	done; \
	end=$$(date +%s.%N); \
	cat $(FUZZ_LONG)/fuzz-long.*.log | awk -v crashed=$$crashed -v t0=$$start -v t1=$$end \
	  '/^fuzz: [0-9]+ ops, [0-9]+ seeds, [0-9]+ divergences$$/ { n += $$2; s += $$4; d += $$6 } \
	   END { d += crashed; t = t1 - t0; \
	         printf "fuzz-long: %.1f s, %.0f ops/s\n", t, (t > 0 ? n / t : 0); \
	         printf "fuzz-long: %.0f ops, %.0f seeds, %.0f divergences\n", n, s, d; exit d ? 1 : 0 }'

install: build
	$(CMAKE) --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf build dist
