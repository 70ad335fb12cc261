# Thin wrapper around CMake. `make run` starts the demo, `make test` runs
# every test. Build trees live under build/.
CMAKE ?= cmake
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD := build/release
SAN := build/sanitize
FUZZ := build/fuzz
PREFIX ?= /usr/local

.PHONY: all build run test sanitize bench fuzz install clean deps

all: build

build:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DTES_BUILD_TESTS=OFF
	$(CMAKE) --build $(BUILD) -j $(JOBS)

run:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DTES_BUILD_TESTS=OFF
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target demo
	./$(BUILD)/examples/demo $(ARGS)

# cmocka is the one test dependency. As root we install it; otherwise we say
# exactly what to run.
deps:
	@if [ ! -f /usr/include/cmocka.h ] && [ ! -f /usr/local/include/cmocka.h ]; then \
	  if [ "$$(id -u)" = "0" ]; then \
	    echo "installing libcmocka-dev"; \
	    (apt-get install -y libcmocka-dev || (apt-get update && apt-get install -y libcmocka-dev)); \
	  else \
	    echo "cmocka is missing: run 'sudo apt-get install libcmocka-dev' and retry"; exit 1; \
	  fi; \
	fi

test: deps
	$(CMAKE) -S . -B build/test -DCMAKE_BUILD_TYPE=Debug -DTES_BUILD_TESTS=ON
	$(CMAKE) --build build/test -j $(JOBS)
	cd build/test && ctest --output-on-failure

sanitize: deps
	$(CMAKE) -S . -B $(SAN) -DCMAKE_BUILD_TYPE=Debug -DTES_SANITIZE=ON -DTES_BUILD_BENCH=OFF
	$(CMAKE) --build $(SAN) -j $(JOBS)
	cd $(SAN) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure

# glibc: keep freed memory in the process so warm runs do not pay for fresh
# pages (see the Benchmarks section in README.md). Besides the table on
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

fuzz: deps
	@command -v clang >/dev/null || { echo "make fuzz needs clang (apt-get install clang)"; exit 1; }
	CC=clang $(CMAKE) -S . -B $(FUZZ) -DCMAKE_BUILD_TYPE=Debug -DTES_LIBFUZZER=ON -DTES_BUILD_BENCH=OFF -DTES_BUILD_EXAMPLES=OFF
	$(CMAKE) --build $(FUZZ) -j $(JOBS) --target fuzz_libfuzzer
	./$(FUZZ)/tests/fuzz_libfuzzer -max_total_time=60

install: build
	$(CMAKE) --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf build
